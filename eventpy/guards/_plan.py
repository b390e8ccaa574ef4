"""The compiled form of a guard: subscription variables and how to compute them.

Every constraint a broker indexes is a *variable* (Beretta's inherent parameterization, 001 §5.2;
000 §5.2 "replace all values in predicates by variables"): one per attribute of each conjunction,
holding its normalized Interval or ValueSet. Like the generated variables of 000 §7.3 (Fig. 14)
each is a function of the parameters it depends on, so an update of one parameter re-computes and
re-sends only the variables that depend on it, and a structural change of a bound (`price < x`
becomes `price <= y`) is an update like any other. A conjunction may also have a *switch* variable
(000 §9.1.2: predicates over parameters only) and attribute-expression predicates (000 §9.1.1)
that read parameter variables.

The wire form of a plan (`GuardPlan.spec`) is a tuple of conjunctions
`((attr, var), ...), switch_var or -1, (tree, ...)` with trees as in `_exprs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..runtime.model import ANY_VALUE, EVERYTHING, INF, EventType, Interval, ValueSet
from ..runtime.model._schema import INT_MAX, INT_MIN
from . import _ast as A
from ..runtime._sub_limits import MAX_EXPRESSION_NODES, MAX_VARIABLES
from ._errors import GuardError, error_at
from ._exprs import MAX_DEPTH, MAX_NODES, compile_predicate, tree_nodes, tree_size

#: The parameter holding the time a subscription was issued (on the overlay's clock), which
#: elapsed() is measured from; set by the client when it subscribes, never by a program.
SUBSCRIBED_AT = "(subscribed at)"

EMPTY_INTERVAL = Interval(INF, False, -INF, False)
EMPTY_SET = ValueSet(frozenset())
_BOOLS = frozenset((True, False))


@dataclass
class Bound:
    """One predicate `attr op value(params)` of a conjunction."""

    op: str
    value: Callable[[Mapping[str, Any]], Any]
    deps: frozenset[str]
    kind: str  # static, parametric, generated
    node: A.Compare


@dataclass
class ConjPlan:
    bounds: dict[str, list[Bound]]
    switches: list[tuple[A.Node, set[str]]]
    residual: list[A.Compare]


@dataclass
class VarPlan:
    id: int
    kind: str  # constraint, switch, param
    conj: int  # -1 for parameter variables shared by the subscription
    attr: str | None
    deps: frozenset[str]
    fn: Callable[[Mapping[str, Any]], Any] = field(repr=False)
    name: str = ""
    text: str = ""  # the predicates it stands for, as guard text (shown in generated code)


def _interval(op: str, v: Any) -> Interval:
    if type(v) not in (int, float):
        raise TypeError(f"expected a number, got {type(v).__name__}")
    if v != v:
        raise ValueError("NaN bound")
    if op == "<":
        return Interval(-INF, True, v, False)
    if op == "<=":
        return Interval(-INF, True, v, True)
    if op == ">":
        return Interval(v, False, INF, True)
    if op == ">=":
        return Interval(v, True, INF, True)
    return Interval(v, True, v, True)  # ==


def integral(iv: Interval) -> Interval:
    """Closed integer bounds for an int attribute (001 §4: x > 1000 is x in [1001, MAX]).
    A bound beyond the ints an event can carry (INT_MIN..INT_MAX, checked at publication) is
    infinite, or admits nothing: the same events, and a value the wire's 64 bits can hold
    (`n <= 1e30 * elapsed()` made the summary of an evolving bound impossible to send)."""
    lo, hi = iv.lo, iv.hi
    if lo not in (INF, -INF):
        lo = math.ceil(lo) if iv.lo_closed else math.floor(lo) + 1
    if hi not in (INF, -INF):
        hi = math.floor(hi) if iv.hi_closed else math.ceil(hi) - 1
    if lo > INT_MAX or hi < INT_MIN:
        return EMPTY_INTERVAL
    if lo < INT_MIN:
        lo = -INF
    if hi > INT_MAX:
        hi = INF
    return Interval(lo, True, hi, True)


def _numeric_constraint(bounds: list[Bound], is_int: bool) -> Callable[[Mapping[str, Any]], Interval]:
    def compute(env: Mapping[str, Any]) -> Interval:
        try:
            iv = EVERYTHING
            for b in bounds:
                iv = iv.intersect(_interval(b.op, b.value(env)))
            return integral(iv) if is_int else iv
        except (ArithmeticError, ValueError, TypeError, KeyError):
            return EMPTY_INTERVAL  # a guard that cannot be evaluated does not hold

    return compute


def _set_constraint(bounds: list[Bound], is_bool: bool) -> Callable[[Mapping[str, Any]], ValueSet]:
    def compute(env: Mapping[str, Any]) -> ValueSet:
        try:
            vs = ANY_VALUE
            for b in bounds:
                v = b.value(env)
                if b.op == "==":
                    c = ValueSet(frozenset((v,)))
                elif b.op == "!=":
                    c = ValueSet(frozenset((v,)), True)
                else:
                    c = ValueSet(frozenset(v), b.op == "not in")
                vs = vs.intersect(c)
            if is_bool and vs.exclude:
                vs = ValueSet(_BOOLS - vs.values)
            return vs
        except (ArithmeticError, ValueError, TypeError, KeyError):
            return EMPTY_SET

    return compute


def _switch(preds: list[Callable[[Mapping[str, Any]], Any]]) -> Callable[[Mapping[str, Any]], bool]:
    def compute(env: Mapping[str, Any]) -> bool:
        try:
            return all(bool(p(env)) for p in preds)
        except (ArithmeticError, ValueError, TypeError, KeyError):
            return False

    return compute


class GuardPlan:
    """What a subscriber needs to subscribe, update and filter locally."""

    def __init__(self, source: str, etype: EventType, mode: str) -> None:
        self.source = source
        self.etype = etype
        self.mode = mode
        self.vars: list[VarPlan] = []
        self.spec: tuple = ()
        self.predicates: list[tuple[int, str, str]] = []  # (conjunction, kind, attribute or '')
        self.by_param: dict[str, tuple[int, ...]] = {}
        self._conjs: list[tuple[tuple[tuple[int, int], ...], int, tuple]] = []
        self.timed = False  # the guard reads elapsed(): `holds` needs the publication time
        # the static bounds of an alternative that admit no value (`n > 5 and n < 3`), as text;
        # when every alternative had some, the guard never holds whatever the parameters
        # (the runtime says so once: a subscription that silently receives nothing)
        self.contradictions: list[str] = []
        self.never_holds = False

    @property
    def param_names(self) -> set[str]:
        """The parameters a program gives (not SUBSCRIBED_AT, which the client sets)."""
        return set(self.by_param) - {SUBSCRIBED_AT}


    def evaluate(self, env: Mapping[str, Any]) -> list[Any]:
        return [v.fn(env) for v in self.vars]

    def recompute(self, env: Mapping[str, Any], values: list[Any], changed: Sequence[str]) -> list[tuple[int, Any]]:
        """Re-evaluate the variables depending on `changed` parameters; store and return the
        ones whose value differs (only those are sent, 000 §7.3)."""
        ids: set[int] = set()
        for name in changed:
            ids.update(self.by_param.get(name, ()))
        out = []
        for i in sorted(ids):
            new = self.vars[i].fn(env)
            if new != values[i]:
                values[i] = new
                out.append((i, new))
        return out

    def holds(self, event_values: Sequence[Any], var_values: Sequence[Any], time: float | None = None) -> bool:
        """The guard on an event under the given variable values (the local filter); `time`, the
        event's publication time, is what elapsed() is measured to (without it, a guard that
        reads elapsed() does not hold)."""
        if self.timed:
            event_values = (*event_values, math.nan if time is None else time)
        return conjunctions_hold(self._conjs, event_values, var_values)

    def __repr__(self) -> str:
        return f"GuardPlan({self.source!r}, {len(self._conjs)} conjunction(s), {len(self.vars)} variable(s))"


def compile_conjunctions(spec: Sequence, etype: EventType, n_vars: int) -> list:
    """Wire spec -> the structure `conjunctions_hold` evaluates (residual trees compiled)."""
    out = []
    for constraints, switch, residual in spec:
        cons = tuple((etype.index[a], v) for a, v in constraints)
        preds = tuple(compile_predicate(t, len(etype.attrs), n_vars) for t in residual)
        out.append((cons, switch, preds))
    return out


def conjunctions_hold(conjs: Sequence, ev: Sequence[Any], vs: Sequence[Any]) -> bool:
    for cons, switch, preds in conjs:
        if switch >= 0 and not vs[switch]:
            continue
        for i, var in cons:
            if not vs[var].contains(ev[i]):
                break
        else:
            for p in preds:
                if not p(ev, vs):
                    break
            else:
                return True
    return False


def _to_tree(n: A.Node, etype: EventType, param_var: Callable[[str], int]) -> tuple:
    if isinstance(n, A.Const):
        return ("c", n.value)
    if isinstance(n, A.Attr):
        return ("a", etype.index[n.name])
    if isinstance(n, A.Param):
        return ("v", param_var(n.name))
    if isinstance(n, A.BinOp):
        return (n.op, _to_tree(n.left, etype, param_var), _to_tree(n.right, etype, param_var))
    if isinstance(n, A.Neg):
        return ("neg", _to_tree(n.operand, etype, param_var))
    if isinstance(n, A.Call):
        return ("f", n.func, *(_to_tree(a, etype, param_var) for a in n.args))
    if isinstance(n, A.Elapsed):  # the event's publication time minus the subscription's
        return ("-", ("time",), ("v", param_var(SUBSCRIBED_AT)))
    if isinstance(n, A.SetLit):
        return ("set", *(_to_tree(i, etype, param_var) for i in n.items))
    if isinstance(n, A.Compare):
        return (n.op, _to_tree(n.left, etype, param_var), _to_tree(n.right, etype, param_var))
    raise TypeError(f"cannot ship {n!r} to a broker")


def _check_shippable(atom: A.Node, tree: tuple, source: str) -> None:
    """GuardError at a comparison whose expression tree the brokers would refuse as too large
    (compile_tree's bounds, which keep a hostile SUB cheap), rather than the bare TreeError
    "expression too large" without a position that subscribe raised."""
    nodes, depth = tree_size(tree)
    if nodes > MAX_NODES or depth > MAX_DEPTH:
        raise error_at(atom, f"this comparison of attributes has {nodes} parts (operations and operands) "
                             f"nested {depth} deep, and brokers evaluate at most {MAX_NODES} parts, nested "
                             f"{MAX_DEPTH} deep; simplify it, or compute the part over fields in a field", source)
    for t, _ in tree_nodes(tree):
        # msgpack carries 64-bit ints only: over TCP the SUB could not be encoded, and was logged
        # and dropped by the node while subscribe returned (a subscription that never received)
        if t[0] == "c" and type(t[1]) is int and not INT_MIN <= t[1] <= INT_MAX:
            raise error_at(atom, f"the integer {t[1]} is outside the 64-bit integers the overlay carries; "
                                 f"write it as a float ({float(t[1]):.6g})", source)


def _check_sub_limits(plan: GuardPlan, source: str) -> None:
    """GuardError for a guard whose SUB brokers would refuse (runtime._sub_limits): they logged
    the refusal and subscribe returned a subscription that never received an event."""
    conjs = len(plan.spec)
    if len(plan.vars) > MAX_VARIABLES:
        raise GuardError(f"the guard needs {len(plan.vars)} subscription variables (one for each attribute "
                         f"bounded in each of its {conjs} alternatives, and each field or expression over fields), "
                         f"and a subscription holds at most {MAX_VARIABLES}; simplify it, or subscribe in parts",
                         source, 1, 1)
    nodes = sum(tree_size(t)[0] for _, _, trees in plan.spec for t in trees)
    if nodes > MAX_EXPRESSION_NODES:
        raise GuardError(f"the guard's comparisons of attributes take {nodes} parts (operations and operands) over "
                         f"its {conjs} alternatives, and a subscription holds at most {MAX_EXPRESSION_NODES}; "
                         "simplify it, or subscribe in parts", source, 1, 1)


def node_text(n: A.Node, mode: str = "api") -> str:
    """Guard text of a resolved AST node (fields as `self.f` in epy mode)."""
    if isinstance(n, A.Const):
        return repr(n.value)
    if isinstance(n, A.Attr):
        return n.name
    if isinstance(n, A.Param):
        return f"self.{n.name}" if mode == "epy" else n.name
    if isinstance(n, A.BinOp):
        return f"{_operand(n.left, mode)} {n.op} {_operand(n.right, mode)}"
    if isinstance(n, A.Neg):
        return f"-{_operand(n.operand, mode)}"
    if isinstance(n, A.Call):
        return f"{n.func}({', '.join(node_text(a, mode) for a in n.args)})"
    if isinstance(n, A.Elapsed):
        return "elapsed()"
    if isinstance(n, A.SetLit):
        return "{" + ", ".join(node_text(i, mode) for i in n.items) + "}"
    if isinstance(n, A.Compare):
        return f"{node_text(n.left, mode)} {n.op} {node_text(n.right, mode)}"
    return "?"


def _operand(n: A.Node, mode: str) -> str:
    text = node_text(n, mode)
    return f"({text})" if isinstance(n, A.BinOp) else text


def build_plan(source: str, etype: EventType, conjs: list[ConjPlan], params: Mapping[str, Any], mode: str) -> GuardPlan:
    from ._compile import env_closure  # circular at import time only

    plan = GuardPlan(source, etype, mode)
    param_vars: dict[str, int] = {}

    def new_var(kind: str, conj: int, attr: str | None, deps: frozenset[str], fn, name: str,
                text: str = "") -> int:
        v = VarPlan(len(plan.vars), kind, conj, attr, deps, fn, name, text)
        plan.vars.append(v)
        return v.id

    def param_var(name: str) -> int:
        if name not in param_vars:
            param_vars[name] = new_var("param", -1, None, frozenset((name,)), lambda env, n=name: env[n], name)
        return param_vars[name]

    def unsatisfiable(conj: ConjPlan) -> bool:
        # a conjunction of static bounds that admits nothing (vol < 1 and vol > 2) is dropped,
        # whatever parametric bounds of the same attribute come with them (vol < limit)
        for attr, bounds in conj.bounds.items():
            bounds = [b for b in bounds if not b.deps]
            if bounds:
                t = etype.schema[attr]
                fn = (_numeric_constraint(bounds, t is int) if t in (int, float)
                      else _set_constraint(bounds, t is bool))
                if fn({}).is_empty():
                    plan.contradictions.append(" and ".join(node_text(b.node, mode) for b in bounds))
                    return True
        return False

    spec = []
    satisfiable = [c for c in conjs if not unsatisfiable(c)]
    plan.never_holds = bool(conjs) and not satisfiable
    for conj in satisfiable:
        ci = len(spec)
        constraints = []
        for attr, bounds in conj.bounds.items():
            t = etype.schema[attr]
            fn = (_numeric_constraint(bounds, t is int) if t in (int, float)
                  else _set_constraint(bounds, t is bool))
            deps = frozenset().union(*(b.deps for b in bounds))
            text = " and ".join(node_text(b.node, mode) for b in bounds)
            constraints.append((attr, new_var("constraint", ci, attr, deps, fn, f"c{ci}.{attr}", text)))
            plan.predicates.extend((ci, b.kind, attr) for b in bounds)
        switch = -1
        if conj.switches:
            deps = frozenset().union(*(d for _, d in conj.switches))
            fn = _switch([env_closure(n) for n, _ in conj.switches])
            switch = new_var("switch", ci, None, deps, fn, f"c{ci}.switch")
            plan.predicates.extend((ci, "switch", "") for _ in conj.switches)
        trees = tuple(_to_tree(c, etype, param_var) for c in conj.residual)
        for c, tree in zip(conj.residual, trees):
            _check_shippable(c, tree, source)
        plan.predicates.extend((ci, "evolving" if "elapsed()" in node_text(c) else "attribute-expression", "")
                               for c in conj.residual)
        spec.append((tuple(constraints), switch, trees))
    plan.spec = tuple(spec)
    _check_sub_limits(plan, source)
    by_param: dict[str, list[int]] = {}
    for v in plan.vars:
        for d in v.deps:
            by_param.setdefault(d, []).append(v.id)
    plan.by_param = {k: tuple(v) for k, v in by_param.items()}
    plan._conjs = compile_conjunctions(plan.spec, etype, len(plan.vars))
    plan.timed = SUBSCRIBED_AT in param_vars
    return plan
