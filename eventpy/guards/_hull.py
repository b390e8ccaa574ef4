"""Where an evolving predicate can hold over a stretch of time: interval arithmetic on the
restricted trees of `_exprs`, with the publication time ("time",) ranging over [t_lo, t_hi].

Paper 003 §IV-A: a broker forwards an *overestimating* version of an evolving subscription to
other brokers (and keeps the exact one for its own subscribers). For `price <= x0 + v * elapsed()`
the overestimate over a window of publication times is `price <= max of x0 + v * t over the
window`, which the summary a broker sends upstream can carry as an ordinary interval.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from ..runtime.model import Interval
from ._compile import FLIP
from ._exprs import TreeError, compile_tree, reads
from ._plan import _interval

Range = tuple[float, float]

ORDER_FLIP = {op: flipped for op, flipped in FLIP.items() if op != "!="}  # a bound is never !=


def evolving_bound(tree: Any, attrs: Sequence[str], timed: bool = True) -> tuple[str, str, Any] | None:
    """(attribute, operator as seen from it, the other side) for a predicate tree of the shape
    `a op E` or `E op a` where E reads the publication time and no attribute; ("near<" or
    "near<=", (E, W)) for `abs(a - E) < W` (or <=, or flipped) where E or W reads it; else None.
    `timed=False`: also where nothing reads the time (a game's `abs(x - px) < view` over
    parameters, which the matcher and the summaries can narrow as well)."""
    if not isinstance(tree, (tuple, list)) or len(tree) != 3 or tree[0] not in ORDER_FLIP:
        return None
    op, left, right = tree
    if _is_attr(left) and (reads(right, "time") or not timed) and not reads(right, "a"):
        return attrs[left[1]], op, right
    if _is_attr(right) and (reads(left, "time") or not timed) and not reads(left, "a"):
        return attrs[right[1]], ORDER_FLIP[op], left
    alone = _isolated(("-", left, right), timed)  # `x - v * elapsed() < w`, `x + 3 >= elapsed()`, ...
    if alone is not None:
        i, sign, e = alone
        return attrs[i], op if sign > 0 else ORDER_FLIP[op], e
    if op in (">", ">="):  # W > abs(a - E): as abs(a - E) < W
        op, left, right = ORDER_FLIP[op], right, left
    near = _near(left, timed)
    if op in ("<", "<=") and near is not None and not reads(right, "a") and (
            reads(near[1], "time") or reads(right, "time") or not timed):
        return attrs[near[0]], "near" + op, (near[1], right)  # abs(a - E) < W: a within W of E
    return None


def implied_bounds(tree: Any, attrs: Sequence[str]) -> list[tuple[str, str, Any]]:
    """The bounds a predicate puts on single attributes, for the matcher and the summaries to
    narrow by (never for the exact check, which stays the tree's): `evolving_bound`'s one, or for
    a distance `math.hypot(a - E, b - F, ...) < W` (or <=, or flipped: the circle a location
    service writes) one "near" bound per argument of the shape `a - E` (or `k * (a - E)`, `(a -
    E) / k` with k a constant: a unit), as |a - E| <= hypot(...) (a floating-point hypot is never
    below its largest argument), and for `max(A, B, ...) < W` (a box written as the larger of
    two distances) the bounds of each `A < W`. Without them such a guard left its coordinates
    open: every event of the type reached every broker with a subscriber."""
    one = evolving_bound(tree, attrs, timed=False)
    if one is not None:
        return [one]
    if not isinstance(tree, (tuple, list)) or len(tree) != 3 or tree[0] not in ORDER_FLIP:
        return []
    op, left, right = tree
    if op in (">", ">="):  # W > hypot(...): as hypot(...) < W
        op, left, right = ORDER_FLIP[op], right, left
    if op not in ("<", "<=") or reads(right, "a") or not (
            isinstance(left, (tuple, list)) and len(left) >= 3 and left[0] == "f"):
        return []
    found = []
    if left[1] == "max":
        for arg in left[2:]:
            found.extend(implied_bounds((op, arg, right), attrs))
    elif left[1] == "math.hypot":
        for arg in left[2:]:
            scale = 1.0
            if isinstance(arg, (tuple, list)) and len(arg) == 3 and arg[0] in ("*", "/"):
                k = arg[2] if _is_constant(arg[2]) else arg[1] if arg[0] == "*" and _is_constant(arg[1]) else None
                if k is None:
                    continue
                scale = abs(k[1]) if arg[0] == "*" else 1 / abs(k[1])
                arg = arg[1] if k is arg[2] else arg[2]
            near = _near(("f", "abs", arg), timed=False)
            if near is not None and 0 < scale < math.inf:
                w = right if scale == 1.0 else ("/", right, ("c", scale))
                found.append((attrs[near[0]], "near" + op, (near[1], w)))
    return found


def _is_constant(t: Any) -> bool:
    """A number in the tree (("c", v)), finite and not 0: a scale a distance can be divided by."""
    return (isinstance(t, (tuple, list)) and len(t) == 2 and t[0] == "c" and type(t[1]) in (int, float)
            and 0 < abs(t[1]) < math.inf)


def time_switch(tree: Any) -> tuple[str, Any, Any] | None:
    """(op, L, R) for a predicate over no attribute that reads the publication time, such as
    `elapsed() < ttl` (a subscription that expires); else None."""
    if (isinstance(tree, (tuple, list)) and len(tree) == 3 and tree[0] in _HOLDS
            and not reads(tree, "a") and reads(tree, "time")):
        return tree[0], tree[1], tree[2]
    return None


def never_holds(op: str, left: Any, right: Any, vs: Sequence[Any], t_lo: float, t_hi: float) -> bool:
    """Whether `left op right` is false at every publication time in [t_lo, t_hi] (False where
    that cannot be told: a side that cannot be ranged)."""
    a, b = _range_of(left, vs, t_lo, t_hi), _range_of(right, vs, t_lo, t_hi)
    return a is not None and b is not None and _HOLDS[op](a, b) is False


# for ranges a and b: False when `x op y` holds for no x in a, y in b (None: it may hold)
_HOLDS = {
    "<": lambda a, b: None if a[0] < b[1] else False,
    "<=": lambda a, b: None if a[0] <= b[1] else False,
    ">": lambda a, b: None if a[1] > b[0] else False,
    ">=": lambda a, b: None if a[1] >= b[0] else False,
    "==": lambda a, b: None if a[0] <= b[1] and b[0] <= a[1] else False,
    "!=": lambda a, b: False if a[0] == a[1] == b[0] == b[1] else None,
}


def _near(t: Any, timed: bool = True) -> tuple[int, Any] | None:
    """(attribute index, E) for `abs(a - E)` or `abs(E - a)` with E free of attributes."""
    if not (isinstance(t, (tuple, list)) and len(t) == 3 and t[0] == "f" and t[1] == "abs"):
        return None
    d = t[2]
    if not (isinstance(d, (tuple, list)) and len(d) == 3 and d[0] == "-"):
        return None
    if _is_attr(d[1]) and not reads(d[2], "a"):
        return d[1][1], d[2]
    if _is_attr(d[2]) and not reads(d[1], "a"):
        return d[2][1], d[1]
    alone = _isolated(d, timed)  # abs(x - x0 - v * elapsed()): abs(s * (a - E)) is abs(a - E)
    return None if alone is None else (alone[0], alone[2])


def _isolated(d: Any, timed: bool = True) -> tuple[int, int, Any] | None:
    """(attribute index, sign, E) when the tree `d` is a sum of terms (through +, - and unary
    minus) of which one is an attribute alone and no other reads an attribute, E reading the
    publication time: then d == sign * (a - E) (mathematically). E is a ("widen", sum, terms)
    node (E reading the time unless `timed` is False): its value is computed in another order than `d`'s, so its range is widened by what
    float rounding can make the two differ by (_widened), and the hull still covers the exact
    predicate the broker holding it checks."""
    terms: list[tuple[int, Any]] = []
    if not _signed_terms(d, 1, terms):
        return None
    at = [k for k, (_, t) in enumerate(terms) if reads(t, "a")]
    if len(at) != 1 or not _is_attr(terms[at[0]][1]):
        return None
    sign, attr = terms.pop(at[0])
    if not terms or (timed and not any(reads(t, "time") for _, t in terms)):
        return None
    e = None  # -sign * (the other terms): d == sign * a + rest, so a - E == sign * d
    for s, t in terms:
        s = -sign * s
        e = (t if s > 0 else ("neg", t)) if e is None else ("+" if s > 0 else "-", e, t)
    return attr[1], sign, ("widen", e, tuple(t for _, t in terms))


_MAX_TERMS = 16  # a longer sum is left as it is (open upstream): the widening is sized for fewer


def _signed_terms(t: Any, sign: int, out: list) -> bool:
    if not isinstance(t, (tuple, list)) or not t:
        return False
    if t[0] in ("+", "-") and len(t) == 3:
        return _signed_terms(t[1], sign, out) and _signed_terms(t[2], sign if t[0] == "+" else -sign, out)
    if t[0] == "neg" and len(t) == 2:
        return _signed_terms(t[1], -sign, out)
    out.append((sign, t))
    return len(out) <= _MAX_TERMS


# How far a sum of n <= _MAX_TERMS terms computed in one order can be from the same sum computed
# in another: each of the n additions rounds by at most half an ulp of a partial sum, which is at
# most the sum of the terms' magnitudes M, so n * 2**-53 * M; twice that for the two orders, and
# a margin: 1e-12 * M (about 70 times the bound for 16 terms)
_REORDERING = 1e-12


def _widened(r: Range | None, terms: list[Range | None]) -> Range | None:
    """The range of a reordered sum, widened by what the reordering can change (above)."""
    if r is None or any(t is None for t in terms):
        return None
    magnitude = _magnitude((max(abs(r[0]), abs(r[1])), *(max(abs(lo), abs(hi)) for lo, hi in terms)))
    if magnitude is None or not magnitude < math.inf:
        return None
    slack = _REORDERING * magnitude + 5e-324  # (the smallest step up from 0)
    return (r[0] - slack, r[1] + slack)


def _magnitude(parts: Any) -> float | None:
    """The sum of non-negative numbers as a float; None when it is past the floats: an int end
    (math.floor of a huge float, times 10) does not convert, and the sum raised OverflowError
    out of the broker's SUB, UPD or timer, refusing the subscription."""
    total = 0.0
    try:
        for p in parts:
            total += p
    except OverflowError:
        return None
    return total


def hull(op: str, expr: Any, vs: Sequence[Any], t_lo: float, t_hi: float) -> Interval | None:
    """The values of the attribute an evolving bound (from `evolving_bound`) admits at some
    publication time in [t_lo, t_hi]; None where that cannot be bounded."""
    if op.startswith("near"):
        e, w = _range_of(expr[0], vs, t_lo, t_hi), _range_of(expr[1], vs, t_lo, t_hi)
        if e is None or w is None:
            return None
        closed = op == "near<="
        # the exact check computes abs(a - E) and compares it with W, rounding the difference by
        # up to an ulp of |a| + |E|; the ends here round too: widened by far more than both
        magnitude = _magnitude((2 * max(abs(e[0]), abs(e[1])), abs(w[1])))
        if magnitude is None:
            return None  # an int end past the floats (math.floor(1e308) * 10): no bound to send
        slack = _REORDERING * magnitude + 5e-324
        if not slack < math.inf:
            slack = 0.0  # an infinite end: nothing to round (and inf - inf would be NaN)
        lo, hi = e[0] - w[1] - slack, e[1] + w[1] + slack
        if lo != lo or hi != hi:
            # inf - inf: a centre and a width both infinite (`abs(x - px) < view`, px and view
            # inf), where the exact check admits nothing. A NaN end went into the summary, whose
            # LUB with another subscription's interval kept the NaN, and the brokers upstream then
            # dropped that other subscription's events too: left open (None) instead
            return None
        return Interval(lo, closed, hi, closed)
    return bound_interval(op, _range_of(expr, vs, t_lo, t_hi))


def bound_interval(op: str, r: Range | None) -> Interval | None:
    """The values of the attribute that satisfy `a op E` for some value of E in r (None: any)."""
    if r is None:
        return None
    lo, hi = r
    if op == "==":
        return Interval(lo, True, hi, True)
    return _interval(op, hi if op in ("<", "<=") else lo)  # the bound the range reaches farthest


def tree_range(tree: Any, vs: Sequence[Any], t_lo: float, t_hi: float) -> Range | None:
    """An interval holding every value the attribute-free numeric tree takes while the publication
    time ranges over [t_lo, t_hi]; None where it cannot be bounded (a division by a range holding
    0, a value that is not a number)."""
    try:
        r = _range(tree, vs, (t_lo, t_hi))
    except (ArithmeticError, ValueError, TypeError, IndexError):
        return None
    if r is None or r[0] != r[0] or r[1] != r[1]:  # NaN: 0 * inf, inf - inf
        return None
    return r


class Ranged:
    """A tree that `hull` and `never_holds` range many times (a broker's evolving bound, once a
    window or a cached version): compiled once. Most evolving bounds read the publication time
    once, through operations each monotone in it (`x0 + v * (time - t0)`); such a tree's value
    over [t_lo, t_hi] lies between its values at the two ends, computed by the very closure the
    broker's exact check evaluates (IEEE rounding is monotone too), which costs two evaluations
    instead of a walk of interval arithmetic (~5x less). Any other tree, or an end where the
    evaluation fails or is not a number, is ranged by `tree_range`."""

    __slots__ = ("tree", "_point", "_fixed", "_sum", "_terms")

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self._sum: Ranged | None = None  # a ("widen", sum, terms) node: the sum and its terms, each ranged
        if isinstance(tree, tuple) and tree and tree[0] == "widen":
            self._sum, self._terms = Ranged(tree[1]), [Ranged(t) for t in tree[2]]
            self._point = self._fixed = None
            return
        occurrences = _monotone_in_time(tree)
        self._fixed = occurrences == 0  # reads no time: one evaluation
        # compiled at the first range taken (a subscription's SUB does not pay for it); None:
        # ranged by tree_range
        self._point: Any = _UNCOMPILED if occurrences is not None else None

    def range(self, vs: Sequence[Any], t_lo: float, t_hi: float) -> Range | None:
        if self._sum is not None:
            return _widened(self._sum.range(vs, t_lo, t_hi), [t.range(vs, t_lo, t_hi) for t in self._terms])
        point = self._point
        if point is _UNCOMPILED:
            try:
                point = self._point = compile_tree(self.tree, n_attrs=0)  # ("time",) is ev[0]
            except TreeError:
                point = self._point = None
        if point is not None:
            try:
                a = point((t_lo,), vs)
                b = a if self._fixed else point((t_hi,), vs)
            except (ArithmeticError, ValueError, TypeError, IndexError):
                return tree_range(self.tree, vs, t_lo, t_hi)
            if (type(a) is float or type(a) is int) and (type(b) is float or type(b) is int) and a == a and b == b:
                return (a, b) if a <= b else (b, a)
        return tree_range(self.tree, vs, t_lo, t_hi)

    def __repr__(self) -> str:
        return f"Ranged({self.tree!r})"


_UNCOMPILED = object()


def _range_of(x: Any, vs: Sequence[Any], t_lo: float, t_hi: float) -> Range | None:
    return x.range(vs, t_lo, t_hi) if type(x) is Ranged else tree_range(x, vs, t_lo, t_hi)


# monotone (non-decreasing) in each argument, over the arguments where they are defined
_MONOTONE_FUNCTIONS = frozenset({"min", "max", "round", "math.floor", "math.ceil", "math.sqrt"})


def _monotone_in_time(t: Any) -> int | None:
    """How often a tree reads the publication time (0 or 1) when it is monotone in it: each node
    on the way from the root to ("time",) is monotone in that child, its other operands reading no
    time (so a multiplication or division by them keeps one direction, whatever their sign);
    None otherwise (time read twice, or under abs, hypot, or a divisor)."""
    if not isinstance(t, (tuple, list)) or not t:
        return None
    kind = t[0]
    if kind == "time":
        return 1
    if kind in ("c", "v"):
        return 0
    if kind == "neg" and len(t) == 2:
        return _monotone_in_time(t[1])
    if kind in ("+", "-", "*", "/") and len(t) == 3:
        a, b = _monotone_in_time(t[1]), _monotone_in_time(t[2])
        if a is None or b is None or a + b > 1 or (kind == "/" and b):
            return None
        return a + b
    if kind == "f" and len(t) >= 3 and t[1] in _MONOTONE_FUNCTIONS:
        counts = [_monotone_in_time(a) for a in t[2:]]
        if any(c is None for c in counts) or sum(counts) > 1 or (t[1] == "round" and sum(counts[1:])):
            return None  # round(x, ndigits) is monotone in x only
        return sum(counts)
    return None


def _range(t: Any, vs: Sequence[Any], time: Range) -> Range | None:
    kind = t[0]
    if kind == "c" or kind == "v":
        v = t[1] if kind == "c" else vs[t[1]]
        if type(v) not in (int, float):
            return None
        return (v, v)
    if kind == "time":
        return time
    if kind == "widen":
        return _widened(_range(t[1], vs, time), [_range(term, vs, time) for term in t[2]])
    if kind == "neg":
        r = _range(t[1], vs, time)
        return None if r is None else (-r[1], -r[0])
    if kind in ("+", "-", "*", "/"):
        a, b = _range(t[1], vs, time), _range(t[2], vs, time)
        if a is None or b is None:
            return None
        if kind == "+":
            return (a[0] + b[0], a[1] + b[1])
        if kind == "-":
            return (a[0] - b[1], a[1] - b[0])
        if kind == "/":
            if b[0] <= 0 <= b[1]:
                return None
            # x / y itself, not x * (1 / y): the same float operations as a point evaluation,
            # and IEEE rounding is monotone, so the ends bound every point (49 / 49 is 1.0;
            # 49 * (1 / 49) is 0.999..., which math.floor takes to 0)
            quotients = [x / y for x in a for y in b]
            return (min(quotients), max(quotients))
        products = [x * y for x in a for y in b]
        return (min(products), max(products))
    if kind == "f":
        args = [_range(a, vs, time) for a in t[2:]]
        if any(a is None for a in args):
            return None
        fn = _FUNCTIONS.get(t[1])
        return None if fn is None else fn(args)
    return None


def _abs(r: Range) -> Range:
    lo, hi = r
    if lo >= 0:
        return r
    if hi <= 0:
        return (-hi, -lo)
    return (0.0, max(-lo, hi))


def _round(args: list[Range]) -> Range | None:
    if len(args) == 1:
        return (round(args[0][0]), round(args[0][1]))  # non-decreasing
    nd = args[1]
    if nd[0] != nd[1]:
        return None
    return (round(args[0][0], int(nd[0])), round(args[0][1], int(nd[0])))


def _sqrt(args: list[Range]) -> Range | None:
    lo, hi = args[0]
    if hi < 0:
        return None  # nowhere defined: the predicate never holds; None keeps the summary safe
    return (math.sqrt(max(lo, 0.0)), math.sqrt(hi))


def _hypot(args: list[Range]) -> Range:
    mags = [_abs(a) for a in args]
    return (math.hypot(*(m[0] for m in mags)), math.hypot(*(m[1] for m in mags)))


# each non-decreasing in every argument, or made so (abs, hypot through magnitudes)
_FUNCTIONS: dict[str, Callable[[list[Range]], Range | None]] = {
    "abs": lambda a: _abs(a[0]),
    "min": lambda a: (min(r[0] for r in a), min(r[1] for r in a)),
    "max": lambda a: (max(r[0] for r in a), max(r[1] for r in a)),
    "round": _round,
    "math.sqrt": _sqrt,
    "math.hypot": _hypot,
    "math.floor": lambda a: (math.floor(a[0][0]), math.floor(a[0][1])),
    "math.ceil": lambda a: (math.ceil(a[0][0]), math.ceil(a[0][1])),
}


def _is_attr(t: Any) -> bool:
    return isinstance(t, (tuple, list)) and len(t) == 2 and t[0] == "a"
