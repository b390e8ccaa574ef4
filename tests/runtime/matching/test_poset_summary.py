"""The poset's summary for a neighbor (000 §3.4, Fig. 2 line 18 `pubs[τ] \\ pj`): the roots of
the entries held from other links, and nothing they cover.

A broker's poset holds every link's entries; the summary for a neighbor skips the neighbor's own.
Below a skipped root, a node may also lie under a kept one, which covers it: sending it too made
the summary larger than the LUB of the kept entries (a neighbor held a subscription more than
needed; found by the convergence fuzz with the poset summary).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventpy.runtime.matching import PosetMatcher
from eventpy.runtime.model import INF, EventType, Interval, ValueSet, filter_covers

Q = EventType("Q", firm=str, price=float)


def test_a_node_under_a_skipped_root_and_a_kept_one_is_not_sent() -> None:
    p = PosetMatcher(Q)
    p.add(("b4", 1), {"price": Interval(-INF, True, 3.0, False)})  # the neighbor's own entry
    p.add(("c1", 1), {"firm": ValueSet(frozenset({"ORCL"}), True)})
    p.add(("c2", 1), {"firm": ValueSet(frozenset({"IBM"}), False),
                      "price": Interval(-3.5, False, 2.5, False)})  # under both roots
    got = p.summary(skip=lambda key: key[0] == "b4")
    assert got == [{"firm": ValueSet(frozenset({"ORCL"}), True)}]


def test_a_node_under_a_skipped_chain_and_a_kept_grandparent_is_not_sent() -> None:
    p = PosetMatcher(Q)
    p.add(("n", 1), {"price": Interval(-INF, True, 10.0, True)})
    p.add(("n", 2), {"price": Interval(-INF, True, 5.0, True)})
    p.add(("k", 1), {"firm": ValueSet(frozenset({"IBM", "HP"}), False)})
    p.add(("k", 2), {"firm": ValueSet(frozenset({"IBM"}), False)})  # under k1, not a root
    p.add(("c", 1), {"firm": ValueSet(frozenset({"IBM"}), False), "price": Interval(0.0, True, 1.0, True)})
    got = p.summary(skip=lambda key: key[0] == "n")
    assert got == [{"firm": ValueSet(frozenset({"IBM", "HP"}), False)}]


_RUNS = int(os.environ.get("EVENTPY_FUZZ", "0"))  # EVENTPY_FUZZ=N: N random examples (a hunt)
FIRMS = ("a", "b", "c")
_bounds = st.sampled_from([-INF, 0.0, 1.0, 2.0, 3.0, INF])


@st.composite
def filters(draw) -> dict:
    flt: dict = {}
    if draw(st.booleans()):
        flt["firm"] = ValueSet(frozenset(draw(st.sets(st.sampled_from(FIRMS), min_size=1))), draw(st.booleans()))
    if draw(st.booleans()):
        lo, hi = sorted((draw(_bounds), draw(_bounds)))
        flt["price"] = Interval(lo, lo == -INF or draw(st.booleans()), hi, hi == INF or draw(st.booleans()))
    return flt


ops = st.lists(st.tuples(st.sampled_from(["add", "remove", "update"]), st.integers(0, 5), filters(),
                         st.sampled_from(["firm", "price"])), max_size=16)


@settings(max_examples=_RUNS or 300, derandomize=not _RUNS, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, neighbor=st.integers(0, 2))
def test_summary_for_a_neighbor_is_minimal_and_covers(ops, neighbor) -> None:
    """After any sequence of changes: every kept entry is covered by a disjunct, no disjunct is
    covered by another, and there are as many as in a poset built from the kept entries alone.
    (PosetMatcher.update's in-place path may leave a covering pair unlinked, which the matcher
    allows, see its docstring; the summaries re-insert an entry that changes.)"""
    p = PosetMatcher(Q)
    live: dict[tuple, dict] = {}
    for op, k, flt, attr in ops:
        key = (k % 3, k)  # (link, entry)
        if op == "add" and key not in live:
            p.add(key, flt)
            live[key] = flt
        elif op == "remove" and key in live:
            p.remove(key)
            del live[key]
        elif op == "update" and key in live:  # as PosetSummary.update_entry does it
            new = dict(live[key])
            new.pop(attr, None)
            if attr in flt:
                new[attr] = flt[attr]
            p.remove(key)
            p.add(key, new)
            live[key] = new
    p.check()
    got = p.summary(skip=lambda key: key[0] == neighbor)
    kept = [f for key, f in live.items() if key[0] != neighbor and not any(c.is_empty() for c in f.values())]
    for f in kept:
        assert any(filter_covers(d, f) for d in got), (f, got)
    for i, d in enumerate(got):
        for j, e in enumerate(got):
            assert i == j or not filter_covers(e, d), (d, e, got)
    fresh = PosetMatcher(Q)
    for i, f in enumerate(kept):
        fresh.add(i, f)
    assert len(got) == len(fresh.summary())


def test_an_ordered_summary_is_sorted_and_computes_each_nodes_key_once(monkeypatch) -> None:
    """A broker sorts the summary it sends at every change; the sort keys (the constraints' text)
    were most of a moving fleet's cost: each node's key is now computed once while its filter stays."""
    from eventpy.runtime.matching import _poset

    p = PosetMatcher(Q)
    for i in range(40):
        p.add(("c", i), {"firm": ValueSet(frozenset({"abc"[i % 3]}), False),
                         "price": Interval(float(i), True, i + 0.5, False)})
    calls = []
    real = _poset.order_key
    monkeypatch.setattr(_poset, "order_key", lambda flt: calls.append(1) or real(flt))
    first = p.summary(skip=lambda key: key[1] == 3, ordered=True)
    assert first == sorted(p.summary(skip=lambda key: key[1] == 3), key=real)
    assert len(calls) == 39
    p.update(("c", 5), "price", Interval(100.0, True, 101.0, True))
    again = p.summary(skip=lambda key: key[1] == 3, ordered=True)
    assert again == sorted(again, key=real) and len(calls) == 40  # only the moved node's key
