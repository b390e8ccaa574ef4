"""The central check of guard compilation, an oracle property: random guards over the schema and
parameters of _schema.py are compiled, and `plan.holds(event, plan.evaluate(env))` must equal
Python's own evaluation of the same text (in the test only; the runtime never evals).

Evaluation errors (division by zero, sqrt of a negative number): the runtime says "a guard that
cannot be evaluated does not hold" per predicate (_exprs.compile_predicate, _plan), each
conjunction being a subscription of its own. The oracle therefore brings the guard to negation
normal form and lets a comparison that raises be false (its negation too). Where Python evaluates
the whole guard without raising, that is checked to agree with plain `eval`.
"""

from __future__ import annotations

import ast
import math
import os
import re
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from eventpy.guards import (
    GuardError,
    compile_guard,
)

from ._schema import ENV, NS_FUNCS, P, Q


# -- the oracle property -------------------------------------------------------------------------
# Guards are built as small trees: ("atom", text) | ("chain", [e0, op, e1, op, e2]) | ("not", x)
# | ("and", [x, ...]) | ("or", [x, ...]). Parameters appear as $name and are rendered as `name`
# (api mode) or `self.name` (epy mode).
CMP = ["<", "<=", "==", "!=", ">", ">="]
NUM_CONSTS = ["0", "1", "2", "3", "-1", "0.5", "2.5", "-1.5", "100", "1_0", "1e1", ".5", "-0.0"]
STRS = ["'IBM'", '"HP"', "''", "$name", "'X'"]
BOOLS = ["True", "False", "$active"]
FIRMS = ["IBM", "HP", "", "X"]

num_leaf = st.sampled_from(NUM_CONSTS + ["$limit", "$n", "$limit", "$n"])


