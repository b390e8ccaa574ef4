"""Guard compilation (DESIGN §1.2): resolution, type checks, DNF, classification (paper 000
G0 §3.1, Gp §4.1, Ge §7.3, Ga/Gb §9.1), subscription variables, evaluation errors. The oracle
property is in test_oracle.py, the restricted trees that brokers evaluate in test_trees.py.
"""

from __future__ import annotations

import math

import pytest

from eventpy.guards import (
    FUNCTIONS,
    GuardError,
    compile_guard,
)
from eventpy.runtime.model import INF, Interval, ValueSet

from ._schema import ENV, P, Q, err, ev, holds


# -- classification ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, predicates",
    [
        ("price < 100", [(0, "static", "price")]),
        ("firm == 'IBM' and price < limit", [(0, "static", "firm"), (0, "parametric", "price")]),
        ("limit > price", [(0, "parametric", "price")]),
        ("vol >= n", [(0, "parametric", "vol")]),
        ("firm == name", [(0, "parametric", "firm")]),
        ("firm in watch", [(0, "parametric", "firm")]),
        ("firm not in watch", [(0, "parametric", "firm")]),
        ("firm in {name, 'HP'}", [(0, "parametric", "firm")]),
        ("hot == active", [(0, "parametric", "hot")]),
        ("firm in {'IBM', 'HP'}", [(0, "static", "firm")]),
        # Ge: an expression over parameters and constants is a generated variable (Fig. 14)
        ("price < limit * 2", [(0, "generated", "price")]),
        ("price > -limit", [(0, "generated", "price")]),
        ("price <= abs(limit) + n", [(0, "generated", "price")]),
        ("2 * n < vol", [(0, "generated", "vol")]),
        ("price < 2 * 3", [(0, "generated", "price")]),  # constant arithmetic: still an expression
        # Ga: attributes inside expressions
        ("price * vol > limit", [(0, "attribute-expression", "")]),
        ("price > vol", [(0, "attribute-expression", "")]),
        ("abs(price - limit) < 1", [(0, "attribute-expression", "")]),
        ("n in {vol, 3}", [(0, "attribute-expression", "")]),
        # Gb: predicates over parameters only
        ("active", [(0, "switch", "")]),
        ("limit > 0", [(0, "switch", "")]),
        ("not active", [(0, "switch", "")]),
        ("name in watch", [(0, "switch", "")]),
        ("watch", [(0, "switch", "")]),
        ("limit * 2 > n", [(0, "switch", "")]),
        # mixtures, one conjunction
        ("active and price < 3 and price * vol > limit",
         [(0, "static", "price"), (0, "switch", ""), (0, "attribute-expression", "")]),
        ("1 < price < limit", [(0, "static", "price"), (0, "parametric", "price")]),
        # two conjunctions
        ("price < limit or active", [(0, "parametric", "price"), (1, "switch", "")]),
    ],
)
def test_classification(text, predicates):
    plan = compile_guard(text, Q, P)
    assert plan.predicates == predicates


@pytest.mark.parametrize("text", ["price > -1", "vol in {-1}", "price <= -2.5"])
def test_negative_literals_are_static(text):
    assert {kind for _, kind, _ in compile_guard(text, Q, P).predicates} == {"static"}


def test_classification_in_epy_mode():
    plan = compile_guard("firm == 'IBM' and price < self.limit * 2 and self.active", Q, P, mode="epy")
    assert plan.predicates == [(0, "static", "firm"), (0, "generated", "price"), (0, "switch", "")]
    assert holds(plan, {**ENV, "limit": 10.0}, firm="IBM", price=19.5)
    assert not holds(plan, {**ENV, "limit": 10.0}, firm="IBM", price=20.0)
    assert not holds(plan, {**ENV, "limit": 10.0, "active": False}, firm="IBM", price=1.0)


