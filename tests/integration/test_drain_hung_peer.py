"""A peer that is attached and never answers (a stuck program; here a raw socket after its HELLO):
the drains of clients whose messages do not reach it return as usual (before, every drain at that
broker timed out), and a drain whose events it was sent times out naming it (before: "no answer
from broker b", the healthy broker)."""

from __future__ import annotations

import socket
import time

import pytest

import eventpy
from eventpy.guards import compile_guard
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.messages import Hello, Sub
from eventpy.runtime.wire import encode

Q = eventpy.EventType("hung.Quote", n=int)
OTHER = eventpy.EventType("hung.Other", n=int)


def stuck_client(server, etype=None) -> socket.socket:
    """Attached as client 'stuck', subscribed to `etype` (if given), then silent."""
    raw = socket.create_connection(("127.0.0.1", server.port))
    data = encode(Hello("stuck", "client", PROTOCOL))
    if etype is not None:
        plan = compile_guard("True", etype, {})
        data += encode(Sub(etype.name, 1, plan.spec, plan.evaluate({})))
    raw.sendall(data)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (
            "stuck" in server.broker.links and server.broker.subscription_count() >= (etype is not None)):
        time.sleep(0.02)
    return raw


def test_a_hung_client_does_not_hold_the_drain_of_clients_it_has_nothing_to_do_with(broker_server):
    server = broker_server("b")
    other = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    other.advertise(OTHER)
    eventpy.drain(5)
    with stuck_client(server, OTHER):
        node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
        got: list[int] = []
        node.subscribe(Q, "True", on_event=lambda ev: got.append(ev.n))
        node.publish(Q, n=1)
        eventpy.drain(3)  # before: TimeoutError, the FLUSH waited for 'stuck' too
        assert got == [1]


def test_a_drain_names_the_hung_client_its_events_reached(broker_server):
    server = broker_server("b")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    node.advertise(Q)
    eventpy.drain(5)
    with stuck_client(server, Q):
        node.publish(Q, n=1)
        with pytest.raises(TimeoutError, match="client stuck at broker b"):
            eventpy.drain(2)
