"""Sequence numbers of UPDs at the sans-I/O broker: a number that jumps implausibly far ahead is
refused as malformed (before, UPD seq 2**64-1 was stored and every later UPD of that variable was
dropped as stale, for good), and a client's numbers restart with each subscription the broker
receives, so a long-lived subscription that reconnects never looks like such a jump."""

from __future__ import annotations

import logging

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker
from eventpy.runtime.broker import _state
from eventpy.runtime.client import ClientCore
from eventpy.runtime.messages import Adv, Pub, Sub, Upd
from eventpy.runtime.model import EventType, Interval

Q = EventType("Quote", firm=str, price=float)


def edge() -> Broker:
    b = Broker("edge")
    b.connect("up", "broker")
    b.connect("c1", "client")
    b.handle("up", Adv("Quote", Q.to_wire()))
    return b


def below(hi: float) -> Interval:
    return Interval(float("-inf"), True, hi, False)


def delivered(b: Broker, price: float) -> bool:
    return any(link == "c1" for link, _ in b.handle("up", Pub("Quote", ("X", price), "p", 1, 0.0)))


def subscribe(b: Broker, limit: float = 10.0) -> None:
    plan = compile_guard("price < limit", Q, {"limit": float})
    b.handle("c1", Sub("Quote", 1, plan.spec, plan.evaluate({"limit": limit})))


def test_an_upd_with_the_largest_sequence_number_is_refused_and_later_ones_apply(caplog):
    b = edge()
    subscribe(b)
    with caplog.at_level(logging.WARNING, logger="eventpy.broker"):
        b.handle("c1", Upd("Quote", 1, {0: (below(30.0), 2**64 - 1)}))
    assert b.stats["refused"] == 1
    assert any("sequence number" in r.getMessage() and str(2**64 - 1) in r.getMessage()
               for r in caplog.records)
    assert not delivered(b, 20.0)  # the old value (price < 10) holds
    b.handle("c1", Upd("Quote", 1, {0: (below(30.0), 1)}))  # the sender's next real update
    assert b.stats["stale_upd"] == 0 and delivered(b, 20.0)
    b.handle("c1", Upd("Quote", 1, {0: (below(15.0), 2)}))
    assert not delivered(b, 20.0)  # and the one after it: the variable is not frozen


def test_a_refused_jump_leaves_the_whole_upd_unapplied():
    b = edge()
    plan = compile_guard("price < hi or price > lo", Q, {"hi": float, "lo": float})
    b.handle("c1", Sub("Quote", 1, plan.spec, plan.evaluate({"hi": 10.0, "lo": 50.0})))
    state = next(iter(b.types["Quote"].subs.values()))
    before = (list(state.values), list(state.seqs))
    b.handle("c1", Upd("Quote", 1, {0: (below(30.0), 1), 1: (Interval(40.0, False, float("inf"), True), 2**40)}))
    assert (state.values, state.seqs) == before and b.stats["refused"] == 1


def test_coalesced_changes_are_a_plausible_jump():
    b = edge()
    subscribe(b)
    b.handle("c1", Upd("Quote", 1, {0: (below(30.0), 1_000_000)}))  # a million changes coalesced
    assert b.stats["refused"] == 0 and delivered(b, 20.0)


def test_a_subscription_that_reconnects_restarts_its_sequence_numbers(monkeypatch):
    # a long-lived subscription's numbers may be far beyond the bound; the broker it reconnects to
    # starts the subscription over from the SUB, so the client restarts its numbers there too
    monkeypatch.setattr(_state, "MAX_SEQ_STEP", 4, raising=False)
    core = ClientCore("c1")
    plan = compile_guard("price < limit", Q, {"limit": float})
    state = core.subscribe(Q, plan, {"limit": 10.0}, on_event=None)
    b = edge()
    for msg in core.take():
        b.handle("c1", msg)
    for k in range(10):  # each one taken on its own: steps of 1
        core.update(state, {"limit": 11.0 + k})
        for msg in core.take():
            b.handle("c1", msg)
    assert b.stats["refused"] == 0 and delivered(b, 19.0)  # limit 20
    b.disconnect("c1")  # the connection drops; the node reconnects
    b.connect("c1", "client")
    core.resync()
    for msg in core.take():
        b.handle("c1", msg)
    core.update(state, {"limit": 5.0})
    for msg in core.take():
        b.handle("c1", msg)
    assert b.stats["refused"] == 0 and not delivered(b, 7.0)  # limit 5 is in force
