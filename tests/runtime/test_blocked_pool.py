"""Callbacks that block (an asyncio service's handoff waiting for room in a full bounded queue)
hold the later events of their own subscriptions, not every subscription of the process: with as
many of them blocked as the delivery pool had threads (8), no other subscription got anything
until one returned."""

from __future__ import annotations

import threading

import eventpy
from eventpy.runtime import _executor

Q = eventpy.EventType("aio.Held", n=int)


def test_a_subscription_gets_its_events_while_the_pool_is_held(fresh_overlay):
    node = eventpy.connect()
    gate = threading.Event()
    started = threading.Semaphore(0)

    def blocks(e):
        started.release()
        gate.wait(120)

    held = _executor._POOL_SIZE + 2  # more than the pool's threads
    for k in range(held):
        node.subscribe(Q, "n == k", params={"k": k}, on_event=blocks)
    got = threading.Event()
    node.subscribe(Q, "n == -1", on_event=lambda e: got.set())
    try:
        for k in range(held):
            node.publish(Q, n=k)
        for _ in range(_executor._POOL_SIZE):  # every thread of the pool is held
            assert started.acquire(timeout=30)
        node.publish(Q, n=-1)
        assert got.wait(30), "a subscription got nothing while others' callbacks blocked"
        for _ in range(held - _executor._POOL_SIZE):  # and the ones that waited ran too
            assert started.acquire(timeout=30)
    finally:
        gate.set()
    eventpy.drain(30.0)
    assert eventpy.stats()["delivered"] == held + 1
