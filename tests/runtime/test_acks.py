"""Cascading acknowledgements (000 §9.3) in the simulator: a broker acknowledges a change at once
when its effect stays local, or once every broker it forwarded the change to has; a silent broker
is named in the answer."""

from __future__ import annotations

import pytest

from eventpy.runtime.messages import Ack, AckReq, Sub, Upd
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line
from eventpy.runtime.transports.inproc import Simulation

Q = EventType("Quote", price=float)


def overlay(n: int = 4, mode: str = "parametric"):
    sim = Simulation(line(n), link_delay=0.01, mode=mode)
    pub = sim.client("pub", "b0")
    pub.advertise(Q)
    sub = sim.client("sub", f"b{n - 1}")
    s = sub.subscribe(Q, "price < limit", {"limit": 10.0})
    sim.run()
    return sim, pub, sub, s


def watch(sim, sub):
    """Record when UPDs reach each broker and when the subscriber gets its Ack."""
    seen: dict[str, list[float]] = {}
    for name, broker in sim.brokers.items():
        handle = broker.handle

        def spy(link, msg, name=name, handle=handle):
            if type(msg) in (Upd, Sub):
                seen.setdefault(name, []).append(sim.now)
            return handle(link, msg)

        broker.handle = spy
    acked: list[float] = []
    receive = sub._receive

    def on_receive(msg):
        if type(msg) is Ack:
            acked.append(sim.now)
        receive(msg)

    sub._receive = on_receive
    return seen, acked


@pytest.mark.parametrize("mode", ["parametric", "resub"])
def test_the_ack_comes_back_after_every_broker_on_the_way_applied_the_update(mode):
    sim, pub, sub, s = overlay(mode=mode)
    seen, acked = watch(sim, sub)
    s.update(limit=20.0)  # widens the subscription: the UPD travels to the publisher's broker
    token = sub.request_ack(budget=2.0)
    sim.run()
    assert sub.core.acked[token] == ""
    assert set(seen) == {"b0", "b1", "b2", "b3"}
    assert len(acked) == 1 and acked[0] > max(t for ts in seen.values() for t in ts)
    assert sim.sent["b3", "AckReq"] == 1 and sim.sent["b0", "AckReq"] == 0  # b0 forwarded nothing


@pytest.mark.parametrize("mode", ["parametric", "resub"])
@pytest.mark.parametrize("silent", ["b1", "b2"])
def test_a_silent_broker_is_named_in_the_answer(silent, mode):
    sim, pub, sub, s = overlay(mode=mode)
    sim.silence(silent)
    seen, acked = watch(sim, sub)
    s.update(limit=20.0)
    token = sub.request_ack(budget=1.0)
    sim.run()
    assert sub.core.acked[token] == silent
    assert len(acked) == 1 and acked[0] <= 1.0 + 0.1  # within the budget the client gave


def test_a_local_change_is_acknowledged_at_once_without_upstream_traffic():
    sim, pub, sub, s = overlay()
    sub.subscribe(Q, "price < limit", {"limit": 100.0})  # covers the other one
    first = sub.request_ack(budget=2.0)  # (this one waits for the wide SUB's way upstream)
    sim.run()
    assert sub.core.acked[first] == ""
    before = sum(n for (src, kind), n in sim.sent.items() if kind == "AckReq" and src.startswith("b"))
    seen, acked = watch(sim, sub)
    start = sim.now
    s.update(limit=50.0)  # still inside the wide one: nothing changes upstream
    token = sub.request_ack(budget=2.0)
    sim.run()
    assert sub.core.acked[token] == ""
    assert set(seen) == {"b3"}  # only the edge broker saw the UPD
    after = sum(n for (src, kind), n in sim.sent.items() if kind == "AckReq" and src.startswith("b"))
    assert after == before  # no broker asked another one
    assert acked[0] - start == pytest.approx(0.02, abs=0.005)  # one round trip to the edge broker


