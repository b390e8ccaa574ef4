"""drain() from an asyncio program: awaited off the loop it returns; called on the loop's own
thread while a callback waits for that loop, it can only time out, and its TimeoutError says why
and what to write instead (it named only the callback, which looked stuck for no reason), the
README's way: `await eventpy.aio.drain(t)` (it said asyncio.to_thread, which the README advises against)."""

from __future__ import annotations

import asyncio

import pytest

import eventpy
from eventpy import aio

Q = eventpy.EventType("aio.DrainQ", n=int)


def test_drain_on_the_loop_thread_says_it_blocks_the_loop(fresh_overlay):
    node = eventpy.connect()

    async def main() -> list:
        loop = asyncio.get_running_loop()
        got: list = []

        async def handle(e):
            got.append(e.n)

        def on_event(e):  # the delivery thread waits for the loop to run the handler
            asyncio.run_coroutine_threadsafe(handle(e), loop).result(timeout=60)

        node.subscribe(Q, "n > 0", on_event=on_event)
        node.publish(Q, n=1)
        with pytest.raises(TimeoutError, match=r"asyncio loop.*await eventpy\.aio\.drain\(1\)$"):
            eventpy.drain(1.0)  # blocks the loop the callback waits for: it cannot return
        await aio.drain(30.0)  # what the message says to write (README): the loop runs the handler
        return got

    assert asyncio.run(main()) == [1]


def test_drain_off_any_loop_times_out_without_the_hint(fresh_overlay):
    import threading

    node = eventpy.connect()
    release = threading.Event()
    node.subscribe(Q, "n > 0", on_event=lambda e: release.wait(60))
    node.publish(Q, n=1)
    try:
        with pytest.raises(TimeoutError) as raised:
            eventpy.drain(0.5)
        assert "asyncio" not in str(raised.value)
    finally:
        release.set()
    eventpy.drain(30.0)
