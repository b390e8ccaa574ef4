"""A set derived from another by a change (a UPD's SetDelta applied at a broker): its value is the
change applied, and what changed between the two is told exactly, whether or not it was derived."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.runtime.model import SetDelta, ValueSet, derive, set_changes, set_delta

members = st.frozensets(st.sampled_from("abcdefgh"), max_size=6)


@settings(max_examples=500, deadline=None)
@given(members, st.booleans(), members, members, members)
def test_a_derived_set_is_the_change_applied_and_its_changes_are_exact(old, exclude, removed, added, other):
    vs = ValueSet(old, exclude)
    new = SetDelta(removed, added).apply(vs)
    assert new == ValueSet((old - removed) | added, exclude)
    assert set_changes(vs, new) == (vs.values - new.values, new.values - vs.values)
    # a pair that was not derived (equal values, other objects; or any other set): computed
    twin = ValueSet(frozenset(old), exclude)
    assert set_changes(twin, new) == (old - new.values, new.values - old)
    assert set_changes(ValueSet(other), new) == (other - new.values, new.values - other)
    assert set_changes(new, vs) == (new.values - old, old - new.values)


def test_an_unchanged_set_is_the_same_object():
    vs = ValueSet(frozenset("abc"))
    assert SetDelta(frozenset("x"), frozenset("a")).apply(vs) is vs
    assert set_changes(vs, vs) == (frozenset(), frozenset())


def test_what_changed_in_a_large_set_is_known_without_a_pass_over_it(monkeypatch):
    """The broker's consumers (index, counts, the UPD upstream) take the change a SetDelta made,
    not the difference of the two sets again: set_changes answers from the derivation."""
    big = ValueSet(frozenset(f"F{i}" for i in range(50_000)))
    new = SetDelta(frozenset({"F0"}), frozenset({"NEW"})).apply(big)
    assert set_changes(big, new) == (frozenset({"F0"}), frozenset({"NEW"}))
    # the answer is the derivation's own objects (no set built from the 50,000 members)
    lost, gained = set_changes(big, new)
    assert lost is set_changes(big, new)[0] and gained is set_changes(big, new)[1]
    assert set_delta(big, new) == SetDelta(frozenset({"F0"}), frozenset({"NEW"}))
