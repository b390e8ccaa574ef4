"""Per-client limits of a shared broker (runtime/_client_caps.py, broker/_caps.py): a service
past one gets LimitExceeded at its own call, naming the limit and its value; its other
subscriptions, and the other clients, go on; the broker counts and logs it and keeps serving. A
client that does not check (a raw socket) is refused by the broker itself, and told."""

from __future__ import annotations

import logging
import socket
import time

import pytest

import eventpy
from eventpy.runtime._client_caps import ClientCaps
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Hello, Limits, Refused, Sub, Upd
from eventpy.runtime.model import SetDelta, ValueSet
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.transports.tcp import BrokerServer
from eventpy.runtime.wire import FrameDecoder, encode

Q = eventpy.EventType("caps.Quote", sym=str, price=float)


@pytest.fixture
def capped(broker_server):
    """A factory: a broker on a free port of 127.0.0.1 with the given limits (tests/conftest.py's
    broker_server: stopped at teardown, after every node)."""
    return lambda **limits: broker_server("b0", caps=ClientCaps(**limits))


def wait_for(pred, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.02)
    return pred()


def test_subscriptions_past_the_limit_raise_and_the_others_keep_working(capped, caplog):
    server = capped(max_subscriptions=3)
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="loopy")
    other = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="other-team")
    got: list[tuple[str, float]] = []
    subs = [node.subscribe(Q, "price < limit", params={"limit": float(i)},
                           on_event=lambda e, i=i: got.append((f"s{i}", e.price))) for i in range(3)]
    with pytest.raises(eventpy.LimitExceeded, match=r"node loopy holds 3 subscriptions at broker b0, its limit per "
                       r"client connection \(max_subscriptions = 3, `eventpy broker --max-subscriptions`\)") as e:
        node.subscribe(Q, "price < 100")
    assert (e.value.limit, e.value.value, e.value.broker) == ("max_subscriptions", 3, "b0")
    theirs: list[float] = []
    for _ in range(3):  # another connection has its own count
        other.subscribe(Q, "True", on_event=lambda e: theirs.append(e.price))
    other.advertise(Q)
    eventpy.drain(5)
    other.publish(Q, sym="X", price=1.5)
    subs[0].update(limit=5.0)  # the node's subscriptions still update
    eventpy.drain(5)
    other.publish(Q, sym="X", price=0.5)
    eventpy.drain(5)
    assert sorted(got) == [("s0", 0.5), ("s1", 0.5), ("s2", 0.5), ("s2", 1.5)]  # s0 updated in between
    assert theirs == [1.5] * 3 + [0.5] * 3
    subs[1].close()  # closing one makes room
    node.subscribe(Q, "price < 100")
    eventpy.drain(5)
    assert server.broker.stats.get("limit_max_subscriptions", 0) == 0  # the client refused it: nothing was sent
    with pytest.raises(eventpy.LimitExceeded):  # nor the schema of a type it had not used
        node.subscribe(eventpy.EventType("caps.Unused", n=int), "True")
    assert "caps.Unused" not in node._local.core.declared
    assert server.broker.subscription_count() == 3 + 3


def test_a_set_past_max_set_members_raises_at_subscribe_and_at_update(capped):
    server = capped(max_set_members=4)
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="watcher")
    got: list[str] = []
    with pytest.raises(eventpy.LimitExceeded, match=r"would hold 5 set members at broker b0, above its limit per "
                       r"subscription \(max_set_members = 4"):
        node.subscribe(Q, "sym in watch", params={"watch": {"A", "B", "C", "D", "E"}})
    with pytest.raises(eventpy.LimitExceeded, match="max_set_members = 4"):  # a literal counts too
        node.subscribe(Q, "sym in {'A', 'B', 'C', 'D', 'E'}")
    sub = node.subscribe(Q, "sym in watch", params={"watch": {"A", "B"}}, on_event=lambda e: got.append(e.sym))
    sub.update(watch={"A", "B", "C", "D"})  # up to the limit: taken
    with pytest.raises(eventpy.LimitExceeded, match="would hold 6 set members"):
        sub.update(watch={"A", "B", "C", "D", "E", "F"})
    assert sub.params["watch"] == {"A", "B", "C", "D"}  # a refused update changes nothing
    node.advertise(Q)
    eventpy.drain(5)
    for sym in "ADEF":
        node.publish(Q, sym=sym, price=1.0)
    eventpy.drain(5)
    assert got == ["A", "D"]
    assert server.broker.stats.get("limit_max_set_members", 0) == 0