@st.composite
def pexpr(draw, depth=2, safe=False):
    """A numeric expression over parameters and constants (`safe`: never raises)."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(num_leaf)
    a = draw(pexpr(depth - 1, safe))
    b = draw(pexpr(depth - 1, safe))
    forms = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "-{a}", "abs({a})", "min({a}, {b})",
             "max({a}, {b}, 1)", "round({a})", "math.floor({a})", "math.ceil({a})",
             "math.hypot({a}, {b})", "round({a}, 1)"]
    if not safe:
        forms += ["({a} / {b})", "math.sqrt({a})"]
    return draw(st.sampled_from(forms)).format(a=a, b=b)


@st.composite
def aexpr(draw, depth=2):
    """A numeric expression with at least one attribute in it."""
    attr = draw(st.sampled_from(["price", "vol"]))
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return attr
    x = draw(aexpr(depth - 1))
    y = draw(st.one_of(aexpr(depth - 1), pexpr(1)))
    if draw(st.booleans()):
        x, y = y, x
    form = draw(st.sampled_from(["({x} + {y})", "({x} - {y})", "({x} * {y})", "({x} / {y})",
                                 "-{x}", "abs({x})", "max({x}, {y})", "round({x})"]))
    if form in ("-{x}", "abs({x})", "round({x})") and "price" not in x and "vol" not in x:
        x = attr
    return form.format(x=x, y=y)


def _atom(text: str):
    return ("atom", text)


@st.composite
def atoms(draw):
    kind = draw(st.sampled_from(
        ["bound", "bound", "chain", "num_in", "str", "str", "bool", "aexpr", "aexpr", "aexpr",
         "switch", "switch", "truth", "const"]))
    if kind == "bound":
        attr = draw(st.sampled_from(["price", "vol"]))
        other = draw(st.one_of(st.sampled_from(NUM_CONSTS), st.sampled_from(["$limit", "$n"]), pexpr()))
        op = draw(st.sampled_from(CMP))
        return _atom(f"{attr} {op} {other}" if draw(st.booleans()) else f"{other} {op} {attr}")
    if kind == "chain":
        attr = draw(st.sampled_from(["price", "vol"]))
        e0, e2 = draw(pexpr(1)), draw(pexpr(1))
        op1, op2 = draw(st.sampled_from(CMP)), draw(st.sampled_from(CMP))
        parts = [e0, op1, attr, op2, e2] if draw(st.integers(0, 3)) else [attr, op1, e0, op2, e2]
        return ("chain", parts)
    if kind == "num_in":
        attr = draw(st.sampled_from(["price", "vol"]))
        items = draw(st.lists(st.one_of(num_leaf, pexpr(1)), min_size=1, max_size=3))
        op = draw(st.sampled_from(["in", "not in"]))
        return _atom(f"{attr} {op} {{{', '.join(items)}}}")
    if kind == "str":
        s = draw(st.sampled_from(STRS))
        form = draw(st.sampled_from(["firm == {s}", "{s} == firm", "firm != {s}", "{s} != firm",
                                     "firm in {{{s}, {t}}}", "firm not in {{{s}}}", "firm in $watch",
                                     "firm not in $watch", "firm", "{s} in {{firm, 'HP'}}"]))
        return _atom(form.format(s=s, t=draw(st.sampled_from(STRS))))
    if kind == "bool":
        b = draw(st.sampled_from(BOOLS))
        form = draw(st.sampled_from(["hot", "hot == {b}", "{b} != hot", "hot in {{{b}, {c}}}",
                                     "hot not in {{{b}}}", "hot != {b}"]))
        return _atom(form.format(b=b, c=draw(st.sampled_from(BOOLS))))
    if kind == "aexpr":
        left = draw(aexpr())
        right = draw(st.one_of(aexpr(1), pexpr(1), st.sampled_from(NUM_CONSTS)))
        form = draw(st.sampled_from(["{l} {op} {r}", "{r} {op} {l}", "{l}", "{l} in {{{s}, 1}}",
                                     "$n in {{{l}, 3}}"]))
        # set elements that may raise too (test_numeric_in_with_an_element_that_cannot_be_evaluated)
        element = draw(st.one_of(aexpr(1), pexpr(1)))
        return _atom(form.format(l=left, r=right, s=element, op=draw(st.sampled_from(CMP))))
    if kind == "switch":
        return _atom(draw(st.sampled_from([
            "$active", "$limit > 0", "$n == 3", "$name == 'IBM'", "$name", "$watch", "$n in {1, 2}",
            "$name in $watch", "$limit", "$name not in {'IBM', ''}", "$n",
        ]) | st.builds(lambda a, op, b: f"{a} {op} {b}", pexpr(1), st.sampled_from(CMP), pexpr(1))))
    if kind == "truth":
        return _atom(draw(st.sampled_from(["price", "vol", "-price", "abs(vol)"])))
    return _atom(draw(st.sampled_from(["1 < 2", "2 < 1", "True", "False", "0 == 0", "1 / 0 > 0"])))


def guards():
    return st.recursive(
        atoms(),
        lambda sub: st.one_of(
            st.tuples(st.just("not"), sub),
            st.tuples(st.just("and"), st.lists(sub, min_size=2, max_size=3)),
            st.tuples(st.just("or"), st.lists(sub, min_size=2, max_size=3)),
        ),
        max_leaves=6,
    )


def render(g, mode: str) -> str:
    kind = g[0]
    if kind == "atom":
        text = g[1]
    elif kind == "chain":
        text = " ".join(g[1])
    elif kind == "not":
        inner = render(g[1], mode)
        text = f"not ({inner})" if g[1][0] in ("and", "or") else f"not {inner}"
    else:
        parts = [render(c, mode) for c in g[1]]
        parts = [f"({p})" if c[0] in ("and", "or") else p for p, c in zip(parts, g[1])]
        text = f" {kind} ".join(parts)
    if mode == "api":
        return text.replace("$", "")
    if mode == "epy":
        return re.sub(r"\$(\w+)", r"self.\1", text)
    return text


NAN_SEEN: list = []  # atom_holds met a NaN operand: Python's own evaluation may differ there


def _is_nan(v) -> bool:
    if isinstance(v, float) and v != v:
        NAN_SEEN.append(v)
        return True
    return False


_NEGATED_OP = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
               ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In}


def atom_holds(text: str, ns: dict, negated: bool) -> bool:
    """One atom (at most one comparison, at its top) or its negation, the README's way: a side
    that raises or comes out NaN (inf - inf, 0 * inf) makes the comparison false, and its negation
    too; `x in S` is `x == a or ...`, `x not in S` is `x != a and ...`; a NaN truth value is false."""
    tree = ast.parse(text, mode="eval").body

    def value(node):
        return eval(compile(ast.Expression(node), "<atom>", "eval"), ns)  # test oracle only

    try:
        if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1):
            v = value(tree)
            return False if _is_nan(v) else bool(v) != negated
        op = type(tree.ops[0])
        op = _NEGATED_OP[op] if negated else op
        left, right = value(tree.left), value(tree.comparators[0])
    except (ArithmeticError, ValueError, TypeError):
        return False
    if _is_nan(left):
        return False
    if op is ast.In:
        return any(left == e for e in right)
    if op is ast.NotIn:
        return all(not _is_nan(e) and left != e for e in right)
    if _is_nan(right):
        return False
    return {ast.Lt: lambda: left < right, ast.LtE: lambda: left <= right, ast.Gt: lambda: left > right,
            ast.GtE: lambda: left >= right, ast.Eq: lambda: left == right, ast.NotEq: lambda: left != right}[op]()


def nnf_holds(g, ns: dict, negated: bool = False) -> bool:
    """The guard in negation normal form; a comparison that raises is false, and so is its negation."""
    kind = g[0]
    if kind == "atom":
        return atom_holds(render(g, "api"), ns, negated)
    if kind == "chain":
        e0, op1, e1, op2, e2 = g[1]
        return nnf_holds(("and", [("atom", f"{e0} {op1} {e1}"), ("atom", f"{e1} {op2} {e2}")]), ns, negated)
    if kind == "not":
        return nnf_holds(g[1], ns, not negated)
    parts = [nnf_holds(c, ns, negated) for c in g[1]]
    conjunctive = (kind == "and") != negated
    return all(parts) if conjunctive else any(parts)


def python_holds(text: str, ns: dict) -> bool | None:
    try:
        return bool(eval(text, ns))  # test oracle only
    except (ArithmeticError, ValueError, TypeError):
        return None


PRICES = [-3.0, -2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0, 10.0, 100.0,
          2, 3, -1]
# infinities (inf - inf and 0 * inf are NaN) and ints a float64 does not hold exactly; rarer than
# the small values, so boundary equalities stay frequent
EXTREME_FLOATS = [math.inf, -math.inf, 1e308, 2.0 ** 53]
EXTREME_INTS = [2 ** 53 + 1, -(2 ** 63), 2 ** 64 - 1]
prices = st.sampled_from(PRICES) | st.sampled_from(EXTREME_FLOATS)
events = st.fixed_dictionaries({
    "firm": st.sampled_from(FIRMS),
    "price": prices,
    "vol": st.integers(-3, 12) | st.just(100) | st.sampled_from(EXTREME_INTS),
    "hot": st.booleans(),
})
envs = st.fixed_dictionaries({
    "limit": prices,
    "n": st.integers(-2, 4) | st.sampled_from(EXTREME_INTS),
    "name": st.sampled_from(FIRMS),
    "active": st.booleans(),
    "watch": st.frozensets(st.sampled_from(FIRMS)),
})

STATS = {"pairs": 0, "guards": 0, "raising": 0, "updates": 0}


def _namespace(event: dict, env: dict, mode: str) -> dict:
    ns = {"__builtins__": {}, **NS_FUNCS, **event}
    if mode == "api":
        ns.update(env)
    else:
        ns["self"] = SimpleNamespace(**env)
    return ns


# EVENTPY_ORACLE_EXAMPLES=5000 for a deeper search
@settings(max_examples=int(os.environ.get("EVENTPY_ORACLE_EXAMPLES", "500")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(guards(), st.lists(envs, min_size=2, max_size=4), st.lists(events, min_size=8, max_size=16),
       st.lists(st.sampled_from(list(P)), max_size=2))
# an attribute expression's and a switch's `not in` held with a NaN element (limit - limit, limit =
# inf), where the plain attribute's (x != a and x != b, intervals at the brokers) did not
@example(("or", [("atom", "abs(price) not in {($limit - $limit), 1}"), ("atom", "$n not in {$limit * 0}")]),
         [{**ENV, "limit": math.inf}, {**ENV, "limit": 1.0}],
         [{"firm": "IBM", "price": p, "vol": 1, "hot": False} for p in (0.0, 1.0, 2.0, math.inf)], [])
def _oracle_property(g, env_list, event_list, extra_changed):
    texts = {mode: render(g, mode) for mode in ("api", "epy")}
    try:
        plans = {mode: compile_guard(texts[mode], Q, P, mode=mode) for mode in texts}
    except GuardError as e:
        assume("more than 256 conjunctions" not in e.message)
        raise
    STATS["guards"] += 1
    for mode, plan in plans.items():
        text = texts[mode]
        values = plan.evaluate(env_list[0])
        prev = env_list[0]
        for k, env in enumerate(env_list):
            if k:
                # a parameter update: only dependent variables are recomputed, only changes sent
                changed = [p for p in P if env[p] != prev[p]] + extra_changed
                old = list(values)
                sent = plan.recompute(env, values, changed)
                assert values == plan.evaluate(env), (text, prev, env)
                ids = [i for i, _ in sent]
                assert ids == sorted(set(ids))
                assert set(ids) == {i for i in range(len(old)) if old[i] != values[i]}, (text, sent)
                for i, new in sent:
                    assert new == values[i] and old[i] != new
                    assert plan.vars[i].deps & set(changed), (text, plan.vars[i], changed)
                STATS["updates"] += 1
                prev = env
            for event in event_list:
                # as published: a float attribute given an int holds a float (2 - vol + vol with
                # vol = -2**63 is 2 in ints, 0.0 in floats)
                event = dict(zip(Q.attrs, Q.values_from(event)))
                ns = _namespace(event, env, mode)
                NAN_SEEN.clear()
                expected = nnf_holds(g, _namespace(event, env, "api"))
                direct = python_holds(text, ns)
                if direct is None:
                    STATS["raising"] += 1
                elif not NAN_SEEN:  # Python's `nan != x` holds, the guard's does not
                    assert direct == expected, ("oracle self-check", text, event, env)
                got = plan.holds(Q.values_from(event), values)
                assert got == expected, (text, mode, event, env, plan.spec, values)
                STATS["pairs"] += 1


def test_oracle_compiled_guards_agree_with_python():
    for k in STATS:
        STATS[k] = 0
    _oracle_property()
    print(f"\noracle: {STATS}")
    assert STATS["pairs"] >= 3000, STATS


@pytest.mark.parametrize(
    "text",
    [
        "firm == 'IBM' and price < limit",
        "not (1 < price <= limit * 2) or hot != active",
        "vol not in {n, 3, n + 1} and firm in watch",
        "price * vol > limit or not (active and name in watch)",
        "abs(price - limit) <= math.sqrt(abs(n)) and -vol < n",
        "round(price) == n or max(price, vol, 1) > limit / n",
        "not price and not firm or vol",
        "min(limit, n) < price < max(limit, n)",
        "not (vol != n)",
        "price < limit == n",
    ],
)
def test_oracle_examples(text):
    plan = compile_guard(text, Q, P)
    for env in ({**ENV}, {**ENV, "limit": 2.0, "n": 0, "active": False},
                {**ENV, "limit": -1.5, "n": 3, "watch": frozenset()}):
        values = plan.evaluate(env)
        for firm in FIRMS:
            for price in (-2.0, -1.5, 0.0, 1.0, 2.0, 2.5, 3.0, 4.0, 100.0):
                for vol in (-1, 0, 2, 3, 4):
                    event = {"firm": firm, "price": price, "vol": vol, "hot": vol > 2}
                    expected = python_holds(text, _namespace(event, env, "api"))
                    if expected is None:
                        continue
                    assert plan.holds(Q.values_from(event), values) == expected, (text, event, env)
