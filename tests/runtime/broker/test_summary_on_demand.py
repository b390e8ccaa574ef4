"""A broker keeps a type's summary only while a broker upstream reads it (NoSummary before the
first neighbor advertises the type, and after the last one withdraws). When a neighbor first
advertises it, the summary is built from the subscriptions held then, and what the neighbor gets
is exactly what a broker that had kept the summary all along would send it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.runtime.broker import Broker
from eventpy.runtime.broker._summaries_other import NoSummary
from eventpy.runtime.messages import Adv, Sub, Unadv, Unsub, Upd
from eventpy.runtime.model import INF, EventType, Interval, SetDelta, ValueSet

Q = EventType("Quote", firm=str, price=float)
# conjunction 0: firm in v0 and price in v1, while switch v2; conjunction 1: price in v3
SPEC = (((("firm", 0), ("price", 1)), 2, ()), ((("price", 3),), -1, ()))
POINTS = [-INF, 0.0, 1.0, 2.0, 3.0, INF]
intervals = st.builds(Interval, st.sampled_from(POINTS), st.booleans(), st.sampled_from(POINTS), st.booleans())
firms = st.builds(ValueSet, st.frozensets(st.sampled_from("abc"), max_size=2), st.just(False))
values_of = {0: firms, 1: intervals, 2: st.booleans(), 3: intervals}
ops = st.lists(st.one_of(
    st.tuples(st.just("sub"), st.sampled_from(["c1", "c2"]), st.integers(1, 3), firms, intervals, st.booleans(), intervals),
    st.tuples(st.just("unsub"), st.sampled_from(["c1", "c2"]), st.integers(1, 3)),
    st.tuples(st.just("upd"), st.sampled_from(["c1", "c2"]), st.integers(1, 3), st.integers(0, 3).flatmap(
        lambda var: st.tuples(st.just(var), values_of[var]))),
    st.tuples(st.just("delta"), st.sampled_from(["c1", "c2"]), st.integers(1, 3),
              st.frozensets(st.sampled_from("abc"), max_size=1), st.frozensets(st.sampled_from("abc"), max_size=1)),
), max_size=25)


def feed(brokers: list[Broker], ops: list, seqs: dict, live: set) -> None:
    for op in ops:
        link, sid = op[1], op[2]
        if op[0] == "sub":
            msg = Sub(Q.name, sid, SPEC, list(op[3:]))
            live.add((link, sid))
            seqs[link, sid] = 0
        elif op[0] == "unsub":
            if (link, sid) not in live:
                continue
            live.discard((link, sid))
            msg = Unsub(Q.name, sid)
        else:
            if (link, sid) not in live:
                continue
            seqs[link, sid] += 1
            var, value = (op[3] if op[0] == "upd" else (0, SetDelta(op[3], op[4])))
            msg = Upd(Q.name, sid, {var: (value, seqs[link, sid])})
        for b in brokers:
            b.handle(link, msg)


def sent_to(out: list, link: str) -> list:
    return [m for to, m in out if to == link]


@settings(max_examples=300, deadline=None)
@given(ops, ops, st.sampled_from(["attribute", "poset"]))
def test_a_summary_built_when_first_read_is_the_one_kept_all_along(before, after, summary):
    always, late = Broker("always", summary=summary), Broker("late", summary=summary)
    for b in (always, late):
        b.connect("c1", "client")
        b.connect("c2", "client")
        b.connect("up", "broker")
        b.handle("c1", Adv(Q.name, Q.to_wire()))  # a client's schema: no neighbor reads a summary yet
    always.handle("up", Adv(Q.name, Q.to_wire()))  # this one's neighbor advertised from the start
    seqs: dict = {}
    live: set = set()
    feed([always, late], before, seqs, live)
    assert isinstance(late.types[Q.name].summary, NoSummary)
    got = late.handle("up", Adv(Q.name, Q.to_wire()))  # the first reader: the summary is built now
    ts_a, ts_l = always.types[Q.name], late.types[Q.name]
    ts_a.summary.settle()
    want = ts_a.summary.summary_for("up")
    assert ts_l.summary.summary_for("up") == want
    subs = [m for m in sent_to(got, "up") if isinstance(m, Sub)]
    assert (len(subs) == 1) == bool(want)  # what it sends up is that summary, once
    feed([always, late], after, seqs, live)  # and both keep it alike from there on
    for ts in (ts_a, ts_l):
        ts.summary.settle()
    assert ts_l.summary.summary_for("up") == ts_a.summary.summary_for("up")


def test_the_summary_goes_with_the_last_reader_and_comes_back_with_the_next():
    b = Broker("edge")
    b.connect("c", "client")
    b.connect("up", "broker")
    b.handle("up", Adv(Q.name, Q.to_wire()))
    b.handle("c", Sub(Q.name, 1, SPEC, [ValueSet(frozenset({"a"})), Interval(0.0, True, 1.0, True), True,
                                        Interval(5.0, True, 6.0, True)]))
    first = b.types[Q.name].summary.summary_for("up")
    b.handle("up", Unadv(Q.name))
    assert isinstance(b.types[Q.name].summary, NoSummary)
    b.handle("c", Upd(Q.name, 1, {3: (Interval(7.0, True, 8.0, True), 1)}))  # kept nowhere but in the index
    out = b.handle("up", Adv(Q.name, Q.to_wire()))
    again = b.types[Q.name].summary.summary_for("up")
    # the attribute-wise LUB of both conjunctions (the second leaves firm open)
    assert first == [{"price": Interval(0.0, True, 6.0, True)}]
    assert again == [{"price": Interval(0.0, True, 8.0, True)}]
    assert any(isinstance(m, Sub) for m in sent_to(out, "up"))
    b.handle("c", Unsub(Q.name, 1))