def _raw_client(port: int, name: str) -> tuple[socket.socket, FrameDecoder, list]:
    """A client that checks nothing (another implementation, a hostile one): HELLO, then what the
    broker sends first."""
    raw = socket.create_connection(("127.0.0.1", port))
    raw.sendall(encode(Hello(name, "client", PROTOCOL)))
    dec, seen = FrameDecoder(), []
    raw.settimeout(10)
    while len(seen) < 2:
        seen += dec.feed(raw.recv(65536))
    return raw, dec, seen


def _read_until(raw: socket.socket, dec: FrameDecoder, pred, seen: list) -> None:
    while not any(pred(m) for m in seen):
        seen += dec.feed(raw.recv(65536))


def test_the_broker_refuses_a_client_that_does_not_check_and_tells_it(capped, caplog):
    server = capped(max_subscriptions=2, max_set_members=3)
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="good")
    got: list[float] = []
    node.subscribe(Q, "True", on_event=lambda e: got.append(e.price))
    eventpy.drain(5)
    with caplog.at_level(logging.WARNING, logger="eventpy.broker"):
        raw, dec, seen = _raw_client(server.port, "raw")
        assert seen[1] == Limits([("max_subscriptions", 2), ("max_set_members", 3)])  # told first
        spec = ((("sym", 0),), -1, ())
        raw.sendall(encode(Adv(Q.name, Q.to_wire(), False))
                    + b"".join(encode(Sub(Q.name, sid, (spec,), [ValueSet(frozenset({"A"}))])) for sid in (1, 2, 3))
                    + encode(Sub(Q.name, 4, (spec,), [ValueSet(frozenset({"A", "B", "C", "D"}))]))
                    + encode(Upd(Q.name, 1, {0: (SetDelta(frozenset(), frozenset({"B", "C", "D"})), 1)})))
        _read_until(raw, dec, lambda m: type(m) is Refused and m.sid == 1, seen)
    refused = [m for m in seen if type(m) is Refused]
    assert [m.sid for m in refused] == [3, 4, 1]
    assert "max_subscriptions = 2" in refused[0].reason and "max_set_members = 3" in refused[2].reason
    stats = server.broker.stats
    assert (stats["limit_max_subscriptions"], stats["limit_max_set_members"]) == (2, 1)
    assert server.broker.limit_hits["raw"] == {"max_subscriptions": 2, "max_set_members": 1}
    said = [r.getMessage() for r in caplog.records if "refused Sub from 'raw'" in r.getMessage()]
    assert said and "client 'raw' holds 2 subscriptions at broker b0" in said[0]
    # the refused UPD changed nothing: subscription 1 still holds {"A"}
    assert server.broker.types[Q.name].subs[("raw", 1)].values[0] == ValueSet(frozenset({"A"}))
    raw.close()
    node.advertise(Q)
    eventpy.drain(5)
    node.publish(Q, sym="Z", price=2.0)  # the broker and the other client go on
    eventpy.drain(5)
    assert got == [2.0]
    assert wait_for(lambda: "raw" not in server.broker._held)  # its count goes with it


def test_a_subscription_the_broker_refused_says_so_at_its_next_update(capped):
    """A client whose broker came back with a lower limit (it re-sends every subscription): the
    ones past it are refused by the broker, and their next update raises the broker's reason."""
    server = capped(max_subscriptions=1)
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="after-restart")
    kept = node.subscribe(Q, "price < limit", params={"limit": 1.0})
    core = node._local.core
    with node._local.lock:  # as if it had subscribed under a broker without limits
        core.caps = ClientCaps()
    late = node.subscribe(Q, "price < limit", params={"limit": 2.0})
    assert wait_for(lambda: late._state.refused)
    with pytest.raises(eventpy.LimitExceeded, match="broker refused it: client 'after-restart' holds 1 "
                       "subscriptions at broker b0, its limit per client connection"):
        late.update(limit=3.0)
    kept.update(limit=4.0)  # the others are not affected
    eventpy.drain(5)
    assert server.broker.types[Q.name].subs[("after-restart", kept._state.sid)].values[0].hi == 4.0
    assert core.stats["refused_by_broker"] == 1