def test_variables_of_a_generated_predicate_follow_fig14():
    plan = compile_guard("firm == 'IBM' and price < limit * 2", Q, P)
    [(c_firm, v_firm), (c_price, v_price)] = plan.spec[0][0]
    assert (c_firm, c_price) == ("firm", "price")
    kinds = {v.id: (v.kind, v.deps) for v in plan.vars}
    assert kinds[v_firm] == ("constraint", frozenset())
    assert kinds[v_price] == ("constraint", frozenset({"limit"}))
    values = plan.evaluate({"limit": 10.0})
    assert values[v_firm] == ValueSet(frozenset({"IBM"}))
    assert values[v_price] == Interval(-INF, True, 20.0, False)
    # an update of `limit` recomputes and returns only the generated variable
    assert plan.recompute({"limit": 15.0}, values, ["limit"]) == [(v_price, Interval(-INF, True, 30.0, False))]
    assert values[v_price] == Interval(-INF, True, 30.0, False)
    assert plan.recompute({"limit": 15.0}, values, ["limit"]) == []  # no change, nothing to send
    assert plan.recompute({"limit": 99.0}, values, ["n"]) == []  # nothing depends on n
    assert plan.param_names == {"limit"}


def test_attribute_expression_ships_a_tree_over_parameter_variables():
    plan = compile_guard("price * vol > limit", Q, P)
    [(constraints, switch, trees)] = plan.spec
    assert constraints == () and switch == -1
    [var] = plan.vars
    assert (var.kind, var.name, var.deps) == ("param", "limit", frozenset({"limit"}))
    assert trees == ((">", ("*", ("a", 1), ("a", 2)), ("v", var.id)),)
    assert holds(plan, {"limit": 10.0}, price=2.5, vol=5)
    assert not holds(plan, {"limit": 12.5}, price=2.5, vol=5)


def test_switch_variable_suspends_without_unsubscribing():
    plan = compile_guard("active and firm == 'IBM'", Q, P)
    [(constraints, switch, trees)] = plan.spec
    assert switch >= 0 and plan.vars[switch].kind == "switch"
    values = plan.evaluate({"active": True})
    assert plan.holds(ev(firm="IBM"), values)
    assert plan.recompute({"active": False}, values, ["active"]) == [(switch, False)]
    assert not plan.holds(ev(firm="IBM"), values)
    assert len(plan.spec) == 1  # the conjunction is still there


@pytest.mark.parametrize(
    "text, env, expected",
    [
        # integers: x > 1000 is x in [1001, MAX] (paper 001 §4)
        ("vol > 1000", {}, Interval(1001, True, INF, True)),
        ("vol >= 1000", {}, Interval(1000, True, INF, True)),
        ("vol < 1000", {}, Interval(-INF, True, 999, True)),
        ("vol <= 1000", {}, Interval(-INF, True, 1000, True)),
        ("vol < limit", {"limit": 2.5}, Interval(-INF, True, 2, True)),
        ("vol <= limit", {"limit": 2.5}, Interval(-INF, True, 2, True)),
        ("vol > limit", {"limit": -1.5}, Interval(-1, True, INF, True)),
        ("vol >= limit", {"limit": -1.5}, Interval(-1, True, INF, True)),
        ("vol == 3", {}, Interval(3, True, 3, True)),
        ("1 < vol < 4", {}, Interval(2, True, 3, True)),
        ("price > 1000", {}, Interval(1000, False, INF, True)),
        ("price <= limit", {"limit": 2.5}, Interval(-INF, True, 2.5, True)),
        ("firm != 'IBM'", {}, ValueSet(frozenset({"IBM"}), True)),
        ("firm in {'IBM', name}", {"name": "HP"}, ValueSet(frozenset({"IBM", "HP"}))),
        ("firm not in watch", {"watch": frozenset({"A"})}, ValueSet(frozenset({"A"}), True)),
        ("hot", {}, ValueSet(frozenset({True}))),
        ("not hot", {}, ValueSet(frozenset({False}))),  # bool exclusions become inclusions
        ("hot != active", {"active": False}, ValueSet(frozenset({True}))),
    ],
)
def test_normalized_constraints(text, env, expected):
    plan = compile_guard(text, Q, P)
    [((_, var),)] = [c for c, _, _ in plan.spec]
    assert plan.evaluate(env)[var] == expected


