"""An .epy object's event method delivering into an asyncio loop: `self.inbox.put(...)` into an
eventpy.aio.Inbox made on the loop (README's asyncio block). The inbox is bounded: while it is
full, the object's event methods wait, and only that object's."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

import eventpy
from eventpy import aio
from eventpy.compiler import compile_source

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

PROGRAM = '''
import eventpy

class Watcher:
    def __init__(self, inbox, limit: float):
        self.inbox, self.limit = inbox, limit

    event def quote(self, firm: str, price: float) when price < self.limit:
        self.inbox.put((firm, price))

class Counter:
    def __init__(self):
        self.seen = 0

    event def quote(self, firm: str, price: float):
        self.seen += 1
'''


def load() -> dict:
    ns: dict = {"__name__": "aio_watchers"}
    exec(compile(compile_source(textwrap.dedent(PROGRAM), "aio_watchers.epy", "aio_watchers"),
                 "aio_watchers.epy", "exec"), ns)
    return ns


def test_an_event_method_delivers_into_the_loop_in_order_through_a_bounded_inbox():
    ns = load()
    Watcher, Counter = ns["Watcher"], ns["Counter"]
    count = 3000

    async def main():
        node = eventpy.default_node()
        inbox = aio.Inbox(maxsize=4)
        w, c = Watcher(inbox, 1e9), Counter()
        for i in range(count):
            await aio.publish(node, Watcher.quote, firm="IBM", price=float(i))
            await aio.publish(node, Counter.quote, firm="HP", price=float(i))
        await aio.confirm(c, 30)
        got = [await asyncio.wait_for(inbox.get(), 30) for _ in range(count)]
        w.close()
        inbox.close()
        rest = [item async for item in inbox]  # the end, once closed and empty
        await aio.drain(30)
        return got, rest, inbox.peak, c.seen

    got, rest, peak, seen = asyncio.run(main())
    assert got == [("IBM", float(i)) for i in range(count)] and rest == []
    assert peak == 4 and seen == 3000


def test_an_object_whose_loop_ended_drops_its_events_without_errors():
    ns = load()
    Watcher = ns["Watcher"]
    made = []

    async def main():
        w = Watcher(aio.Inbox(maxsize=1), 1e9)
        made.append(w)
        for i in range(5):
            Watcher.quote("IBM", float(i))  # leaves with the inbox full, without taking

    asyncio.run(main())
    Watcher.quote("IBM", 99.0)
    eventpy.drain(30)  # the deliveries found the loop closed: dropped, none stuck
    assert made[0].inbox.closed and eventpy.stats()["callback_errors"] == 0
    made[0].close()