def test_resub_mode_updates_at_the_limit_are_taken(capped):
    """In resub mode an update is a SUB, then the UNSUB of the one it replaces: a client at its
    limit holds one more for that moment, which the broker allows."""
    server = BrokerServer(Broker("b0", mode="resub", caps=ClientCaps(max_subscriptions=2)), "127.0.0.1", 0, {})
    stop = server.start_in_thread()
    try:
        node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="resub")
        subs = [node.subscribe(Q, "price < limit", params={"limit": 1.0}) for _ in range(2)]
        for i in range(20):
            subs[i % 2].update(limit=float(i))
        eventpy.drain(5)
        assert not any(s._state.refused for s in subs)
        assert server.broker.stats.get("limit_max_subscriptions", 0) == 0
        assert server.broker.subscription_count() == 2
    finally:
        eventpy.shutdown()
        stop()


EPY = '''
class Watch:
    def __init__(self, syms):
        self.syms = syms
        self.got = []

    event def quote(self, sym: str, price: float) when sym in self.syms:
        self.got.append(sym)
'''


def test_an_epy_set_field_past_the_limit_raises_and_keeps_its_members(capped, monkeypatch):
    from eventpy.compiler import compile_source

    server = capped(max_set_members=2)
    monkeypatch.setenv("EVENTPY_BROKER", f"tcp://127.0.0.1:{server.port}")
    ns: dict = {"__name__": "caps_watch"}
    exec(compile(compile_source(EPY, "caps_watch.epy"), "caps_watch.epy", "exec"), ns)
    Watch = ns["Watch"]
    w = Watch({"A"})
    w.syms.add("B")  # two: within the limit
    with pytest.raises(eventpy.LimitExceeded, match=r"Watch.syms.add\('C'\) refused: the subscription to caps_watch.Watch.quote when "
                       r"'sym in self.syms' would hold 3 set members at broker b0, above its limit per subscription "
                       r"\(max_set_members = 2"):
        w.syms.add("C")
    assert w.syms == {"A", "B"}  # the store was refused before it was made
    eventpy.drain(5)
    for sym in "ABC":
        Watch.quote(sym, 1.0)
    eventpy.drain(5)
    assert w.got == ["A", "B"]
    w.close()


def test_event_types_past_max_event_types_raise_and_the_known_ones_keep_working(capped):
    """A program that makes a type per request (a class made on the fly) grew the broker ~3 KB
    a type, 12,000 types a second, until it left."""
    server = capped(max_event_types=2)
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="factory")
    got: list[float] = []
    node.subscribe(Q, "True", on_event=lambda e: got.append(e.price))  # its first type
    other = eventpy.EventType("caps.Other", n=int)
    node.advertise(other)  # its second
    third = eventpy.EventType("caps.T3", n=int)
    with pytest.raises(eventpy.LimitExceeded, match=r"node factory has told broker b0 of 2 event types, its limit per "
                       r"client connection \(max_event_types = 2, `eventpy broker --max-event-types`\), so it cannot "
                       r"use 'caps.T3' as well"):
        node.publish(third, n=1)
    with pytest.raises(eventpy.LimitExceeded, match="max_event_types = 2"):
        node.subscribe(third, "True")
    with pytest.raises(eventpy.LimitExceeded, match="max_event_types = 2"):
        node.advertise(third)
    node.publish(Q, sym="A", price=3.0)  # its known types go on: publishing one it only subscribed to
    node.publish(other, n=1)
    eventpy.drain(5)
    assert got == [3.0]
    assert set(server.broker.types) == {Q.name, other.name}
    assert server.broker.stats.get("limit_max_event_types", 0) == 0


def test_the_broker_refuses_a_type_past_the_limit_from_a_client_that_does_not_check(capped):
    server = capped(max_event_types=1)
    raw, dec, seen = _raw_client(server.port, "raw-types")
    raw.sendall(encode(Adv("caps.A", (("n", "int"),))) + encode(Adv("caps.B", (("n", "int"),)))
                + encode(Adv("caps.A", (("n", "int"),), False)))  # one it told before: no new type
    _read_until(raw, dec, lambda m: type(m) is Refused, seen)
    refused = [m for m in seen if type(m) is Refused]
    assert [(m.etype, m.sid) for m in refused] == [("caps.B", -1)] and "max_event_types = 1" in refused[0].reason
    assert "caps.B" not in server.broker.types  # nothing made for it
    assert server.broker.stats["limit_max_event_types"] == 1
    raw.close()
    assert wait_for(lambda: "raw-types" not in server.broker._told and "caps.A" not in server.broker.types)