def test_int_attribute_against_a_non_integral_equality_is_empty():
    plan = compile_guard("vol == limit", Q, P)
    assert plan.evaluate({"limit": 2.5})[0].is_empty()
    assert not holds(plan, {"limit": 2.5}, vol=2) and not holds(plan, {"limit": 2.5}, vol=3)
    assert holds(plan, {"limit": 3.0}, vol=3)


# -- DNF -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, n",
    [
        ("price < 1", 1),
        ("price < 1 or price > 2", 2),
        ("price < 1 and price > 2", 0),  # static and unsatisfiable: dropped
        ("(price < 1 or price > 2) and (vol < 1 or vol > 2)", 4),
        ("(price < 1 or hot) and (vol < 1 or firm == 'a') and active", 4),
        ("not (price < 1 and vol < 1)", 2),
        ("not (price < 1 or vol < 1)", 1),
        ("not not (price < 1 or vol < 1)", 2),
        ("price != 3", 2),  # numeric != splits in two
        ("vol != n", 2),
        ("price != limit * 2", 2),
        ("not (price == 3)", 2),
        ("firm != 'IBM'", 1),  # enumerated != is one exclusion set
        ("hot != True", 1),
        ("vol in {1, 2, 3}", 3),  # numeric in: one equality per element
        ("vol in {1, n, limit}", 3),
        ("price not in {1, 2}", 3),  # (<1), (1, 2), (>2)
        ("vol not in {1, 2}", 2),  # ints: nothing between 1 and 2
        ("vol not in {1, 3}", 3),
        ("firm in {'a', 'b', name}", 1),
        ("firm not in {'a', 'b'}", 1),
        ("vol > 1 and vol < 2", 0),  # ints: empty
        ("price > 1 and price < 2", 1),
        ("hot and not hot", 0),
        ("firm == 'a' and firm == 'b'", 0),
        ("firm == 'a' and firm != 'a'", 0),
        ("price < limit and price > limit", 1),  # parametric: kept, may become satisfiable
        ("1 > 2 or price < 1", 1),
        ("1 > 2", 0),
        ("price < 1 / 0", 0),  # a static bound that cannot be evaluated admits nothing
        ("1 < 2 and price < 1", 1),
        ("price", 2),  # a number as a condition: price != 0
        ("not price", 1),
        ("firm", 1),
        ("not (1 < price < 3)", 2),
    ],
)
def test_dnf_conjunction_counts(text, n):
    plan = compile_guard(text, Q, P)
    assert len(plan.spec) == n


def test_unsatisfiable_conjunctions_are_dropped_but_others_kept():
    plan = compile_guard("(vol < 1 and vol > 2) or (firm == 'a' and firm == 'b') or price < 3", Q, P)
    assert len(plan.spec) == 1
    assert [c for c, _ in plan.spec[0][0]] == ["price"]
    assert plan.predicates == [(0, "static", "price")]
    assert holds(plan, {}, price=2.0) and not holds(plan, {}, price=3.0)


def test_more_than_256_conjunctions_is_an_error():
    e = err(" and ".join(f"(vol < {i} or hot)" for i in range(9)))  # 2**9
    assert "more than 256 conjunctions" in e.message
    e = err(" or ".join(f"vol == {i}" for i in range(257)))
    assert "more than 256 conjunctions" in e.message
    assert str(e).startswith("<guard>:1:1: error: the guard expands to more than 256 conjunctions")
    # exactly 256 is fine
    assert len(compile_guard(" and ".join(f"(vol < {i} or hot)" for i in range(8)), Q, P).spec) <= 256
    assert len(compile_guard(" or ".join(f"vol == {i}" for i in range(256)), Q, P).spec) == 256


def test_numeric_in_with_more_than_256_elements_is_an_error():
    text = "vol in {" + ", ".join(map(str, range(300))) + "}"
    with pytest.raises(GuardError, match="more than 256 conjunctions"):
        compile_guard(text, Q, P)


def test_expansion_limit_is_enforced_before_enumerating(monkeypatch):
    import itertools

    from eventpy.guards import _compile

    drawn = [0]

    def bounded_product(*parts):
        for combo in itertools.product(*parts):
            drawn[0] += 1
            if drawn[0] > 100_000:
                raise AssertionError("enumerated more than 100000 combinations before refusing")
            yield combo

    monkeypatch.setattr(_compile, "product", bounded_product)
    text = "vol not in {" + ", ".join(str(2 * i) for i in range(30)) + "}"
    with pytest.raises(GuardError, match="more than 256 conjunctions"):
        compile_guard(text, Q, P)


