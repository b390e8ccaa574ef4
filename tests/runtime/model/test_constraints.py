"""The subscription model, checked against its definitions (paper 000 §3.1, paper 001 §4).

Covering is `a ⊒ b iff every value admitted by b is admitted by a`. That is decidable from a
finite sample only where the sample is exhaustive:

* intervals whose bounds are integers in [-3, 3] or ±inf: every region of the line they cut out
  (a bound itself, the open stretch between two consecutive integers, ±inf themselves) holds one
  of the points {±inf} ∪ {k/2 : -8 <= k <= 8}, so "every sample point of b is in a" is exactly
  "a covers b";
* value sets over the infinite domain of strings built from the universe {a, b, c, d}: one fresh
  value ("zz") stands for every value no set mentions, so U ∪ {fresh} is exhaustive. (A bool
  domain is finite and ValueSet does not know the domain, so there covering is only sound.)
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.runtime.model import (
    ANY_VALUE,
    EVERYTHING,
    INF,
    EventType,
    Interval,
    ValueSet,
    filter_covers,
    filter_lub,
    filter_matches,
    filter_str,
)

# -- strategies --------------------------------------------------------------------------------
BOUNDS = [-INF, -3, -2, -1, 0, 1, 2, 3, INF]
POINTS = [-INF, *(k / 2 for k in range(-8, 9)), INF]  # exhaustive for BOUNDS (see module doc)
UNIVERSE = ["a", "b", "c", "d"]
FRESH = "zz"
SET_POINTS = [*UNIVERSE, FRESH]

bounds = st.sampled_from(BOUNDS)
intervals = st.builds(Interval, bounds, st.booleans(), bounds, st.booleans())
value_sets = st.builds(ValueSet, st.frozensets(st.sampled_from(UNIVERSE)), st.booleans())


def points_of(c) -> list:
    pts = POINTS if isinstance(c, Interval) else SET_POINTS
    return [p for p in pts if c.contains(p)]


def empty(iv: Interval) -> bool:
    return not points_of(iv)


def sample_covers(a, b) -> bool:
    return all(a.contains(p) for p in points_of(b))


# -- Interval.contains / is_empty --------------------------------------------------------------
@pytest.mark.parametrize(
    "iv, inside, outside",
    [
        (Interval(1, True, 2, True), [1, 1.5, 2], [0.999, 2.001, -INF, INF]),
        (Interval(1, False, 2, True), [1.0001, 2], [1, 1.0, 0]),
        (Interval(1, True, 2, False), [1, 1.9999], [2, 2.0, 3]),
        (Interval(1, False, 2, False), [1.5], [1, 2]),
        (Interval(-INF, True, 0, False), [-INF, -1e308, -0.5], [0, -0.0, 0.0, INF]),
        (Interval(-INF, False, 0, True), [-1e308, 0, -0.0], [-INF, 1e-300]),
        (Interval(5, False, INF, True), [5.5, 1e308, INF], [5, -INF]),
        (Interval(5, True, INF, False), [5, 1e308], [INF, 4]),
        (EVERYTHING, [-INF, 0, INF, 10**30], []),
        (Interval(3, True, 3, True), [3, 3.0], [2.9999, 3.0001]),
        (Interval(INF, True, INF, True), [INF], [1e308]),
    ],
)
def test_interval_contains_at_bounds(iv, inside, outside):
    for v in inside:
        assert iv.contains(v), (iv, v)
    for v in outside:
        assert not iv.contains(v), (iv, v)


@pytest.mark.parametrize(
    "iv, is_empty",
    [
        (Interval(1, True, 1, True), False),
        (Interval(1, False, 1, True), True),
        (Interval(1, True, 1, False), True),
        (Interval(1, False, 1, False), True),
        (Interval(2, True, 1, True), True),
        (Interval(1, False, 1.0000001, False), False),
        (Interval(-INF, True, -INF, True), False),  # contains -inf itself
        (Interval(-INF, False, -INF, True), True),
        (Interval(INF, True, -INF, True), True),
        (EVERYTHING, False),
    ],
)
def test_interval_is_empty_examples(iv, is_empty):
    assert iv.is_empty() is is_empty


def test_interval_wildcard_and_str():
    assert EVERYTHING.is_wildcard()
    assert not Interval(-INF, True, 0, True).is_wildcard()
    # open at an infinity: rejects the infinite value itself, so not a wildcard
    assert not Interval(-INF, False, INF, True).is_wildcard()
    assert not Interval(-INF, True, INF, False).is_wildcard()
    assert str(Interval(1, False, 2, True)) == "(1, 2]"
    assert str(Interval(-INF, True, 0.5, False)) == "[-inf, 0.5)"


@given(intervals)
def test_interval_is_empty_iff_no_point(iv):
    assert iv.is_empty() == empty(iv)


@given(intervals, st.floats(allow_nan=False))
def test_interval_contains_matches_definition(iv, v):
    lo_ok = v > iv.lo or (iv.lo_closed and v == iv.lo)
    hi_ok = v < iv.hi or (iv.hi_closed and v == iv.hi)
    assert iv.contains(v) == (lo_ok and hi_ok)


# -- Interval.covers ----------------------------------------------------------------------------
@given(intervals, intervals)
def test_interval_covers_is_sound_and_complete(a, b):
    # the sample grid is exhaustive for these bounds, so both directions hold
    assert a.covers(b) == sample_covers(a, b), (a, b)


@given(intervals, intervals, st.floats(allow_nan=False, min_value=-5, max_value=5))
def test_interval_covers_is_sound_on_any_point(a, b, v):
    if a.covers(b) and b.contains(v):
        assert a.contains(v)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (Interval(0, True, 1, True), Interval(0, False, 1, False), True),
        (Interval(0, False, 1, False), Interval(0, True, 1, True), False),
        (Interval(0, False, 1, True), Interval(0, True, 0.5, True), False),
        (EVERYTHING, Interval(-INF, True, INF, True), True),
        (Interval(-INF, False, INF, False), EVERYTHING, False),  # ±inf themselves
        (Interval(5, True, 6, True), Interval(9, True, 1, True), True),  # empty is covered
        (Interval(5, True, 5, False), Interval(7, True, 7, False), True),
        (Interval(1, True, 1, True), Interval(1, True, 1, True), True),
    ],
)
def test_interval_covers_examples(a, b, expected):
    assert a.covers(b) is expected


@given(intervals)
def test_interval_covers_is_reflexive(a):
    assert a.covers(a)


@given(intervals, intervals, intervals)
def test_interval_covers_is_transitive(a, b, c):
    if a.covers(b) and b.covers(c):
        assert a.covers(c)


# -- Interval.lub / intersect -------------------------------------------------------------------
@given(intervals, intervals)
def test_interval_lub_covers_both(a, b):
    u = a.lub(b)
    assert u.covers(a) and u.covers(b)
    assert sample_covers(u, a) and sample_covers(u, b)


@given(intervals, intervals, intervals)
def test_interval_lub_is_least(a, b, c):
    if sample_covers(c, a) and sample_covers(c, b):
        assert sample_covers(c, a.lub(b)), (a, b, c, a.lub(b))
        assert c.covers(a.lub(b))


@given(intervals, intervals)
def test_interval_lub_is_symmetric_on_points(a, b):
    assert points_of(a.lub(b)) == points_of(b.lub(a))


def test_interval_lub_examples():
    assert Interval(0, False, 1, True).lub(Interval(0, True, 0.5, False)) == Interval(0, True, 1, True)
    assert Interval(0, True, 1, False).lub(Interval(2, True, 3, True)) == Interval(0, True, 3, True)
    empty_iv = Interval(3, True, 1, True)
    assert empty_iv.lub(Interval(7, False, 8, False)) == Interval(7, False, 8, False)
    assert Interval(7, False, 8, False).lub(empty_iv) == Interval(7, False, 8, False)


@given(intervals, intervals)
def test_interval_intersect_is_exactly_the_common_points(a, b):
    i = a.intersect(b)
    for p in POINTS:
        assert i.contains(p) == (a.contains(p) and b.contains(p)), (a, b, p)
    assert i.is_empty() == (not points_of(i))


@given(intervals, intervals, st.floats(allow_nan=False))
def test_interval_intersect_on_any_float(a, b, v):
    assert a.intersect(b).contains(v) == (a.contains(v) and b.contains(v))


# -- ValueSet ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "vs, inside, outside",
    [
        (ValueSet(frozenset({"a", "b"})), ["a", "b"], ["c", "", FRESH]),
        (ValueSet(frozenset({"a"}), True), ["b", "", FRESH], ["a"]),
        (ValueSet(frozenset()), [], ["a", "", FRESH]),
        (ANY_VALUE, ["a", "", FRESH], []),
        (ValueSet(frozenset({True})), [True], [False]),
        (ValueSet(frozenset({False}), True), [True], [False]),
    ],
)
def test_value_set_contains(vs, inside, outside):
    for v in inside:
        assert vs.contains(v)
    for v in outside:
        assert not vs.contains(v)


def test_value_set_empty_wildcard_and_str():
    assert ValueSet(frozenset()).is_empty() and not ValueSet(frozenset()).is_wildcard()
    assert ANY_VALUE.is_wildcard() and not ANY_VALUE.is_empty()
    assert not ValueSet(frozenset({"a"}), True).is_empty()
    assert not ValueSet(frozenset({"a"}), True).is_wildcard()
    assert str(ValueSet(frozenset({"b", "a"}))) == "in {'a', 'b'}"
    assert str(ValueSet(frozenset({"a"}), True)) == "not in {'a'}"


@given(value_sets)
def test_value_set_is_empty_iff_no_value(vs):
    assert vs.is_empty() == (not points_of(vs))
    assert vs.is_wildcard() == (len(points_of(vs)) == len(SET_POINTS))


@given(value_sets, value_sets)
def test_value_set_covers_is_sound_and_complete(a, b):
    assert a.covers(b) == sample_covers(a, b), (a, b)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (ValueSet(frozenset("ab")), ValueSet(frozenset("a")), True),
        (ValueSet(frozenset("a")), ValueSet(frozenset("ab")), False),
        (ValueSet(frozenset("ab")), ValueSet(frozenset("c"), True), False),  # include never covers exclude
        (ValueSet(frozenset("c"), True), ValueSet(frozenset("ab")), True),
        (ValueSet(frozenset("a"), True), ValueSet(frozenset("ab")), False),
        (ValueSet(frozenset("a"), True), ValueSet(frozenset("ab"), True), True),
        (ValueSet(frozenset("ab"), True), ValueSet(frozenset("a"), True), False),
        (ValueSet(frozenset()), ValueSet(frozenset()), True),
        (ValueSet(frozenset()), ANY_VALUE, False),
        (ANY_VALUE, ValueSet(frozenset("xyz"), True), True),
        # bool: sound, not domain-complete ({True} excluded is {False} on bool, but not in general)
        (ValueSet(frozenset({True}), True), ValueSet(frozenset({False})), True),
    ],
)
def test_value_set_covers_examples(a, b, expected):
    assert a.covers(b) is expected


@given(value_sets, value_sets)
def test_value_set_lub_is_exactly_the_union(a, b):
    # the union of two representable sets is representable, so the lub is the union
    u = a.lub(b)
    for p in SET_POINTS:
        assert u.contains(p) == (a.contains(p) or b.contains(p)), (a, b, u, p)
    assert u.covers(a) and u.covers(b)


@given(value_sets, value_sets, value_sets)
def test_value_set_lub_is_least(a, b, c):
    if c.covers(a) and c.covers(b):
        assert c.covers(a.lub(b))


@given(value_sets, value_sets)
def test_value_set_intersect_is_exactly_the_common_values(a, b):
    i = a.intersect(b)
    for p in SET_POINTS:
        assert i.contains(p) == (a.contains(p) and b.contains(p)), (a, b, i, p)


@pytest.mark.parametrize(
    "a, b, lub, inter",
    [
        (ValueSet(frozenset("ab")), ValueSet(frozenset("bc")), ValueSet(frozenset("abc")), ValueSet(frozenset("b"))),
        (ValueSet(frozenset("ab"), True), ValueSet(frozenset("bc"), True),
         ValueSet(frozenset("b"), True), ValueSet(frozenset("abc"), True)),
        (ValueSet(frozenset("ab")), ValueSet(frozenset("bc"), True),
         ValueSet(frozenset("c"), True), ValueSet(frozenset("a"))),
        (ValueSet(frozenset("bc"), True), ValueSet(frozenset("ab")),
         ValueSet(frozenset("c"), True), ValueSet(frozenset("a"))),
    ],
)
def test_value_set_include_exclude_combinations(a, b, lub, inter):
    assert a.lub(b) == lub
    assert a.intersect(b) == inter


# -- multi-attribute filters ---------------------------------------------------------------------
FT = EventType("T", x=float, s=str)
F_EVENTS = [(s, x) for x in POINTS for s in SET_POINTS]  # (s, x) pairs; index below
F_INDEX = {"x": 1, "s": 0}
filters = st.fixed_dictionaries({}, optional={"x": intervals, "s": value_sets})


def f_points(flt) -> list:
    return [e for e in F_EVENTS if filter_matches(flt, F_INDEX, e)]


def f_sample_covers(a, b) -> bool:
    return all(filter_matches(a, F_INDEX, e) for e in f_points(b))


def test_filter_matches_examples():
    t = EventType("Q", firm=str, price=float, vol=int)
    flt = {"firm": ValueSet(frozenset({"IBM"})), "price": Interval(-INF, True, 100, False)}
    assert filter_matches(flt, t.index, ("IBM", 99.0, 5))
    assert not filter_matches(flt, t.index, ("IBM", 100.0, 5))
    assert not filter_matches(flt, t.index, ("HP", 1.0, 5))
    assert filter_matches({}, t.index, ("HP", 1.0, 5))  # no constraint: wildcard
    assert filter_str({}) == "true"
    assert filter_str(flt) == "firm in {'IBM'} and price in [-inf, 100)"


@given(filters, filters)
@settings(max_examples=300)
def test_filter_covers_is_complete(a, b):
    # the grid is exhaustive per attribute and a filter is a product, so this is exact
    if f_sample_covers(a, b):
        assert filter_covers(a, b), (a, b)


@given(filters, filters)
@settings(max_examples=300)
def test_filter_covers_is_sound(a, b):
    # every event (±inf included: they are legal event values) matching b matches a
    if filter_covers(a, b):
        for e in f_points(b):
            assert filter_matches(a, F_INDEX, e), (a, b, e)


def test_filter_covers_is_sound_at_infinity():
    a = {"x": Interval(-INF, True, INF, False)}  # what `x < limit` compiles to with limit = inf
    b: dict = {}
    ev = FT.values_from({"x": INF, "s": "a"})  # inf is a legal event value (only NaN is refused)
    assert filter_matches(b, FT.index, ev) and not filter_matches(a, FT.index, ev)
    assert not a["x"].is_wildcard()
    assert not filter_covers(a, b)
    assert filter_lub(a, {"x": Interval(0, True, 1, True)}) == a  # not dropped as a wildcard


def test_filter_covers_examples():
    ibm = {"s": ValueSet(frozenset("a"))}
    cheap = {"x": Interval(-INF, True, 1, False)}
    both = {**ibm, **cheap}
    assert filter_covers(ibm, both) and filter_covers(cheap, both)
    assert not filter_covers(both, ibm)
    assert filter_covers({}, both)
    assert filter_covers({"x": EVERYTHING}, ibm)  # an explicit wildcard covers a missing attribute
    assert filter_covers(both, {"x": Interval(3, True, 1, True)})  # empty is covered by anything
    assert not filter_covers({"s": ValueSet(frozenset("ab"))}, {})


@given(filters, filters)
@settings(max_examples=300)
def test_filter_lub_covers_both(a, b):
    u = filter_lub(a, b)
    assert f_sample_covers(u, a) and f_sample_covers(u, b), (a, b, u)
    assert filter_covers(u, a) and filter_covers(u, b)
    assert not any(c.is_wildcard() for c in u.values())


@given(filters, filters, filters)
@settings(max_examples=300)
def test_filter_lub_is_least_for_non_empty_filters(a, b, c):
    if not f_points(a) or not f_points(b):
        return  # an empty conjunction contributes its other constraints: sound, not least
    if f_sample_covers(c, a) and f_sample_covers(c, b):
        assert f_sample_covers(c, filter_lub(a, b)), (a, b, c, filter_lub(a, b))


def test_filter_lub_examples():
    a = {"x": Interval(0, True, 1, True), "s": ValueSet(frozenset("a"))}
    b = {"x": Interval(2, True, 3, False)}
    assert filter_lub(a, b) == {"x": Interval(0, True, 3, False)}  # s absent in b: wildcard
    assert filter_lub(a, a) == a
    # a lub that is the wildcard is left out
    assert filter_lub({"x": Interval(-INF, True, 0, True)}, {"x": Interval(0, True, INF, True)}) == {}
    assert filter_lub({"s": ValueSet(frozenset("a"), True)}, {"s": ValueSet(frozenset("b"), True)}) == {}
