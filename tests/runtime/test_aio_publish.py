"""eventpy.aio's publish, drain and confirm never block the loop's thread: a full outbox is
waited for off the loop (a cancelled publish has published nothing), and a cancelled drain
returns at once without holding asyncio.run's end.

`node.publish` into a full outbox waited on the loop's thread (every task of the program
stopped), and `asyncio.to_thread(eventpy.drain, t)` runs on the loop's default executor, whose
threads asyncio.run waits for when it ends: Ctrl-C during such a drain held the program for the
rest of its timeout."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time

import pytest

import eventpy
from eventpy import aio

Q = eventpy.EventType("aio.PubQ", n=int)

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


async def _ticks_while(task: asyncio.Task, at_least: int) -> int:
    """Count the loop's turns while `task` runs, up to `at_least`: the loop is not blocked."""
    ticks = 0
    while not task.done() and ticks < at_least:
        await asyncio.sleep(0.01)
        ticks += 1
    return ticks


def test_a_publish_into_a_full_outbox_waits_off_the_loop_then_publishes_once():
    async def main():
        node = eventpy.connect()
        got: list = []
        node.subscribe(Q, "n >= 0", on_event=lambda e: got.append(e.n))
        node._local.max_outbox = 0  # every publish finds the outbox full (a broker not taking)
        publishing = asyncio.create_task(aio.publish(node, Q, n=1))
        ticks = await _ticks_while(publishing, 20)
        pending = not publishing.done()
        node._local.max_outbox = 100_000  # room again
        await asyncio.wait_for(publishing, 30)
        await aio.drain(30)
        return ticks, pending, got

    ticks, pending, got = asyncio.run(main())
    assert ticks == 20 and pending  # the loop ran while the publish waited for room
    assert got == [1] and eventpy.stats()["published"] == 1


def test_a_cancelled_publish_has_published_nothing():
    async def main():
        node = eventpy.connect()
        got: list = []
        node.subscribe(Q, "n >= 0", on_event=lambda e: got.append(e.n))
        node._local.max_outbox = 0
        publishing = asyncio.create_task(aio.publish(node, Q, n=1))
        await _ticks_while(publishing, 5)
        started = time.monotonic()
        publishing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await publishing
        took = time.monotonic() - started
        node._local.max_outbox = 100_000
        await asyncio.sleep(1.0)  # longer than a thread waits for room before the loop looks again
        await aio.publish(node, Q, n=2)
        await aio.drain(30)
        return took, got

    took, got = asyncio.run(main())
    assert took < 10  # at once: nothing waits for the thread
    assert got == [2] and eventpy.stats()["published"] == 1


def test_a_publish_without_room_gives_up_as_publish_does():
    async def main():
        node = eventpy.connect()
        node._local.max_outbox = 0
        node._local.publish_wait = 0.5
        with pytest.raises(TimeoutError, match="this event was not published"):
            await aio.publish(node, Q, n=1)

    asyncio.run(main())
    assert eventpy.stats()["published"] == 0


def test_a_publish_on_a_node_closed_while_it_waits_raises():
    async def main():
        node = eventpy.connect()
        node._local.max_outbox = 0
        publishing = asyncio.create_task(aio.publish(node, Q, n=1))
        await _ticks_while(publishing, 5)
        node.close()
        with pytest.raises(RuntimeError, match="closed"):
            await asyncio.wait_for(publishing, 30)

    asyncio.run(main())


def test_a_wrong_attribute_is_the_callers_mistake():
    async def main():
        node = eventpy.connect()
        with pytest.raises(TypeError) as raised:
            await aio.publish(node, Q, n="one")
        tb = raised.value.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        return tb.tb_frame.f_code.co_filename

    assert asyncio.run(main()) == __file__


def test_publish_takes_an_event_method_and_confirm_a_subscription():
    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n < limit", {"limit": 5})
        sub.update(limit=10)
        await sub.confirm(30)
        await aio.confirm(sub, 30)
        await aio.confirm(node, 30)
        await aio.publish(node, Q, n=7)
        event = await asyncio.wait_for(sub.get(), 30)
        sub.close()
        return event.n, dict(sub.params)

    assert asyncio.run(main()) == (7, {"limit": 10})


def test_a_cancelled_drain_returns_at_once_and_does_not_hold_the_loops_end():
    release = threading.Event()

    async def main():
        node = eventpy.connect()
        node.subscribe(Q, "n >= 0", on_event=lambda e: release.wait(120))  # holds every drain
        await aio.publish(node, Q, n=1)
        draining = asyncio.create_task(aio.drain(120))
        await _ticks_while(draining, 5)
        started = time.monotonic()
        draining.cancel()
        with pytest.raises(asyncio.CancelledError):
            await draining
        return time.monotonic() - started

    started = time.monotonic()
    try:
        took = asyncio.run(main())
        ended = time.monotonic() - started
    finally:
        release.set()
    assert took < 10 and ended < 30  # not the drain's 120 s
    eventpy.drain(30)


def test_drain_raises_its_timeout_on_the_loop():
    release = threading.Event()

    async def main():
        node = eventpy.connect()
        node.subscribe(Q, "n >= 0", on_event=lambda e: release.wait(120))
        await aio.publish(node, Q, n=1)
        with pytest.raises(TimeoutError, match="still running"):
            await aio.drain(0.5)

    try:
        asyncio.run(main())
    finally:
        release.set()
    eventpy.drain(30)


def test_import_eventpy_imports_neither_asyncio_nor_eventpy_aio():
    code = "import sys, eventpy; print(sorted(m for m in ('asyncio', 'eventpy.aio') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "EVENTPY_BROKER": ""})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
