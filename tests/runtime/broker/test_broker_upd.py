"""The broker's UPD path (Fig. 6 lines 33-38) against a model of what the clients hold.

Clients subscribe with two conjunctions, one behind a switch variable, then send random UPDs:
bound moves, wildcards, empty constraints, set changes (also as deltas), switches, several
variables in one message and stale sequence numbers. After every message the broker's index must
hold exactly the active conjunctions with the current values, what it last sent upstream must be
the attribute-wise LUB of them (000 §3.4; 001 §5.6), and events from upstream must reach exactly
the clients with a matching active conjunction.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Pub, Sub, Upd
from eventpy.runtime.model import (
    INF, EventType, Interval, SetDelta, ValueSet, filter_covers, filter_lub, filter_matches,
)

Q = EventType("Quote", firm=str, price=float)
CLIENTS = ("c1", "c2", "c3")
# conjunction 0: firm in v0 and price in v1, while switch v2; conjunction 1: price in v3
SPEC = (((("firm", 0), ("price", 1)), 2, ()), ((("price", 3),), -1, ()))
POINTS = [-INF, 0.0, 1.0, 2.0, 3.0, 4.0, INF]
EVENTS = [(f, p) for f in "abz" for p in (-INF, -1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0, INF)]

intervals = st.builds(Interval, st.sampled_from(POINTS), st.booleans(), st.sampled_from(POINTS),
                      st.booleans())
firms = st.builds(ValueSet, st.frozensets(st.sampled_from("abc"), max_size=2), st.booleans())


def initial(i: int) -> list:
    return [ValueSet(frozenset({"a"})), Interval(float(i), True, i + 1.5, False), True,
            Interval(float(i), False, i + 0.5, True)]


values_of = {0: firms, 1: intervals, 2: st.booleans(), 3: intervals}
change = st.integers(0, 3).flatmap(lambda var: st.tuples(st.just(var), values_of[var]))
messages = st.lists(
    st.tuples(st.sampled_from(CLIENTS), st.lists(change, min_size=1, max_size=3),
              st.integers(-1, 3), st.booleans()),
    min_size=1, max_size=25)


def active_filters(model: dict) -> dict:
    out = {}
    for link, vals in model.items():
        for ci, (cons, switch, _) in enumerate(SPEC):
            if switch < 0 or vals[switch]:
                out[(link, 1, ci)] = {a: vals[v] for a, v in cons if not vals[v].is_wildcard()}
    return out


def lub(filters: dict) -> list:
    acc = None
    for flt in filters.values():
        if any(c.is_empty() for c in flt.values()):
            continue
        acc = dict(flt) if acc is None else filter_lub(acc, flt)
    if acc is None:
        return []
    return [{a: c for a, c in acc.items() if not c.is_wildcard()}]


@pytest.mark.parametrize("matcher,summary", [("naive", "attribute"), ("poset", "attribute"),
                                             ("fastint", "attribute"), ("fastint", "poset")])
@settings(max_examples=150, deadline=None)
@given(msgs=messages)
# an entry of several on c1, wild on firm, leaves the aggregate (its price empty): the aggregate
# gets firm back, which an in-place move of the entry (a summary cost fix) had left out
@example(msgs=[("c1", [(2, False)], 0, False), ("c1", [(1, Interval(-INF, False, 1.0, False))], 1, False),
               ("c2", [(3, Interval(-INF, False, -INF, False))], 1, False),
               ("c1", [(2, False), (3, Interval(-INF, False, -INF, False))], 0, False),
               ("c3", [(3, Interval(-INF, False, -INF, False))], 1, False)])
def test_updates_keep_index_summary_and_routing_exact(matcher, summary, msgs):
    b = Broker("edge", mode="parametric", matcher=matcher, summary=summary)
    b.connect("up", "broker")
    b.handle("up", Adv("Quote", Q.to_wire()))
    model, seqs = {}, {}
    for i, link in enumerate(CLIENTS):
        b.connect(link, "client")
        model[link] = initial(i)
        seqs[link] = [0] * 4
        b.handle(link, Sub("Quote", 1, SPEC, list(model[link])))
    ts = b.types["Quote"]
    pub_seq = 0
    for link, changes, stale_at, as_delta in msgs:
        upd = {}
        for n, (var, value) in enumerate(dict(changes).items()):  # one change per variable
            seqs[link][var] += 1
            seq = seqs[link][var]
            if n == stale_at:
                seq = 0  # older than anything applied: dropped
            else:
                old = model[link][var]
                model[link][var] = value
                if as_delta and var == 0 and old.exclude == value.exclude:
                    value = SetDelta(old.values - value.values, value.values - old.values)
            upd[var] = (value, seq)
        b.handle(link, Upd("Quote", 1, upd))
        assert not b.stats["refused"]

        want = active_filters(model)
        assert {k: dict(ts.matcher.filter_of(k)) for k in ts.matcher.keys()} == want
        sent = ts.sent.get("up")
        sent = sent.filters if sent is not None else []
        if summary == "attribute":
            assert sent == lub(want)
        else:  # the poset's roots: every live conjunction is covered by one of them
            for flt in want.values():
                assert any(c.is_empty() for c in flt.values()) or any(
                    filter_covers(root, flt) for root in sent), (flt, sent)
        for values in EVENTS:
            pub_seq += 1
            out = b.handle("up", Pub("Quote", values, "p", pub_seq, 0.0))
            got = {target for target, m in out}
            expect = {k[0] for k, f in want.items() if filter_matches(f, Q.index, values)}
            assert got == expect, (values, want)


@pytest.mark.parametrize("summary", ["attribute", "poset"])
def test_a_set_summary_travels_upstream_as_its_change(summary):
    """A member added to a large set moves the edge's summary by one member: the UPD upstream
    carries that member (a SetDelta, as a client's does), not the whole set again, and the broker
    upstream ends with the whole new set."""
    edge = Broker("edge", mode="parametric", matcher="fastint", summary=summary)
    root = Broker("root", mode="parametric", matcher="fastint", summary=summary)
    root.connect("pub", "client")
    root.connect("edge", "broker")
    edge.connect("root", "broker")
    for target, msg in root.handle("pub", Adv("Quote", Q.to_wire())):
        assert target == "edge"
        edge.handle("root", msg)
    members = frozenset(f"F{i}" for i in range(2000))
    edge.connect("c", "client")
    spec = (((("firm", 0),), -1, ()),)
    for target, msg in edge.handle("c", Sub("Quote", 1, spec, [ValueSet(members)])):
        root.handle("edge", msg)
    out = edge.handle("c", Upd("Quote", 1, {0: (SetDelta(frozenset(), frozenset({"NEW"})), 1)}))
    (target, upd), = out
    assert target == "root" and type(upd) is Upd
    (value, _), = upd.changes.values()
    assert value == SetDelta(frozenset(), frozenset({"NEW"}))
    assert not root.handle("edge", upd)
    assert not root.stats["refused"]
    (state,) = root.types["Quote"].subs.values()
    assert state.filter(0) == {"firm": ValueSet(members | {"NEW"})}
    assert [t for t, _ in root.handle("pub", Pub("Quote", ("NEW", 1.0), "p", 1, 0.0))] == ["edge"]