# -- resolution errors ---------------------------------------------------------------------------
def test_name_neither_attribute_nor_parameter():
    e = err("price < foo")
    assert e.message == ("name 'foo' is neither an attribute of stocks.Quote (firm, price, vol, hot) "
                         "nor a parameter (limit, n, name, active, watch)")
    assert (e.line, e.column) == (1, 9)
    assert str(e).splitlines() == [
        "<guard>:1:9: error: " + e.message, "    price < foo", "            ^"]
    e = err("foo", params={})
    assert e.message.endswith("nor a parameter")


def test_name_both_attribute_and_parameter():
    e = err("price < 3", params={"price": float})
    assert e.message == ("name 'price' is both an attribute of stocks.Quote and a parameter; "
                         "rename the parameter")


def test_self_field_in_api_mode():
    e = err("price < self.limit")
    assert e.message == "self.limit can only be used in an event method guard; pass it as a parameter"
    assert (e.line, e.column) == (1, 9)


def test_epy_mode_bare_names_are_attributes_and_self_fields_parameters():
    e = err("price < limit", mode="epy")
    assert e.message == "name 'limit' is not a parameter of the event method; use self.limit for a field"
    plan = compile_guard("price < self.limit and firm in self.watch", Q, P, mode="epy")
    assert plan.predicates == [(0, "parametric", "price"), (0, "parametric", "firm")]
    assert plan.param_names == {"limit", "watch"}
    # in epy mode fields need no declaration
    plan = compile_guard("price < self.cap", Q, {}, mode="epy")
    assert holds(plan, {"cap": 5}, price=4.0) and not holds(plan, {"cap": 5}, price=5.0)


# -- type errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, message",
    [
        ("'IBM' < price", "matching: attribute 'price' of type float cannot be compared with 'IBM'"),
        ("price > 'IBM'", "matching: attribute 'price' of type float cannot be compared with 'IBM'"),
        ("price == name", "matching: attribute 'price' of type float cannot be compared with parameter 'name' "
         "(a string)"),
        # both sides named with what they hold (was "expression cannot be compared with parameter 'name'")
        ("elapsed() < name", "matching: elapsed() (a number) cannot be compared with parameter 'name' (a string)"),
        ("price * 2 == name", "matching: `price * 2` (a number) cannot be compared with parameter 'name' (a string)"),
        ("firm == 1", "matching: attribute 'firm' of type str cannot be compared with 1"),
        ("hot == 1", "matching: attribute 'hot' of type bool cannot be compared with 1"),
        ("vol in {1, 'a'}", "a set literal mixes values of kinds num, str; the values of one set are all "
         "of the kind of the attribute it is tested against"),
        ("firm in {'a', 2}", "a set literal mixes values of kinds num, str; the values of one set are all "
         "of the kind of the attribute it is tested against"),
        ("firm < 'IBM'", "matching: attribute 'firm' of type str cannot be ordered with '<'; use ==, != or in"),
        ("name >= firm", "matching: parameter 'name' cannot be ordered with '>='; use ==, != or in"),
        ("hot > False", "matching: attribute 'hot' of type bool cannot be ordered with '>'; use ==, != or in"),
        ("firm + 1 > 2", "'+' needs numbers, got attribute 'firm' of type str"),
        ("price < name * 2", "'*' needs numbers, got parameter 'name' of kind str"),
        ("-firm == 'a'", "unary minus needs numbers, got attribute 'firm' of type str"),
        ("abs(firm) > 1", "abs() needs numbers, got attribute 'firm' of type str"),
        ("hot * 2 > 1", "'*' needs numbers, got attribute 'hot' of type bool"),
        ("price == {1}", "a set can only be used with 'in' or 'not in', not '=='"),
        ("firm in 'IBM'", "'in' needs a set literal or a set-valued parameter on its right, got 'IBM'"),
        ("vol in watch", "an ordered attribute can be tested with 'in' only against a set literal"),
        ("(price < 1) + 1 > 0", "a comparison cannot be used as a value here"),
    ],
)
def test_type_errors(text, message):
    assert err(text).message == message


