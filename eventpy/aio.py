"""EventPy for asyncio programs: nothing here blocks the loop's thread.

    from eventpy import aio

    async def main():
        node = eventpy.connect()
        async with aio.subscribe(node, Quote, "price < limit", params={"limit": 10.0}) as sub:
            await aio.publish(node, Quote, firm="IBM", price=9.5)
            async for event in sub:          # in order; ends when the subscription closes
                ...
        await aio.drain(5.0)

* `subscribe` delivers into a bounded `Inbox` of the running loop. When the consumer is slower
  than the events and the inbox is full, the delivery thread of that subscription waits for room:
  its later events wait in EventPy (the README's promise for a callback that blocks), no other
  subscription waits, and no event is dropped. The loop is woken once per batch of events, never
  queued a handle per event.
* `publish` publishes at once when the node's outbox has room; when it is full (a broker that is
  not taking messages) it waits for room on a thread of its own and publishes from the loop, so a
  cancelled publish has published nothing. TimeoutError after the node's `publish_wait` (60 s).
* `drain` and `confirm` wait on a daemon thread of their own: a cancelled one returns at once
  (its thread ends within its timeout) and never holds `asyncio.run`'s shutdown, as a thread of
  the loop's default executor would.
* `.epy` objects: an event method puts into an `Inbox` it was given (`self.inbox.put(...)`), with
  the same policy; README shows it.

`import eventpy` does not import this module (nor asyncio).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Mapping

from .runtime._aio_inbox import Inbox, InboxClosed, running_loop
from .runtime._boundary import stays_cut
from .runtime.api import Node, Subscription
from .runtime.api import confirm as _confirm
from .runtime.model import Event, EventType
from .runtime._process import drain as _drain

__all__ = ["AsyncSubscription", "Inbox", "InboxClosed", "confirm", "drain", "publish", "subscribe"]

_ROOM_SLICE = 0.25  # seconds a thread waits for room before the loop looks again (cancellation, deadline)


class AsyncSubscription:
    """A subscription whose events arrive in an `Inbox` of the loop that made it: `async for
    event in sub`, or `await sub.get()`. `update` and `close` are the Subscription's (neither
    waits); `confirm` is awaited. Closing it (also the end of `async with`, or its node's
    close) ends the iteration once the events it holds are taken; the end of its loop
    unsubscribes it, at its next event."""

    def __init__(self, subscription: Subscription, inbox: Inbox) -> None:
        self.subscription = subscription  # the underlying eventpy.Subscription
        self.inbox = inbox

    @property
    def event_type(self) -> EventType:
        return self.subscription.event_type

    @property
    def guard(self) -> str:
        return self.subscription.guard

    @property
    def params(self) -> Mapping[str, Any]:
        return self.subscription.params

    @property
    def closed(self) -> bool:
        return self.subscription.closed

    def update(self, **params: Any) -> None:
        """As `Subscription.update`: queues the UPD and returns."""
        try:
            self.subscription.update(**params)
        except (TypeError, ValueError) as e:
            stays_cut(e)
            raise

    async def confirm(self, timeout: float = 5.0) -> None:
        """As `Subscription.confirm`, awaited off the loop's thread."""
        await _off_the_loop(self.subscription.confirm, timeout)

    async def get(self) -> Event:
        """The next event; InboxClosed once closed and every event held has been taken."""
        return await self.inbox.get()

    def close(self) -> None:
        """Unsubscribe; the events already in the inbox can still be taken. Any thread."""
        try:
            self.subscription.close()
        finally:
            self.inbox.close()

    def __aiter__(self) -> "AsyncSubscription":
        return self

    async def __anext__(self) -> Event:
        try:
            return await self.inbox.get()
        except InboxClosed:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> "AsyncSubscription":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def __enter__(self) -> "AsyncSubscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<eventpy.aio.AsyncSubscription {self.subscription!r} {self.inbox!r}>"


