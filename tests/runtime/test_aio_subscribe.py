"""eventpy.aio subscriptions: events reach the subscriber's loop through a bounded inbox, in
order, none lost or twice, with at most one wake-up of the loop queued at a time; a full inbox
holds its own subscription only; closing, cancelling and the loop's end are clean.

Before eventpy.aio an asyncio program wrote the hand-off itself (README): one
call_soon_threadsafe per event, so a flood queued a handle per event in the loop's ready queue
(Ctrl-C then waited behind all of them)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

import eventpy
from eventpy import aio

Q = eventpy.EventType("aio.SubQ", n=int)

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def test_events_arrive_complete_and_in_order_per_subscription():
    async def main():
        node = eventpy.connect()
        evens = aio.subscribe(node, Q, "n >= 0 and n < limit", {"limit": 10**9},
                              maxsize=8)
        small = aio.subscribe(node, Q, "n < 500", maxsize=3)

        async def take(sub, count):
            return [(await asyncio.wait_for(sub.get(), 30)).n for _ in range(count)]

        consumers = [asyncio.create_task(take(evens, 3000)), asyncio.create_task(take(small, 500))]
        for i in range(3000):
            await aio.publish(node, Q, n=i)
        got_all, got_small = await asyncio.gather(*consumers)
        await aio.drain(30)
        return got_all, got_small, evens.inbox.qsize(), small.inbox.qsize()

    got_all, got_small, left_all, left_small = asyncio.run(main())
    assert got_all == list(range(3000)) and got_small == list(range(500))
    assert left_all == left_small == 0
    assert eventpy.stats()["delivered"] == 3500


def test_a_flood_with_a_slow_consumer_loses_nothing_and_keeps_the_loop_bounded():
    count, maxsize = 20_000, 32

    async def main():
        node = eventpy.connect()
        loop = asyncio.get_running_loop()
        ready_most = 0
        stop = asyncio.Event()

        async def watch_ready_queue():  # what the old hand-off grew by one handle per event
            nonlocal ready_most
            while not stop.is_set():
                ready_most = max(ready_most, len(loop._ready))  # type: ignore[attr-defined]
                await asyncio.sleep(0.001)

        watcher = asyncio.create_task(watch_ready_queue())
        sub = aio.subscribe(node, Q, "n >= 0", maxsize=maxsize)

        async def flood():
            for i in range(count):
                await aio.publish(node, Q, n=i)

        publisher = asyncio.create_task(flood())
        got = []
        async for event in sub:  # slower than the events: the inbox fills, deliveries wait
            got.append(event.n)
            if len(got) % 50 == 0:
                await asyncio.sleep(0.001)
            if len(got) == count:
                break
        await publisher
        sub.close()
        await aio.drain(30)
        stop.set()
        await watcher
        return got, sub.inbox.peak, ready_most

    got, peak, ready_most = asyncio.run(main())
    assert got == list(range(count))  # none lost, none twice, in order
    assert peak == maxsize  # it filled, and never held more
    assert ready_most <= 8  # the watcher, the publisher, the consumer, a wake-up: not one per event
    stats = eventpy.stats()
    assert stats["delivered"] == count and stats["callback_errors"] == 0


def test_a_full_inbox_holds_its_own_subscription_only():
    async def main():
        node = eventpy.connect()
        stuck = aio.subscribe(node, Q, "n >= 0", maxsize=1)  # nobody takes its events
        others: list = []
        all_in = threading.Event()

        def plain(event):
            others.append(event.n)
            if len(others) == 20:
                all_in.set()

        node.subscribe(Q, "n >= 0", on_event=plain)
        for i in range(20):
            await aio.publish(node, Q, n=i)
        arrived = await asyncio.to_thread(all_in.wait, 30)
        held = stuck.inbox.qsize()
        got = [(await asyncio.wait_for(stuck.get(), 30)).n for _ in range(20)]  # then it catches up
        return arrived, others, held, got

    arrived, others, held, got = asyncio.run(main())
    assert arrived and others == list(range(20))
    assert held == 1 and got == list(range(20))


def test_a_cancelled_get_takes_nothing():
    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0")
        waiting = asyncio.create_task(sub.get())
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await aio.publish(node, Q, n=7)
        return (await asyncio.wait_for(sub.get(), 30)).n

    assert asyncio.run(main()) == 7


def test_closing_ends_the_iteration_after_the_events_it_holds():
    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0", maxsize=3)
        for i in range(10):
            await aio.publish(node, Q, n=i)
        while sub.inbox.qsize() < 3:  # the fourth delivery waits for room
            await asyncio.sleep(0.01)
        sub.close()  # the waiting delivery gives up its event: the subscription is closed
        await aio.drain(30)  # nothing is left waiting for room
        return [e.n async for e in sub], sub.closed

    assert asyncio.run(main()) == ([0, 1, 2], True)


def test_closing_its_node_ends_the_iteration():
    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0")

        async def consume():
            return [e.n async for e in sub]

        consumer = asyncio.create_task(consume())
        await aio.publish(node, Q, n=1)
        await aio.drain(30)
        node.close()  # not through the aio subscription: it looks now and then
        return await asyncio.wait_for(consumer, 30)

    assert asyncio.run(main()) == [1]


def test_the_loop_ending_with_subscriptions_open_is_clean(caplog):
    holder = []

    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0", maxsize=2)
        holder.append(sub)
        for i in range(50):
            await aio.publish(node, Q, n=i)
        while sub.inbox.qsize() < 2:
            await asyncio.sleep(0.01)
        # returns with the subscription open, its inbox full and a delivery waiting for room

    with caplog.at_level(logging.WARNING, logger="eventpy"):
        asyncio.run(main())
        eventpy.drain(30)  # the waiting delivery found the loop closed: nothing is stuck
    (sub,) = holder
    assert sub.closed and sub.inbox.closed  # unsubscribed at its next event after the loop ended
    assert eventpy.stats()["callback_errors"] == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_cancelling_a_consumer_in_a_flood_is_prompt():
    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0", maxsize=16)
        taken = 0

        async def slow_consumer():
            nonlocal taken
            async for _ in sub:
                taken += 1
                await asyncio.sleep(0.01)

        async def flood():  # until cancelled
            i = 0
            while True:
                await aio.publish(node, Q, n=i)
                i += 1
                if i % 100 == 0:  # a publish with room returns without a suspension, as Queue.put does
                    await asyncio.sleep(0)

        consumer = asyncio.create_task(slow_consumer())
        publisher = asyncio.create_task(flood())
        while taken < 20:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        consumer.cancel()
        publisher.cancel()
        await asyncio.gather(consumer, publisher, return_exceptions=True)
        took = time.monotonic() - started
        sub.close()
        return took, consumer.cancelled(), publisher.cancelled()

    took, consumer_cancelled, publisher_cancelled = asyncio.run(main())
    assert consumer_cancelled and publisher_cancelled
    assert took < 10  # generous for a loaded machine: it takes milliseconds
    eventpy.drain(60)  # the flood already published is delivered to nobody, and nothing is stuck


def test_a_drain_held_by_a_full_inbox_names_it():
    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0", maxsize=1)
        for i in range(3):
            await aio.publish(node, Q, n=i)
        with pytest.raises(TimeoutError, match=r"eventpy\.aio subscription to aio\.SubQ when 'n >= 0' "
                                               r"\(its inbox of 1 events is full"):
            await aio.drain(1.0)
        got = [(await sub.get()).n for _ in range(3)]
        await aio.drain(30)
        return got

    assert asyncio.run(main()) == [0, 1, 2]


def test_subscribe_checks_its_arguments_on_the_callers_line():
    async def main():
        node = eventpy.connect()
        with pytest.raises(ValueError, match="maxsize"):
            aio.subscribe(node, Q, "n > 0", maxsize=0)
        with pytest.raises(eventpy.GuardError) as raised:
            aio.subscribe(node, Q, "m > 0")
        tb = raised.value.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        return tb.tb_frame.f_code.co_filename

    assert asyncio.run(main()) == __file__


def test_shutdown_does_not_wait_for_a_delivery_held_by_a_full_inbox(caplog):
    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0", maxsize=1)
        for i in range(3):
            await aio.publish(node, Q, n=i)
        while sub.inbox.qsize() < 1:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # the second delivery is waiting for room
        with caplog.at_level(logging.WARNING, logger="eventpy"):
            await asyncio.to_thread(eventpy.shutdown)  # closes the subscription under the delivery
        return [e.n async for e in sub], sub.closed

    assert asyncio.run(main()) == ([0], True)
    # it waited 5 s for the delivery, then said so: the delivery did not see its subscription close
    assert not [r.getMessage() for r in caplog.records if "still running" in r.getMessage()]


def test_made_without_a_running_loop_says_where_to_make_it():
    node = eventpy.connect()
    with pytest.raises(RuntimeError, match="make it in a coroutine"):
        aio.subscribe(node, Q, "n > 0")
    with pytest.raises(RuntimeError, match="make it in a coroutine"):
        aio.Inbox()
    assert not node._local.core.subs  # nothing subscribed
