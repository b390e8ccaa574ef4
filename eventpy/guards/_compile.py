"""Guard AST -> resolved, type-checked, disjunctive normal form -> classified predicates -> plan.

Classification follows the grammars of paper 000: a predicate `a op v` is *static* (G0, §3.1),
`a op x` *parametric* (Gp, §4.1), `a op expr(x, v)` a *generated* variable (Ge, §7.3, Fig. 14),
a comparison with attributes inside expressions an *attribute expression* (Ga, §9.1.1) and one
over parameters only a *switch* (Gb, §9.1.2). A predicate that reads `elapsed()` is *evolving*
(paper 003): brokers evaluate it with each event's publication time, as attribute expressions are.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Callable, Mapping

from .._names import mangle
from ..runtime.model import EventType
from . import _ast as A
from ._errors import GuardError, error_at
from ._exprs import ARITH, FUNCTION_ARITY, FUNCTIONS
from ._parse import parse_guard
from ._plan import Bound, ConjPlan, GuardPlan, build_plan, node_text

MAX_CONJUNCTIONS = 256
NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "==", "in": "not in", "not in": "in"}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
ORDERING = {"<", "<=", ">", ">="}
WHITELIST = ", ".join(FUNCTIONS)


def kind_of_type(t: Any) -> str | None:
    if t is bool:
        return "bool"
    if t in (int, float):
        return "num"
    if t is str:
        return "str"
    if t in (set, frozenset):
        return "set"
    return None


class _Checker:
    """Resolves names and infers the kind (num, str, bool, set) of every expression."""

    def __init__(self, etype: EventType, params: Mapping[str, Any], mode: str, source: str,
                 owner: str | None = None) -> None:
        self.etype = etype
        self.params = params  # name -> type, or None when unknown until run time
        self.mode = mode
        self.source = source
        self.owner = owner  # the class whose body holds the guard: its `self.__f` is `_Owner__f`

    def fail(self, node: A.Node, message: str) -> GuardError:
        return error_at(node, message, self.source)

    # -- resolution ------------------------------------------------------------------------------
    def resolve(self, n: A.Node) -> A.Node:
        pos = {"line": n.line, "column": n.column}
        if isinstance(n, A.Name):
            in_schema = n.name in self.etype.index
            if self.mode == "epy":
                if in_schema:
                    return A.Attr(n.name, **pos)
                raise self.fail(n, f"name {n.name!r} is not a parameter of the event method; "
                                   f"use self.{n.name} for a field")
            in_params = n.name in self.params
            if in_schema and in_params:
                raise self.fail(n, f"name {n.name!r} is both an attribute of {self.etype.name} "
                                   "and a parameter; rename the parameter")
            if in_schema:
                return A.Attr(n.name, **pos)
            if in_params:
                return A.Param(n.name, **pos)
            raise self.fail(n, f"name {n.name!r} is neither an attribute of {self.etype.name} "
                               f"({', '.join(self.etype.attrs)}) nor a parameter"
                               + (f" ({', '.join(self.params)})" if self.params else ""))
        if isinstance(n, A.SelfField):
            if self.mode != "epy":
                raise self.fail(n, f"self.{n.name} can only be used in an event method guard; "
                                   "pass it as a parameter")
            return A.Param(mangle(self.owner, n.name), **pos)
        if isinstance(n, A.Call):
            if n.func == "elapsed":
                if n.args:
                    raise self.fail(n, "elapsed() takes no arguments: it is the seconds from the "
                                       "subscription to the event's publication")
                return A.Elapsed(**pos)
            if n.func not in FUNCTIONS:
                raise self.fail(n, f"guard calls {n.func}(); only {WHITELIST} may be called in a guard"
                                   + _instead(n.func))
            lo, hi = FUNCTION_ARITY[n.func]
            if not lo <= len(n.args) <= hi:
                raise self.fail(n, f"{n.func}() takes {lo if lo == hi else f'{lo} to {hi}'} "
                                   f"argument(s), got {len(n.args)}")
            return A.Call(n.func, tuple(self.resolve(a) for a in n.args), **pos)
        if isinstance(n, A.BinOp):
            return A.BinOp(n.op, self.resolve(n.left), self.resolve(n.right), **pos)
        if isinstance(n, A.Neg):
            return A.Neg(self.resolve(n.operand), **pos)
        if isinstance(n, A.SetLit):
            return A.SetLit(tuple(self.resolve(i) for i in n.items), **pos)
        if isinstance(n, A.Compare):
            return A.Compare(n.op, self.resolve(n.left), self.resolve(n.right), **pos)
        if isinstance(n, (A.And, A.Or)):
            return type(n)(tuple(self.resolve(i) for i in n.items), **pos)
        if isinstance(n, A.Not):
            return A.Not(self.resolve(n.item), **pos)
        if isinstance(n, A.Truth):
            return A.Truth(self.resolve(n.expr), **pos)
        return n

    # -- kinds -------------------------------------------------------------------------------------
    def describe(self, n: A.Node) -> str:
        if isinstance(n, A.Attr):
            return f"attribute {n.name!r} of type {self.etype.schema[n.name].__name__}"
        if isinstance(n, A.Param):
            return f"parameter {n.name!r}" if self.mode == "api" else f"field self.{n.name}"
        if isinstance(n, A.Const):
            return repr(n.value)
        if isinstance(n, A.Elapsed):
            return "elapsed()"
        return f"`{node_text(n, self.mode)}`"

    def described(self, n: A.Node, kind: str | None) -> str:
        """`describe` and, where neither the schema nor a literal shows it, what kind of value it
        is (`elapsed() < ttl` with a str ttl: both sides are named with what they hold). A field's
        value is shown by the caller instead (`(with self.ttl = '10')`, or where it is assigned)."""
        if isinstance(n, (A.Attr, A.Const)) or kind is None or (isinstance(n, A.Param) and self.mode == "epy"):
            return self.describe(n)
        return f"{self.describe(n)} ({_KIND_WORDS.get(kind, kind)})"

    def kind(self, n: A.Node) -> str | None:
        if isinstance(n, A.Const):
            return kind_of_type(type(n.value))
        if isinstance(n, A.Attr):
            return kind_of_type(self.etype.schema[n.name])
        if isinstance(n, A.Param):
            return kind_of_type(self.params.get(n.name))
        if isinstance(n, A.Elapsed):
            return "num"
        if isinstance(n, (A.BinOp, A.Neg, A.Call)):
            operands = (n.left, n.right) if isinstance(n, A.BinOp) else (
                (n.operand,) if isinstance(n, A.Neg) else n.args)
            for o in operands:
                k = self.kind(o)
                if k not in ("num", None):
                    what = f"'{n.op}'" if isinstance(n, A.BinOp) else (
                        "unary minus" if isinstance(n, A.Neg) else f"{n.func}()")
                    got = self.describe(o) if isinstance(o, (A.Attr, A.Const)) else f"{self.describe(o)} of kind {k}"
                    raise self.fail(o, f"{what} needs numbers, got {got}")
            return "num"
        if isinstance(n, A.SetLit):
            kinds = {self.kind(i) for i in n.items} - {None}
            if len(kinds) > 1:
                raise self.fail(n, f"a set literal mixes values of kinds {', '.join(sorted(kinds))}; the "
                                   "values of one set are all of the kind of the attribute it is tested against")
            return "set"
        if isinstance(n, (A.Compare, A.And, A.Or, A.Not, A.Truth)):
            raise self.fail(n, "a comparison cannot be used as a value here")
        return None

    def check_compare(self, c: A.Compare) -> None:
        lk, rk = self.kind(c.left), self.kind(c.right)
        if c.op in ("in", "not in"):
            if not (isinstance(c.right, A.SetLit) or (isinstance(c.right, A.Param) and rk in ("set", None))):
                raise self.fail(c.right, f"'{c.op}' needs a set literal or a set-valued parameter on "
                                         f"its right, got {self.describe(c.right)}")
            if isinstance(c.right, A.SetLit):
                for item in c.right.items:
                    ik = self.kind(item)
                    if None not in (lk, ik) and lk != ik:
                        raise self.fail(item, f"matching: {self.describe(c.left)} cannot be compared "
                                              f"with {self.describe(item)}")
            return
        if rk == "set" or lk == "set":
            bad = c.right if rk == "set" else c.left
            raise self.fail(bad, f"a set can only be used with 'in' or 'not in', not '{c.op}'")
        if None not in (lk, rk) and lk != rk:
            flip = isinstance(c.right, A.Attr) and not isinstance(c.left, A.Attr)
            (left, lk), (right, rk) = ((c.right, rk), (c.left, lk)) if flip else ((c.left, lk), (c.right, rk))
            raise self.fail(c, f"matching: {self.described(left, lk)} cannot be compared with "
                               f"{self.described(right, rk)}")
        if c.op in ORDERING and (lk in ("str", "bool") or rk in ("str", "bool")):
            bad = c.left if lk in ("str", "bool") else c.right
            raise self.fail(c, f"matching: {self.describe(bad)} cannot be ordered with '{c.op}'; "
                               "use ==, != or in")

    # -- normal form -----------------------------------------------------------------------------
    def atom(self, n: A.Node, negated: bool) -> list[list[A.Node]]:
        """A predicate as a DNF (alternatives of conjunctions of atoms)."""
        if isinstance(n, A.Truth) or not isinstance(n, A.Compare):
            expr = n.expr if isinstance(n, A.Truth) else n
            k = self.kind(expr)
            pos = {"line": expr.line, "column": expr.column}
            if k == "bool":
                n = A.Compare("==", expr, A.Const(True, **pos), **pos)
            elif k == "num":
                n = A.Compare("!=", expr, A.Const(0, **pos), **pos)
            elif k == "str":
                n = A.Compare("!=", expr, A.Const("", **pos), **pos)
            else:  # a parameter of unknown or set kind: Python truthiness, evaluated as a switch
                if _attrs_in(expr):
                    raise self.fail(expr, f"{self.describe(expr)} cannot be used as a condition")
                return [[A.Not(A.Truth(expr, **pos), **pos) if negated else A.Truth(expr, **pos)]]
        if negated:
            n = A.Compare(NEGATE[n.op], n.left, n.right, line=n.line, column=n.column)
        self.check_compare(n)
        # Numeric `!=` and `in` on a bare ordered attribute become disjunctions (000 §3.1).
        attr, other, op = _bound_sides(n)
        if attr is not None and self.kind(attr) == "num":
            pos = {"line": n.line, "column": n.column}
            if op == "!=":
                return [[A.Compare("<", attr, other, **pos)], [A.Compare(">", attr, other, **pos)]]
            if op in ("in", "not in"):
                if not isinstance(other, A.SetLit):
                    raise self.fail(other, f"an ordered attribute can be tested with '{op}' only "
                                           "against a set literal")
                eqs = [A.Compare("==", attr, item, **pos) for item in other.items]
                if op == "in":
                    self.limit(len(eqs))
                    # `vol in {n, limit / 0}` raises in Python, so it does not hold even for
                    # vol == n: each equality also needs the elements that might fail (a switch)
                    risky = [i for i in other.items if not isinstance(i, (A.Const, A.Param)) and not _evolving(i)]
                    if risky:
                        defined = A.Defined(A.SetLit(tuple(risky), **pos), **pos)
                        return [[e, defined] for e in eqs]
                    return [[e] for e in eqs]
                return self.conjoin([self.atom(e, True) for e in eqs])
        return [[n]]

    def limit(self, size: int) -> None:
        if size > MAX_CONJUNCTIONS:
            raise GuardError(f"the guard expands to more than {MAX_CONJUNCTIONS} conjunctions; "
                             "simplify it", self.source, 1, 1)

    def conjoin(self, parts: list[list[list[A.Node]]]) -> list[list[A.Node]]:
        size = 1
        for p in parts:  # refuse before enumerating: the product can be astronomically large
            size *= len(p)
            self.limit(size)
        return [sum(combo, []) for combo in product(*parts)]

    def dnf(self, n: A.Node, negated: bool = False) -> list[list[A.Node]]:
        if isinstance(n, A.Not):
            return self.dnf(n.item, not negated)
        if isinstance(n, (A.And, A.Or)):
            conjunctive = isinstance(n, A.And) != negated
            parts = [self.dnf(i, negated) for i in n.items]
            if conjunctive:
                return self.conjoin(parts)
            out = [c for p in parts for c in p]
            self.limit(len(out))
            return out
        return self.atom(n, negated)


_KIND_WORDS = {"num": "a number", "str": "a string", "bool": "a bool", "set": "a set"}


def _names_of(n: A.Node, kind: type) -> set[str]:
    """Names of the `kind` nodes (Attr or Param) in an expression."""
    if isinstance(n, kind):
        return {n.name}  # type: ignore[attr-defined]
    out: set[str] = set()
    for child in _children(n):
        if type(child) is not A.Const:  # most of a large set literal: no names, no call
            out |= _names_of(child, kind)
    return out


def _evolving(n: A.Node) -> bool:
    """Whether an expression reads elapsed()."""
    return isinstance(n, A.Elapsed) or any(_evolving(c) for c in _children(n) if type(c) is not A.Const)


def _attrs_in(n: A.Node) -> set[str]:
    return _names_of(n, A.Attr)


def _params_in(n: A.Node) -> set[str]:
    return _names_of(n, A.Param)


def _children(n: A.Node) -> tuple[A.Node, ...]:
    if isinstance(n, (A.BinOp, A.Compare)):
        return (n.left, n.right)
    if isinstance(n, A.Neg):
        return (n.operand,)
    if isinstance(n, (A.Call,)):
        return n.args
    if isinstance(n, (A.SetLit, A.And, A.Or)):
        return n.items
    if isinstance(n, A.Not):
        return (n.item,)
    if isinstance(n, (A.Truth, A.Defined)):
        return (n.expr,)
    return ()


def _bound_sides(c: A.Compare) -> tuple[A.Attr | None, A.Node | None, str]:
    """(attribute, attribute-free side, operator as seen from the attribute) or (None, None, op)."""
    if isinstance(c.left, A.Attr) and not _attrs_in(c.right):
        return c.left, c.right, c.op
    if isinstance(c.right, A.Attr) and not _attrs_in(c.left) and c.op in FLIP:
        return c.right, c.left, FLIP[c.op]
    return None, None, c.op


def env_closure(n: A.Node) -> Callable[[Mapping[str, Any]], Any]:
    """An attribute-free expression as a closure over the parameter values."""
    if isinstance(n, A.Const):
        v = n.value
        return lambda env: v
    if isinstance(n, A.Param):
        name = n.name
        return lambda env: env[name]
    if isinstance(n, A.BinOp):
        f, left, right = ARITH[n.op], env_closure(n.left), env_closure(n.right)
        return lambda env: f(left(env), right(env))
    if isinstance(n, A.Neg):
        x = env_closure(n.operand)
        return lambda env: -x(env)
    if isinstance(n, A.Call):
        fn, args = FUNCTIONS[n.func], [env_closure(a) for a in n.args]
        return lambda env: fn(*[a(env) for a in args])
    if isinstance(n, A.SetLit):
        items = [env_closure(i) for i in n.items]
        return lambda env: frozenset(i(env) for i in items)
    if isinstance(n, A.Truth):
        x = env_closure(n.expr)
        return lambda env: bool(x(env))
    if isinstance(n, A.Defined):
        x = env_closure(n.expr)

        def defined(env: Mapping[str, Any]) -> bool:
            x(env)  # raises where the expression does: the switch is then off
            return True

        return defined
    if isinstance(n, A.Not):
        x = env_closure(n.item)
        return lambda env: not x(env)
    if isinstance(n, A.Compare):
        from ._exprs import COMPARE
        f, left, right = COMPARE[n.op], env_closure(n.left), env_closure(n.right)
        return lambda env: f(left(env), right(env))
    raise TypeError(f"not an attribute-free expression: {n!r}")


def _bound_kind(other: A.Node) -> str:
    if isinstance(other, A.Const) or (isinstance(other, A.SetLit) and not _params_in(other)):
        return "static"
    if isinstance(other, A.Param) or (
        isinstance(other, A.SetLit) and all(isinstance(i, (A.Const, A.Param)) for i in other.items)
    ):
        return "parametric"
    return "generated"


def compile_guard(
    text: str,
    etype: EventType,
    params: Mapping[str, Any] | None = None,
    *,
    mode: str = "api",
    owner: str | None = None,
) -> GuardPlan:
    """Compile a guard for `etype`. `params` maps parameter names to their type (or None). In
    "epy" mode every `self.f` is a parameter whether listed or not (a field may be set anywhere);
    the listed types are checked. `owner`: the name of the class whose body holds the guard, by
    which a private `self.__f` is the field `_Owner__f` (Python's mangling: the guard is a string,
    which Python does not mangle); `params` then names it so too."""
    params = dict(params or {})
    checker = _Checker(etype, params, mode, text, owner)
    try:
        tree = checker.resolve(parse_guard(text))
        alternatives = checker.dnf(tree)
    except GuardError as e:
        raise GuardError(e.message, text, e.line, e.column) from None
    conjs: list[ConjPlan] = []
    for atoms in alternatives:
        bounds: dict[str, list[Bound]] = {}
        switches: list[tuple[A.Node, set[str]]] = []
        residual: list[A.Compare] = []
        dropped = False
        for atom in atoms:
            if _evolving(atom):  # evaluated with the event's publication time by the broker
                residual.append(atom)  # holding it (after its index, _evolving) and the local filter
                continue
            attrs = _attrs_in(atom)
            if not attrs:
                deps = _params_in(atom)
                if deps:
                    switches.append((atom, deps))
                    continue
                try:
                    value = env_closure(atom)({})
                except (ArithmeticError, ValueError, TypeError):
                    value = False
                if not value:
                    dropped = True
                    break
                continue
            assert isinstance(atom, A.Compare)
            attr, other, op = _bound_sides(atom)
            if attr is None:
                residual.append(atom)
                continue
            bounds.setdefault(attr.name, []).append(
                Bound(op, env_closure(other), frozenset(_params_in(other)), _bound_kind(other), atom)
            )
        if not dropped:
            conjs.append(ConjPlan(bounds, switches, residual))
    return build_plan(text, etype, conjs, params, mode)


# the brokers narrow a distance written with hypot to the square around its centre (_hull.implied_bounds)
_DISTANCE = (": for the distance between (x, y) and (px, py), write math.hypot(x - px, y - py), which brokers "
             "narrow to the events near (px, py)")
_CONVERSION = (": numbers compare across int and float as in Python; to cut off the fraction, math.floor "
               "(or math.ceil below zero)")
_STR_METHODS = frozenset(m for m in dir(str) if not m.startswith("_"))
_INSTEAD = {
    "range": ": for a range, compare both ends (lo <= n < hi)",
    "int": _CONVERSION,
    "float": _CONVERSION,
    "len": ": keep the length in a field, or test it in the body",
    "math.dist": _DISTANCE,
    "pow": ": powers are not part of a guard (write x * x; " + _DISTANCE[2:] + ")",
    "math.pow": ": powers are not part of a guard (write x * x; " + _DISTANCE[2:] + ")",
}
# trigonometry (a latitude's cosine, a bearing): computed by the subscriber, not by every broker
for _f in ("math.cos", "math.sin", "math.tan", "math.atan2", "math.radians", "math.degrees"):
    _INSTEAD[_f] = (": compute it in a field the object keeps up to date (self.coslat = math.cos(...)), "
                    "and compare with it (abs(lon - self.lon) <= self.r / self.coslat)")


def _instead(func: str) -> str:
    """What to write for a call of Python a guard does not take ("" when there is no advice)."""
    if func in _INSTEAD:
        return _INSTEAD[func]
    if "." in func and func.rsplit(".", 1)[1] in _STR_METHODS:  # firm.startswith(...), name.upper()
        return (": a guard compares whole strings (==, != or in {...}); keep what the method computes in a "
                "field, or test it in the body")
    return ""