def subscribe(node: Node, etype: Any, guard: str = "True", params: Mapping[str, Any] | None = None,
              *, maxsize: int = 1024, rum: Any = None) -> AsyncSubscription:
    """`node.subscribe(etype, guard, params, rum=rum)` with the events in an Inbox of at most
    `maxsize` of the running loop (call it on the loop; it does not wait)."""
    loop = running_loop("an eventpy.aio subscription")
    holder: list[Subscription] = []

    def unsubscribe_at_loop_end() -> None:  # on a delivery thread, once: nobody can take events now
        if holder:
            holder[0].close()

    inbox = Inbox(maxsize, loop=loop, source_closed=lambda: bool(holder) and holder[0].closed,
                  on_loop_end=unsubscribe_at_loop_end)
    on_event = _putting_into(inbox, etype, guard)
    try:
        sub = node.subscribe(etype, guard, params, on_event, rum=rum)
    except (TypeError, ValueError) as e:
        stays_cut(e)
        raise
    holder.append(sub)
    return AsyncSubscription(sub, inbox)


def _putting_into(inbox: Inbox, etype: Any, guard: str) -> Callable[[Event], None]:
    def put(event: Event) -> None:
        inbox.put(event)

    # what a drain that times out names while the inbox is full (eventpy.runtime._executor)
    name = getattr(etype, "name", None) or getattr(etype, "__qualname__", etype)
    put.__eventpy_what__ = (f"the eventpy.aio subscription to {name} when {guard!r} (its inbox of "  # type: ignore[attr-defined]
                            f"{inbox.maxsize} events is full until its consumer takes one)")
    return put


async def publish(node: Node, etype: Any, /, **attrs: Any) -> None:
    """`node.publish(etype, **attrs)` that never blocks the loop: at once when the node's outbox
    has room; else it waits for room off the loop and publishes then. Cancelled while it waits,
    it has published nothing. TimeoutError (nothing published) after the node's publish wait
    (60 s) without room; the attribute checks raise as `publish`'s do."""
    try:
        if node._publish_if_room(etype, attrs):
            return
    except (TypeError, ValueError) as e:
        stays_cut(e)
        raise
    local = node._local
    deadline = time.monotonic() + local.publish_wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise local.no_room()  # as a blocking publish says it
        await _off_the_loop(local.wait_for_room, min(_ROOM_SLICE, left))
        if node._publish_if_room(etype, attrs):  # a closed node raises RuntimeError here
            return


async def drain(timeout: float = 10.0) -> None:
    """`eventpy.drain(timeout)` awaited off the loop's thread. Events waiting in a full inbox hold
    it, as any callback that blocks does: consume in another task while it waits."""
    await _off_the_loop(_drain, timeout)


async def confirm(target: Any, timeout: float = 5.0) -> None:
    """`eventpy.confirm(target, timeout)` (a Node, a Subscription, an AsyncSubscription or an .epy
    object) awaited off the loop's thread."""
    if isinstance(target, AsyncSubscription):
        target = target.subscription
    await _off_the_loop(_confirm, target, timeout)


def _off_the_loop(fn: Callable[..., Any], *args: Any) -> asyncio.Future:
    """`fn(*args)` on a daemon thread of its own, its outcome in a Future of the running loop. Not
    the loop's default executor: `asyncio.run` waits for its threads when it ends, so a drain
    cancelled by Ctrl-C would hold the program for the rest of its timeout."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def run() -> None:
        try:
            outcome: tuple = (True, fn(*args))
        except BaseException as e:  # the caller's to see, on its loop
            outcome = (False, e)

        def settle() -> None:
            if future.done():  # cancelled: nobody waits
                return
            if outcome[0]:
                future.set_result(outcome[1])
            else:
                future.set_exception(outcome[1])

        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop has closed: nobody waits
            pass

    threading.Thread(target=run, name=f"eventpy-aio-{getattr(fn, '__name__', 'call')}", daemon=True).start()
    return future
