"""Random evolving guards and their oracle, shared by the property tests of evolving subscriptions
(the simulator's, test_evolving_property, and the engines', test_evolving_engines): guards mixing
elapsed() bounds on either side, windows, expiries, int attributes, functions and divisions with
static, parametric, set and switch predicates and disjunctions."""

from __future__ import annotations

import ast
import math

from hypothesis import strategies as st

from eventpy.runtime.model import EventType

E = EventType("evo.Ev", x=float, n=int, s=str, b=bool)
SCOPE = {"abs": abs, "min": min, "max": max, "round": round, "math": math, "__builtins__": {}}


def oracle(guard: str, values: tuple, params: dict, elapsed: float) -> bool:
    """Test-only: the guard's text evaluated with elapsed() = t_pub - t_sub, in negation normal form
    as the compiler brings it; a comparison that cannot be evaluated (sqrt of a negative, a
    division by 0, an operand that is NaN: inf * 0, inf - inf) does not hold, nor does its negation
    (as tests/guards/test_oracle.py has it for errors). Python's own `x != nan` holds; the compiled
    `x < E or x > E` does not."""
    env = {**dict(zip(E.attrs, values)), **params}
    scope = {**SCOPE, "elapsed": lambda: elapsed}

    def value(node: ast.AST):
        return eval(compile(ast.Expression(node), "<guard>", "eval"), scope, env)

    def ev(node: ast.AST, negated: bool = False) -> bool:
        if isinstance(node, ast.BoolOp):
            vals = [ev(v, negated) for v in node.values]
            return all(vals) if isinstance(node.op, ast.And) != negated else any(vals)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ev(node.operand, not negated)
        try:
            if isinstance(node, ast.Compare):
                operands = [value(n) for n in (node.left, *node.comparators)]
                if any(isinstance(v, float) and math.isnan(v) for v in operands):
                    return False
            return bool(value(node)) != negated
        except (ArithmeticError, ValueError, TypeError):
            return False

    return ev(ast.parse(guard, mode="eval").body)


def expr(depth: int = 2) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(["elapsed()", "p0", "p1", "p2", "k", "2", "0.5"])
    if depth == 0:
        return leaf
    sub = expr(depth - 1)
    return st.one_of(
        leaf,
        st.builds("({} {} {})".format, sub, st.sampled_from(["+", "-", "*", "/"]), sub),
        st.builds("{}({})".format, st.sampled_from(["abs", "round", "math.floor", "math.ceil", "math.sqrt"]), sub),
        st.builds("{}({}, {})".format, st.sampled_from(["min", "max", "math.hypot"]), sub, sub),
        st.builds("(-{})".format, sub))


@st.composite
def timed(draw) -> str:
    e = draw(expr())
    if "elapsed()" not in e:
        e = f"({e} + p1 * elapsed())"
    a = draw(st.sampled_from(["x", "x", "n"]))
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    return draw(st.sampled_from([
        f"{a} {op} {e}", f"{e} {op} {a}", f"abs({a} - {e}) < p2", f"abs({e} - {a}) <= p2 - elapsed()",
        f"p2 > abs({a} - {e})", "elapsed() < ttl", "elapsed() > ttl", f"{a} + elapsed() {op} {e}",
        f"{e} - p0 < {a} < {e} + p2", f"{a} {op} {e} and {a} {op} p0 + elapsed()"]))


OTHER = ["s == f", "s in {'a', 'b'}", "s != 'c'", "on", "not on", "b", "n != k", "x < lim",
         "n > k - 2", "abs(x - p0) < p2", "b == on"]


@st.composite
def guards(draw) -> str:
    conjs = []
    for _ in range(draw(st.integers(1, 2))):
        preds = [draw(timed())] + draw(st.lists(st.sampled_from(OTHER), max_size=2))
        if draw(st.booleans()):
            preds.append(draw(timed()))
        conjs.append(" and ".join(f"({p})" for p in draw(st.permutations(preds))))
    return " or ".join(f"({c})" for c in conjs)


decimal = st.floats(-30, 30).map(lambda v: round(v, 2))
PARAMS = st.fixed_dictionaries({
    "p0": decimal | st.sampled_from([math.inf, -math.inf, 1e308, 0.0, -0.0]),
    "p1": st.floats(-20, 20).map(lambda v: round(v, 1)) | st.sampled_from([math.inf, 1e300]),
    "p2": st.floats(0, 15).map(lambda v: round(v, 1)), "k": st.integers(-3, 5) | st.just(2 ** 64 - 1),
    "ttl": st.floats(0, 4), "lim": decimal, "on": st.booleans(), "f": st.sampled_from(["a", "b", "c"])})
