"""A client that floods its broker with messages that are small on the wire but costly to handle
(a 26-byte UPD adding one member to a 50,000-member set costs the broker milliseconds) does not
stall the other links: the broker handles a link's messages in slices and lets the others take
their turn between them. Before, one read of such UPDs held the event loop for its whole length:
another client's events took 35 s to arrive, its drain() timed out, SIGTERM waited as long."""

from __future__ import annotations

import socket
import time

import eventpy
from eventpy.runtime.messages import Adv, Hello, Sub, Upd
from eventpy.runtime.model import SetDelta, ValueSet
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.wire import encode, encode_many

S = eventpy.EventType("flood.Zone", zone=str)
V = eventpy.EventType("flood.Tick", n=int)


def wait_for(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.01)
    return pred()


def test_a_flood_of_costly_updates_does_not_stall_the_other_clients(broker_server):
    server = broker_server("b")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    node.advertise(V)
    got: list[int] = []
    node.subscribe(V, "True", on_event=lambda e: got.append(e.n))
    eventpy.drain(10)

    with socket.create_connection(("127.0.0.1", server.port)) as hostile:
        zones = ValueSet(frozenset(f"z{i}" for i in range(50_000)), False)
        hostile.sendall(encode(Hello("hostile", "client", PROTOCOL)) + encode(Adv(S.name, S.to_wire()))
                        + encode(Sub(S.name, 1, (((("zone", 0),), -1, ()),), [zones])))
        # thousands of one-member additions: a minute of the broker's work, 160 KB on the wire
        flood = [Upd(S.name, 1, {0: (SetDelta(frozenset(), frozenset({f"n{k}"})), k + 1)}) for k in range(6_000)]
        hostile.sendall(encode_many(flood))
        received = server.broker.stats["received"]
        assert wait_for(lambda: server.broker.stats["received"] > received + 20, 30)  # the flood is being handled

        start = time.monotonic()
        node.publish(V, n=1)
        assert wait_for(lambda: got == [1], 10), "another client's event waited behind the flood"
        eventpy.drain(10)
        assert time.monotonic() - start < 10
        assert server.broker.stats["received"] < received + len(flood)  # the flood was still going on