def test_an_ack_request_survives_the_wire_and_a_broken_link_names_the_peer():
    from eventpy.runtime.broker import Broker
    b = Broker("b1")
    b.connect("up", "broker")
    b.connect("c", "client")
    b.acks.forwarded["c"] = {"up"}
    out = b.handle("c", AckReq(("c", 1), 1.0))
    assert out == [("up", AckReq(("b1", 1), 0.8))]
    assert b.disconnect("up") == [("c", Ack(("c", 1), "up"))]


# -- through the public API ---------------------------------------------------------------------------
def test_confirm_on_the_embedded_overlay_returns_at_once():
    import eventpy
    eventpy.shutdown()
    try:
        node = eventpy.connect()
        sub = node.subscribe(Q, "price < limit", params={"limit": 1.0})
        sub.update(limit=2.0)
        sub.confirm(timeout=2.0)  # one broker: the effect is local
        eventpy.confirm(node, timeout=2.0)
        with pytest.raises(ValueError, match="positive timeout"):
            sub.confirm(timeout=0)
        with pytest.raises(TypeError, match="confirm takes"):
            eventpy.confirm(object())
    finally:
        eventpy.shutdown()


WATCHER = '''
import eventpy

class Watcher:
    def __init__(self):
        self.limit = 1.0
        self.seen = []

    event def quote(self, price: float) when price < self.limit:
        self.seen.append(price)
'''


def _run_epy(src: str, name: str) -> dict:
    from eventpy.compiler import compile_source
    ns: dict = {"__name__": name}
    exec(compile(compile_source(src, f"{name}.epy"), f"{name}.epy", "exec"), ns)
    return ns


def test_confirm_in_an_epy_program():
    import eventpy
    src = WATCHER + '''
w = Watcher()
w.limit = 5.0
eventpy.confirm(w, timeout=2.0)
Watcher.quote(3.0)
eventpy.drain(timeout=5.0)
RESULT = w.seen
'''
    eventpy.shutdown()
    try:
        assert _run_epy(src, "watcher")["RESULT"] == [3.0]
    finally:
        eventpy.shutdown()


def test_confirm_of_a_closed_epy_object_waits_for_its_unsubscription():
    # As `sub.confirm()` after `sub.close()` does: the UNSUBs are in force. Before, a closed object
    # was refused with "confirm takes a Subscription, a Node or an object of an .epy class with
    # event methods, not Watcher", though it is one.
    import eventpy
    eventpy.shutdown()
    try:
        ns = _run_epy(WATCHER, "watcher_closed")
        w = ns["Watcher"]()
        w.limit = 5.0
        w.close()
        eventpy.confirm(w, timeout=2.0)
        w.close()  # a second close leaves nothing more to unsubscribe, and the object is still known
        eventpy.confirm(w, timeout=2.0)
        ns["Watcher"].quote(3.0)
        eventpy.drain(timeout=5.0)
        assert w.seen == []
        eventpy.shutdown()
        with pytest.raises(RuntimeError, match="closed"):  # its node is gone: nothing to confirm
            eventpy.confirm(w, timeout=1.0)
        with pytest.raises(TypeError, match="confirm takes"):
            eventpy.confirm(ns["Watcher"], timeout=1.0)  # the class is not one of its objects
    finally:
        eventpy.shutdown()


@pytest.mark.parametrize("timeout", [float("inf"), 1e12, 1e300])
def test_a_timeout_no_wait_can_take_is_refused_before_anything_is_asked(timeout):
    # Before: OverflowError "timestamp out of range for platform time_t" from the wait, after the
    # ACKREQ or FLUSH had been queued and its token registered (never given up).
    import eventpy
    eventpy.shutdown()
    try:
        node = eventpy.connect()
        sub = node.subscribe(Q, "price < limit", params={"limit": 1.0})
        for call, what in ((lambda: sub.confirm(timeout=timeout), "confirm"),
                           (lambda: eventpy.drain(timeout=timeout), "drain")):
            with pytest.raises(ValueError, match=f"{what} needs a finite timeout of at most"):
                call()
        assert not node._local.acks
    finally:
        eventpy.shutdown()
