"""A node closed right after it published still sends every event it published: on the embedded
overlay the broker took 256 messages a turn and handled the node's disconnect before the rest, so
all but the first few hundred of a burst were refused "from unknown link" and never delivered."""

from __future__ import annotations

import pytest

import eventpy

Q = eventpy.EventType("close.Tick", n=int)


@pytest.fixture(autouse=True)
def _fresh():
    eventpy.shutdown()
    yield
    eventpy.shutdown()


def test_events_published_before_close_are_all_delivered():
    subscriber = eventpy.connect()
    got: list[int] = []
    subscriber.subscribe(Q, "True", on_event=lambda e: got.append(e.n))
    eventpy.drain(5.0)
    publisher = eventpy.connect()
    for i in range(3000):
        publisher.publish(Q, n=i)
    publisher.close()
    eventpy.drain(10.0)
    assert got == list(range(3000))
