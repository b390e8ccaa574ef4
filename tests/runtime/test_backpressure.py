"""A node holds a bounded number of messages for its broker: past the bound, publish waits for the
transport to take some (and gives up after a while, publishing nothing), so a slow or unreachable
broker does not grow the publisher's memory without bound, and nothing is lost."""

from __future__ import annotations

import threading
import time

import pytest

from eventpy.runtime.embedded import LocalNode
from eventpy.runtime.messages import Adv, Pub
from eventpy.runtime.model import EventType

Q = EventType("bp.Tick", n=int)


class StalledOverlay:
    """A transport that takes nothing unless the test says so."""

    mode = "parametric"

    def __init__(self) -> None:
        self.wakes = 0

    def wake(self, node) -> None:
        self.wakes += 1

    def edge_name(self) -> str:
        return "b-stalled"


def node_with_bound(bound: int, wait: float) -> LocalNode:
    node = LocalNode(StalledOverlay(), "pub")
    node.max_outbox, node.publish_wait = bound, wait
    return node


def pubs(msgs) -> list[int]:
    """The first value of each event: taken (a Pub) or still queued (a plain tuple)."""
    return [m.values[0] if type(m) is Pub else m[1][0] for m in msgs if type(m) in (Pub, tuple)]


def test_publish_waits_at_the_bound_until_the_transport_takes_and_loses_nothing():
    node = node_with_bound(100, 30.0)
    for n in range(99):  # with the ADV, the outbox is now full
        node.publish(Q, (n,))
    assert len(node.core.outbox) == 100
    done = threading.Event()

    def publish_more() -> None:
        for n in range(99, 300):
            node.publish(Q, (n,))
        done.set()

    t = threading.Thread(target=publish_more)
    t.start()
    time.sleep(0.2)
    assert not done.is_set() and len(node.core.outbox) == 100  # waiting, not growing
    taken = []
    while not done.is_set() or node.has_output():  # the transport drains the outbox
        taken += node.take()
        time.sleep(0.001)
    t.join(5)
    assert type(taken[0]) is Adv
    assert pubs(taken) == list(range(300))  # all of them, in order, once each


def test_publish_gives_up_when_nothing_is_taken_and_publishes_nothing():
    node = node_with_bound(10, 0.2)
    for n in range(9):
        node.publish(Q, (n,))
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="waited 0.2s for broker b-stalled.*not published"):
        node.publish(Q, (9,))
    assert time.monotonic() - t0 >= 0.2
    assert pubs(node.core.outbox) == list(range(9))


def test_a_publish_waiting_for_room_ends_when_the_node_closes():
    node = node_with_bound(10, 30.0)
    for n in range(9):
        node.publish(Q, (n,))
    errors: list[BaseException] = []

    def blocked() -> None:
        try:
            node.publish(Q, (9,))
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            errors.append(e)

    t = threading.Thread(target=blocked)
    t.start()
    time.sleep(0.1)
    node.mark_closed()  # what Node.close does
    t.join(5)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError) and "closed" in str(errors[0])
