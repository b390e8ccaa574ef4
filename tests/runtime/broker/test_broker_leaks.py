"""A broker's tables shrink back when what filled them goes: the cases test_convergence found, each
on the sans-I/O broker alone (an overlay runs for days; state that only grows is a defect even
while every event still arrives)."""

from __future__ import annotations

import logging
import sys

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker, _broker
from eventpy.runtime.broker._summaries_other import NoSummary
from eventpy.runtime.messages import Ack, AckReq, Adv, Pub, Sub, Unadv, Unsub, Upd
from eventpy.runtime.model import EventType

from _tables import leftovers

Q = EventType("lk.Quote", firm=str, price=float)


def sub(guard: str, sid: int, etype: EventType = Q, **params) -> Sub:
    plan = compile_guard(guard, etype, {k: type(v) for k, v in params.items()})
    return Sub(etype.name, sid, plan.spec, plan.evaluate(params))


def test_root_broker_forgets_clients_that_left_its_summary():
    # a broker nothing upstream reads summaries from (the root of an overlay, the embedded one)
    # never settled its summary: each client that subscribed and left stayed in it for good. It
    # keeps none now (NoSummary): nothing to settle, nothing left
    b = Broker("root")
    b.connect("pub", "client")
    b.handle("pub", Adv(Q.name, Q.to_wire()))
    for i in range(50):
        link = f"c{i}"
        b.connect(link, "client")
        b.handle(link, sub("price < limit", 1, limit=float(i)))
        if i % 2:
            b.handle(link, Unsub(Q.name, 1))
        b.disconnect(link)
    assert isinstance(b.types[Q.name].summary, NoSummary)
    assert leftovers(b, {"pub"}) == {"types": [Q.name], f"{Q.name}.pubs": {"pub"}}


def test_a_client_that_unsubscribes_everything_leaves_nothing_in_the_summary():
    b = Broker("edge")
    b.connect("up", "broker")
    b.connect("c", "client")
    b.handle("up", Adv(Q.name, Q.to_wire()))
    for sid in range(1, 20):
        b.handle("c", sub("price < limit", sid, limit=float(sid)))
        b.handle("c", Unsub(Q.name, sid))
    summary = b.types[Q.name].summary
    assert summary._dirty == set() and summary.entries == {}


def test_summary_bounds_go_when_the_last_subscriber_leaves():
    # the per-attribute heaps dropped departed links lazily, compacting only on a push: the
    # bounds of every client that ever subscribed stayed until the next subscription
    b = Broker("edge")
    b.connect("up", "broker")
    b.handle("up", Adv(Q.name, Q.to_wire()))
    for i in range(40):
        b.connect(f"c{i}", "client")
        b.handle(f"c{i}", sub("price > lo and price < hi", 1, lo=float(-i), hi=float(i)))
    for i in range(40):
        b.disconnect(f"c{i}")
    summary = b.types[Q.name].summary
    assert [len(h.heap) for h in (*summary.lo.values(), *summary.hi.values())] == [0, 0]
    assert summary.aggs == {} and summary.entries == {}


def test_a_type_nothing_refers_to_is_forgotten():
    # programs that make classes on the fly advertise a new event type each: every broker kept
    # each type, with its matcher and summary, for as long as it ran
    a, b = Broker("a"), Broker("b")
    a.connect("b", "broker")
    b.connect("a", "broker")
    a.connect("p", "client")
    for i in range(30):
        t = EventType(f"lk.Made{i}", x=int)
        for msg in (Adv(t.name, t.to_wire()), Pub(t.name, (1,), "p", i, 0.0)):
            for link, fwd in a.handle("p", msg):
                assert link == "b"
                b.handle("a", fwd)
        for link, fwd in (a.handle("p", Unadv(t.name)) if i % 2 else a.disconnect("p")):
            b.handle("a", fwd)
        if not i % 2:
            a.connect("p", "client")
    # a client that unadvertised may still subscribe without telling the schema again (it told it
    # once): its broker keeps such a type until it leaves (each disconnect above took the
    # earlier ones); the broker beyond forgot them already
    assert sorted(a.types) == ["lk.Made29"] and b.types == {}
    a.disconnect("p")
    assert a.types == {}
    assert leftovers(a, {"b", "p"}) == {} and leftovers(b, {"a"}) == {}