def test_type_error_position_and_rendering():
    e = err("price > 0 and\n    'IBM' < price")
    assert (e.line, e.column) == (2, 5)
    assert str(e) == ("<guard>:2:5: error: matching: attribute 'price' of type float cannot be "
                      "compared with 'IBM'\n        'IBM' < price\n        ^")


def test_non_whitelisted_call_lists_the_allowed_functions():
    for text, func in [("open('x') == 1", "open"), ("os.system('x') > 1", "os.system"),
                       ("eval('1') > 0", "eval"),
                       ("__import__('os') == 1", "__import__")]:
        e = err(text)
        assert e.message == (f"guard calls {func}(); only abs, min, max, round, math.sqrt, math.hypot, "
                             "math.floor, math.ceil may be called in a guard")
        assert set(FUNCTIONS) == {"abs", "min", "max", "round", "math.sqrt", "math.hypot",
                                  "math.floor", "math.ceil"}


_ONLY = "only abs, min, max, round, math.sqrt, math.hypot, math.floor, math.ceil may be called in a guard"


@pytest.mark.parametrize(
    "text, message",
    [
        ("vol in range(10)", f"guard calls range(); {_ONLY}: for a range, compare both ends (lo <= n < hi)"),
        ("vol not in range(1, 5)", f"guard calls range(); {_ONLY}: for a range, compare both ends (lo <= n < hi)"),
        ("int(price) == 3", f"guard calls int(); {_ONLY}: numbers compare across int and float as in Python; "
                            "to cut off the fraction, math.floor (or math.ceil below zero)"),
        ("float(vol) > 1.5", f"guard calls float(); {_ONLY}: numbers compare across int and float as in Python; "
                             "to cut off the fraction, math.floor (or math.ceil below zero)"),
        ("firm.startswith('I')", f"guard calls firm.startswith(); {_ONLY}: a guard compares whole strings "
                                 "(==, != or in {...}); keep what the method computes in a field, or test it in "
                                 "the body"),
        ("len(firm) > 2", f"guard calls len(); {_ONLY}: keep the length in a field, or test it in the body"),
        # a location service's distances and bearings: the advice names the shape brokers narrow
        ("math.dist(price, vol) < 3", f"guard calls math.dist(); {_ONLY}: for the distance between (x, y) and "
                                      "(px, py), write math.hypot(x - px, y - py), which brokers narrow to the "
                                      "events near (px, py)"),
        ("math.pow(price, 2) > 1", f"guard calls math.pow(); {_ONLY}: powers are not part of a guard (write "
                                   "x * x; for the distance between (x, y) and (px, py), write math.hypot(x - px, "
                                   "y - py), which brokers narrow to the events near (px, py))"),
        ("abs(price - 1) * math.cos(vol) < 3", f"guard calls math.cos(); {_ONLY}: compute it in a field the object "
                                               "keeps up to date (self.coslat = math.cos(...)), and compare with it "
                                               "(abs(lon - self.lon) <= self.r / self.coslat)"),
    ],
)
def test_python_calls_a_programmer_tries_say_what_to_write_instead(text, message):
    assert err(text).message == message


@pytest.mark.parametrize(
    "text, message",
    [
        ("abs(price, 2) > 1", "abs() takes 1 argument(s), got 2"),
        ("abs() > 1", "abs() takes 1 argument(s), got 0"),
        ("min(price) > 1", "min() takes 2 to 16 argument(s), got 1"),
        ("round(1, 2, 3) > 1", "round() takes 1 to 2 argument(s), got 3"),
        ("math.sqrt(price, 1) > 1", "math.sqrt() takes 1 argument(s), got 2"),
        ("math.hypot() > 1", "math.hypot() takes 1 to 16 argument(s), got 0"),
    ],
)
def test_wrong_arity_of_whitelisted_function(text, message):
    assert err(text).message == message


