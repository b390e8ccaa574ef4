"""Callbacks that block (an asyncio service's handoff waiting for room in a full bounded queue)
hold the later events of their own subscriptions, not every subscription of the process: with as
many of them blocked as the delivery pool had threads (8), no other subscription got anything
until one returned."""

from __future__ import annotations

import threading
import time

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


def _watchdog_ended() -> None:
    """The burst's watchdog, if one started, has seen the queue empty and ended."""
    deadline = time.monotonic() + 30
    while any(t.name == "eventpy-deliver-watch" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the pool's watchdog did not end with nothing queued"
        time.sleep(0.05)


def test_the_pool_grows_after_a_burst_ran_through_it(fresh_overlay):
    """A burst larger than the pool left each worker's "I wait" token behind every time it took a
    queued task without waiting: later submits spent those tokens as if a worker waited, never
    started the watchdog, and with the pool held a subscription got nothing (for ever)."""
    node = eventpy.connect()
    burst = 10 * _executor._POOL_SIZE
    done = threading.Semaphore(0)
    for k in range(burst):
        node.subscribe(Q, "n == k", params={"k": 1000 + k}, on_event=lambda e: done.release())
    for k in range(burst):
        node.publish(Q, n=1000 + k)
    for _ in range(burst):
        assert done.acquire(timeout=30)
    eventpy.drain(30.0)
    _watchdog_ended()
    gate = threading.Event()
    started = threading.Semaphore(0)

    def blocks(e):
        started.release()
        gate.wait(120)

    held = _executor._POOL_SIZE + 2
    for k in range(held):
        node.subscribe(Q, "n == k", params={"k": k}, on_event=blocks)
    got = threading.Event()
    node.subscribe(Q, "n == -1", on_event=lambda e: got.set())
    try:
        for k in range(held):
            node.publish(Q, n=k)
        for _ in range(_executor._POOL_SIZE):
            assert started.acquire(timeout=30)
        node.publish(Q, n=-1)
        assert got.wait(30), "after a burst, a subscription got nothing while others' callbacks blocked"
    finally:
        gate.set()
    eventpy.drain(30.0)