def test_a_subscriber_keeps_its_type_while_it_is_connected():
    # its schema-only ADV is sent once: a later SUB must still find the type after its
    # subscriptions all closed
    b = Broker("root")
    b.connect("c", "client")
    b.handle("c", Adv(Q.name, Q.to_wire(), publishes=False))
    b.handle("c", sub("price < 1.0", 1))
    b.handle("c", Unsub(Q.name, 1))
    assert Q.name in b.types
    b.handle("c", sub("price < 2.0", 2))
    assert b.subscription_count() == 1
    b.disconnect("c")
    assert b.types == {}


def test_a_publisher_that_unadvertises_keeps_the_type_of_its_subscriptions():
    b = Broker("root")
    b.connect("c", "client")
    b.handle("c", Adv(Q.name, Q.to_wire()))
    b.handle("c", Unadv(Q.name))
    b.handle("c", sub("price < 2.0", 1))  # it told the schema: its SUB is accepted
    assert b.subscription_count() == 1


def test_acknowledgements_forget_a_broker_link_that_went():
    # the changes of link c went to broker up; up's link drops: c's note kept "up" until c's
    # next AckReq, which then asked the link of that name that came back for changes it never saw
    b = Broker("edge")
    b.connect("up", "broker")
    b.connect("c", "client")
    b.handle("up", Adv(Q.name, Q.to_wire()))
    assert [link for link, _ in b.handle("c", sub("price < 1.0", 1))] == ["up"]
    b.disconnect("up")
    assert b.acks.forwarded == {}
    b.connect("up", "broker")
    assert b.handle("c", AckReq(("c", 1), 5.0)) == [("c", Ack(("c", 1), ""))]


def test_a_link_that_left_takes_its_dropped_event_notes(monkeypatch, caplog):
    # the notes are bounded; those of links that left filled the bound, and later drops went
    # unlogged
    monkeypatch.setattr(_broker, "MAX_UNKNOWN_PUB_NOTES", 3)
    b = Broker("root")
    b.connect("x", "client")
    for i in range(3):
        b.handle("x", Pub(f"lk.Nope{i}", (1,), "x", i, 0.0))
    b.disconnect("x")
    b.connect("y", "client")
    with caplog.at_level(logging.WARNING, logger="eventpy.broker"):
        b.handle("y", Pub("lk.Nope0", (1,), "y", 1, 0.0))
    assert "dropped a PUB of 'lk.Nope0' from 'y'" in caplog.text
    assert b._unknown_pubs == {("y", "lk.Nope0")}


def test_the_lookup_table_shrinks_back_when_its_subscriptions_are_gone():
    # a dict keeps the table of its largest size: 5,000 subscriptions that came and went left
    # ~150 KiB in the type's lookup for as long as its publisher stayed
    b = Broker("root")
    b.connect("pub", "client")
    b.handle("pub", Adv(Q.name, Q.to_wire()))
    b.connect("c", "client")
    empty = sys.getsizeof(b.types[Q.name].subs)
    for sid in range(1, 5001):
        b.handle("c", sub("price < 1.0", sid))
    for sid in range(1, 4001):
        b.handle("c", Unsub(Q.name, sid))
    b.disconnect("c")
    assert sys.getsizeof(b.types[Q.name].subs) == empty


def test_a_broker_link_that_drops_takes_its_moving_summaries_and_their_late_route():
    # a neighbour's summary marked moving (Sub.moving) routes late events to it; when that link
    # went, its mark stayed (disconnect drops the link from broker_links before its
    # subscriptions), and late events kept being sent to a link that was gone
    b = Broker("mid", overlay_clock=lambda: 1000.0)
    b.connect("up", "broker")
    b.handle("up", Adv(Q.name, Q.to_wire()))
    b.connect("down", "broker")
    moving = sub("price < limit", 7, limit=5.0)
    moving.moving = 1.0
    b.handle("down", moving)
    ts = b.types[Q.name]
    assert ts.late_links == {"down": 1.0}
    late = b.handle("up", Pub(Q.name, ("IBM", 50.0), "p", 1, 990.0))  # 10 s old, outside its filter
    assert [link for link, _ in late] == ["down"]
    b.disconnect("down")
    assert ts.late_links == {} and ts.moving == {}
    assert b.handle("up", Pub(Q.name, ("IBM", 50.0), "p", 2, 990.0)) == []
    left = leftovers(b, {"up"})
    assert f"{Q.name}.moving" not in left and f"{Q.name}.late_links" not in left and f"{Q.name}.subs" not in left
