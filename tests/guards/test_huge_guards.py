"""Guards larger than their author expected (a generated one, say): nested a thousand deep, or an
attribute expression brokers would refuse. Each is a diagnostic with a position, never a
RecursionError from inside the parser nor a bare TreeError; what fits the limits still works."""

from __future__ import annotations

import pytest

from eventpy.guards import GuardError, compile_guard
from eventpy.guards._exprs import MAX_DEPTH, MAX_NODES
from eventpy.guards._parse import MAX_NESTING
from eventpy.runtime.model import EventType

Q = EventType("limits.Q", firm=str, price=float, vol=int)

DEEP = {
    "unary minus": lambda n: "price < " + "-" * n + "p",
    "not": lambda n: "not " * n + "price < p",
    "sum of fields": lambda n: "price < " + " + ".join(["p"] * n),
    "nested calls": lambda n: "price < " + "abs(" * n + "p" + ")" * n,
    "switch": lambda n: "price < 1 and " + "not " * n + "p < 1",
}


@pytest.mark.parametrize("shape", DEEP)
@pytest.mark.parametrize("n", [1_000, 20_000])
def test_a_guard_nested_thousands_deep_is_a_diagnostic(shape, n):
    text = DEEP[shape](n)
    with pytest.raises(GuardError, match=f"more than {MAX_NESTING} levels deep") as e:
        compile_guard(text, Q, {"p": float})
    assert e.value.line == 1 and 1 < e.value.column < len(text)


@pytest.mark.parametrize("shape", DEEP)
def test_a_guard_nested_up_to_the_limit_compiles_and_evaluates(shape):
    n = MAX_NESTING - 3  # the comparison, and `and`, are levels too
    plan = compile_guard(DEEP[shape](n), Q, {"p": float})
    env = {"p": 1.0}
    values = [v.fn({**env, "__eventpy_subscribed_at__": 0.0}) for v in plan.vars]
    assert isinstance(plan.holds(("IBM", 0.5, 1), values), bool)


def test_parentheses_alone_do_not_count_as_nesting():
    plan = compile_guard("price < " + "(" * 5_000 + "p" + ")" * 5_000, Q, {"p": float})
    assert len(plan.vars) == 1


@pytest.mark.parametrize("text, parts", [
    (" + ".join(["price"] * 40) + " < p", "81 parts"),  # 40 attributes, 39 sums, the comparison, p
    ("-" * 40 + "price < p", "43 parts"),
    ("price * 2 in {" + ", ".join(str(i) for i in range(300)) + "}", "305 parts"),  # shallow, but 305 parts
])
def test_an_attribute_expression_brokers_would_refuse_is_a_diagnostic(text, parts):
    with pytest.raises(GuardError, match=f"{parts} .* at most {MAX_NODES} parts, nested {MAX_DEPTH} deep") as e:
        compile_guard(text, Q, {"p": float})
    assert (e.value.line, e.value.column) == (1, 1)
    assert "<guard>:1:1: error: this comparison of attributes" in str(e.value)


def test_an_attribute_expression_at_the_brokers_limits_compiles():
    text = " + ".join(["price"] * MAX_DEPTH) + " < p"  # its deepest attribute MAX_DEPTH deep
    plan = compile_guard(text, Q, {"p": float})
    assert plan.holds(("IBM", 0.01, 1), [1.0]) and not plan.holds(("IBM", 1.0, 1), [1.0])


def test_a_set_literal_of_ten_thousand_members_compiles():
    members = ", ".join(repr(f"f{i}") for i in range(10_000))
    plan = compile_guard(f"firm in {{{members}}}", Q)
    values = [v.fn({}) for v in plan.vars]
    assert plan.holds(("f9999", 1.0, 1), values) and not plan.holds(("g", 1.0, 1), values)


@pytest.mark.parametrize("text", [f"vol * 2 < {2**80}", f"vol - {-2**63 - 1} > 0", f"vol * 2 in {{1, {2**64}}}"])
def test_an_int_constant_past_64_bits_in_an_attribute_expression_is_a_diagnostic(text):
    """Over TCP the SUB carrying it could not be encoded: the node logged 'cannot send a SUB' and
    subscribe returned a subscription that never received an event."""
    with pytest.raises(GuardError, match="outside the 64-bit integers the overlay carries; write it as a float"):
        compile_guard(text, Q)


def test_int_constants_within_64_bits_and_big_floats_stay_attribute_expressions():
    plan = compile_guard(f"vol * 2 < {2**63 - 1} and price * 2 < 1e300", Q)
    assert plan.holds(("IBM", 1.0, 2**40), []) and not plan.holds(("IBM", 1e300, 1), [])


W = EventType("limits.Wide", **{f"a{i}": int for i in range(17)})


def test_a_guard_with_more_variables_than_a_subscription_holds_is_a_diagnostic():
    """256 alternatives bounding 17 attributes each: 4,352 variables. The broker refused the SUB
    (logged) and subscribe returned a subscription that never received an event."""
    text = " or ".join("(" + " and ".join(f"a{j} > {i}" for j in range(17)) + ")" for i in range(256))
    with pytest.raises(GuardError, match="needs 4352 subscription variables .* at most 4096"):
        compile_guard(text, W)
    fits = " or ".join("(" + " and ".join(f"a{j} > {i}" for j in range(16)) + ")" for i in range(256))
    assert len(compile_guard(fits, W).vars) == 4096


def test_a_guard_whose_attribute_expressions_together_exceed_a_subscription_is_a_diagnostic():
    each = " + ".join(["price"] * 20) + " < {}"  # 41 parts each, 256 alternatives: 10,496
    with pytest.raises(GuardError, match="take 10496 parts .* over its 256 alternatives, and a subscription holds "
                                         "at most 8192"):
        compile_guard(" or ".join(each.format(i) for i in range(256)), Q)
    plan = compile_guard(" or ".join(each.format(i) for i in range(190)), Q)  # 7,790
    assert plan.holds(("IBM", 0.0, 1), [])
