"""Restricted expression trees: what attribute expressions (000 §9.1.1, grammar Ga) look like on
the wire and how brokers evaluate them — by walking a tree of known node kinds, never `eval`,
never Python source.

A tree is a nested tuple (msgpack keeps it as lists, which are accepted too):

    ("c", value)            a constant (int, float, str, bool)
    ("a", index)            the event attribute at `index` in the schema
    ("v", var)              a subscription variable (a parameter value held by the broker)
    ("time",)               the event's publication time, given after its attributes (paper 003
                            §V-D: the evolution variable's value where the event entered)
    ("+"|"-"|"*"|"/", l, r) arithmetic
    ("neg", x)              unary minus
    ("f", name, x, ...)     a whitelisted pure function
    ("set", x, ...)         a set of values, right operand of in / not in
    (op, l, r)              op in < <= == != > >= in "not in": a predicate (the root of a tree)
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Iterator, Sequence

#: The pure functions a guard may call (DESIGN §1.2).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "min": min,
    "max": max,
    "round": round,
    "math.sqrt": math.sqrt,
    "math.hypot": math.hypot,
    "math.floor": math.floor,
    "math.ceil": math.ceil,
}
FUNCTION_ARITY: dict[str, tuple[int, int]] = {
    "abs": (1, 1), "min": (2, 16), "max": (2, 16), "round": (1, 2), "math.sqrt": (1, 1),
    "math.hypot": (1, 16), "math.floor": (1, 1), "math.ceil": (1, 1),
}
ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
}
COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    # a NaN side makes `!=` fail as it makes every other comparison fail (README: a comparison that
    # cannot be evaluated does not hold), as the interval form `x < v or x > v` of a plain `!=` does
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": lambda a, b: a == a and b == b and a != b,
    ">": operator.gt, ">=": operator.ge,
    # `x in {a, b}` is `x == a or x == b`, `x not in {a, b}` is `x != a and x != b`, as the plain
    # attribute form is split at the brokers: a NaN element only fails its own equality, but makes
    # `not in` fail; a NaN `x` fails both (Python's `in` would match it by identity)
    "in": lambda x, s: x == x and x in s,
    "not in": lambda x, s: x == x and x not in s and (type(x) is str or all(e == e for e in s)),
}
MAX_DEPTH = 32
MAX_NODES = 256

Evaluator = Callable[[Sequence[Any], Sequence[Any]], Any]  # (event values, variables) -> value


class TreeError(ValueError):
    """A tree received from elsewhere is not a well-formed restricted expression."""


def compile_tree(tree: Any, n_attrs: int | None = None, n_vars: int | None = None) -> Evaluator:
    """Validate `tree` and turn it into a closure. Raises TreeError on anything unknown."""
    budget = [MAX_NODES]

    def build(t: Any, depth: int) -> Evaluator:
        budget[0] -= 1
        if budget[0] < 0 or depth > MAX_DEPTH:
            raise TreeError("expression too large")
        if not isinstance(t, (tuple, list)) or not t or not isinstance(t[0], str):
            raise TreeError(f"malformed expression node {t!r:.60}")
        kind, args = t[0], t[1:]
        if kind == "c":
            _arity(t, 1)
            value = args[0]
            if type(value) not in (int, float, str, bool):
                raise TreeError(f"constant of type {type(value).__name__} not allowed")
            return lambda ev, vs: value
        if kind == "a":
            _arity(t, 1)
            i = _index(args[0], n_attrs, "attribute")
            return lambda ev, vs: ev[i]
        if kind == "time":
            _arity(t, 0)
            if n_attrs is None:
                raise TreeError("('time',) needs the schema's size")
            at = n_attrs
            return lambda ev, vs: ev[at]
        if kind == "v":
            _arity(t, 1)
            j = _index(args[0], n_vars, "variable")
            return lambda ev, vs: vs[j]
        if kind in ARITH:
            _arity(t, 2)
            f, left, right = ARITH[kind], build(args[0], depth + 1), build(args[1], depth + 1)
            return lambda ev, vs: f(left(ev, vs), right(ev, vs))
        if kind == "neg":
            _arity(t, 1)
            x = build(args[0], depth + 1)
            return lambda ev, vs: -x(ev, vs)
        if kind == "f":
            if not args or args[0] not in FUNCTIONS:
                raise TreeError(f"function {args[0] if args else '?'!r} is not allowed")
            lo, hi = FUNCTION_ARITY[args[0]]
            if not lo <= len(args) - 1 <= hi:
                raise TreeError(f"{args[0]} takes {lo}..{hi} arguments")
            fn = FUNCTIONS[args[0]]
            parts = [build(a, depth + 1) for a in args[1:]]
            return lambda ev, vs: fn(*[p(ev, vs) for p in parts])
        if kind == "set":
            parts = [build(a, depth + 1) for a in args]
            return lambda ev, vs: frozenset(p(ev, vs) for p in parts)
        if kind in COMPARE:
            _arity(t, 2)
            f, left, right = COMPARE[kind], build(args[0], depth + 1), build(args[1], depth + 1)
            return lambda ev, vs: f(left(ev, vs), right(ev, vs))
        raise TreeError(f"unknown expression node {kind!r}")

    return build(tree, 0)


def compile_predicate(tree: Any, n_attrs: int | None = None, n_vars: int | None = None) -> Evaluator:
    """A predicate tree as a closure that is False (never raises) when evaluation fails,
    e.g. a division by zero: a guard that cannot be evaluated does not hold."""
    if not isinstance(tree, (tuple, list)) or not tree or tree[0] not in COMPARE:
        raise TreeError("a predicate must be a comparison")
    fn = compile_tree(tree, n_attrs, n_vars)

    def holds(ev: Sequence[Any], vs: Sequence[Any]) -> bool:
        try:
            return bool(fn(ev, vs))
        except (ArithmeticError, ValueError, TypeError):
            return False

    return holds


def tree_nodes(tree: Any) -> Iterator[tuple[Any, int]]:
    """Every node of a tree with its depth, as compile_tree counts them (a stack, no recursion)."""
    stack = [(tree, 0)]
    while stack:
        t, depth = stack.pop()
        yield t, depth
        if isinstance(t, (tuple, list)) and t and t[0] not in ("c", "a", "v"):
            stack.extend((x, depth + 1) for x in t[1 + (t[0] == "f"):])


def tree_size(tree: Any) -> tuple[int, int]:
    """(nodes, depth) of a tree: the guard compiler tells a guard whose expression brokers would
    refuse (MAX_NODES, MAX_DEPTH)."""
    nodes = deepest = 0
    for _, depth in tree_nodes(tree):
        nodes += 1
        deepest = max(deepest, depth)
    return nodes, deepest


def reads(tree: Any, kind: str) -> bool:
    """Whether a (validated) tree has a node of `kind` ("time": the publication time; "a": an
    attribute)."""
    if not isinstance(tree, (tuple, list)) or not tree:
        return False
    return tree[0] == kind or any(reads(t, kind) for t in tree[1:] if isinstance(t, (tuple, list)))


def reads_time(tree: Any) -> bool:
    """Whether a (validated) tree reads the event's publication time."""
    return reads(tree, "time")


def _arity(t: Sequence[Any], n: int) -> None:
    if len(t) != n + 1:
        raise TreeError(f"node {t[0]!r} takes {n} operand(s), got {len(t) - 1}")


def _index(i: Any, bound: int | None, what: str) -> int:
    if type(i) is not int or i < 0 or (bound is not None and i >= bound):
        raise TreeError(f"{what} index {i!r} out of range")
    return i