def test_unknown_parameter_types_are_checked_at_run_time_only():
    plan = compile_guard("price < x", Q, {"x": None})
    assert holds(plan, {"x": 3}, price=2.0)
    assert not holds(plan, {"x": "oops"}, price=2.0)  # cannot be evaluated: does not hold


# -- NaN parameters and evaluation errors: equivalent guards must agree ---------------------------
def test_nan_parameters_are_refused():
    # NaN breaks negation normal form (`not (price < nan)` is True, `price >= nan` False), so a
    # subscriber cannot set one: the client refuses it before anything is sent.
    from eventpy.runtime.client import ClientCore

    core = ClientCore("c")
    plan = compile_guard("price != limit", Q, P)
    with pytest.raises(ValueError, match="'limit' is NaN"):
        core.subscribe(Q, plan, {"limit": math.nan}, on_event=None)
    state = core.subscribe(Q, plan, {"limit": 1.0}, on_event=None)
    with pytest.raises(ValueError, match="'limit' is NaN"):
        core.update(state, {"limit": math.nan})


def test_numeric_in_with_an_element_that_cannot_be_evaluated():
    env = {"n": 1, "limit": 1.0}
    split = compile_guard("vol in {n, limit / 0}", Q, P)
    tree = compile_guard("vol * 1 in {n, limit / 0}", Q, P)
    assert not holds(tree, env, vol=1)
    assert holds(split, env, vol=1) == holds(tree, env, vol=1)
    # the elements are a switch: computable again, the equalities hold again
    split = compile_guard("vol in {n, limit / d}", Q, {**P, "d": int})
    assert not holds(split, {**env, "d": 0}, vol=1)
    assert holds(split, {**env, "d": 2}, vol=1) and holds(split, {**env, "limit": 4.0, "d": 2}, vol=2)
    assert not holds(split, {**env, "d": 2}, vol=3)
    # constants and plain parameters cannot fail: no switch is added for them
    assert all(kind != "switch" for _, kind, _ in compile_guard("vol in {n, 3}", Q, P).predicates)
    assert [kind for _, kind, _ in split.predicates].count("switch") == 2  # one per equality


def test_division_by_zero_makes_the_predicate_fail_not_the_subscription():
    plan = compile_guard("price < limit / n or firm == 'IBM'", Q, P)
    env = {"limit": 1.0, "n": 0}
    assert not holds(plan, env, firm="HP", price=-5.0)
    assert holds(plan, env, firm="IBM", price=-5.0)
    plan = compile_guard("price / vol > 1", Q, P)
    assert not holds(plan, {}, price=5.0, vol=0)
    plan = compile_guard("not (price / vol > 1)", Q, P)
    assert not holds(plan, {}, price=5.0, vol=0)
    plan = compile_guard("limit / n > 0 and hot", Q, P)
    assert not holds(plan, env, hot=True)


def test_numeric_not_in_with_a_nan_operand_does_not_hold_in_any_form():
    # `x not in {a, b}` is `x != a and x != b`, and a `!=` with a NaN side does not hold (README):
    # the plain attribute form (intervals at the brokers) said so, but the attribute-expression
    # and switch forms used Python's `not in`, which holds on NaN: `abs(price) not in {limit - limit}`
    # delivered what `price not in {limit - limit}` did not
    inf = {"limit": math.inf, "n": 1}
    for text in ("price not in {limit - limit}", "abs(price) not in {limit - limit}",
                 "price + 0 not in {limit - limit, 3}", "n not in {limit - limit, 3}",
                 "not (abs(price) in {limit - limit})"):
        assert not holds(compile_guard(text, Q, P), inf, price=1.0), text
    # a NaN on the left: `price * 0 not in {1}` is `price * 0 != 1`
    for text in ("price * 0 != 1", "price * 0 not in {1}", "limit * 0 not in {1}"):
        assert not holds(compile_guard(text, Q, P), inf, price=math.inf), text
    # `in` is a disjunction of equalities: a NaN element is one that fails, the others still count
    for text in ("price in {limit - limit, 1}", "abs(price) in {limit - limit, 1}", "n in {limit - limit, 1}"):
        assert holds(compile_guard(text, Q, P), inf, price=1.0), text
    assert not holds(compile_guard("price * 0 in {1}", Q, P), inf, price=math.inf)
