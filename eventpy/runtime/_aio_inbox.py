"""A bounded hand-off from EventPy's delivery threads to one asyncio loop (`eventpy.aio.Inbox`).

The hand-off a program used to write, one `loop.call_soon_threadsafe(queue.put_nowait, e)` per
event, put one handle per event in the loop's ready queue: under a flood that queue grew without
bound, and Ctrl-C, whose cancellation is queued behind it, took 30-190 s to reach a `finally`.
Here the events wait in a deque of at most `maxsize`; the loop is woken once for however many
arrive while a consumer waits (at most one wake-up handle queued per inbox), and a delivery
thread that finds the inbox full waits for room, holding only the later events of its own
subscription (or .epy object): nothing is dropped, and no other subscription waits.

The inbox closes on `close()` (the consumer still gets what it holds, then the end), and when
its loop has closed (`asyncio.run` returned): a delivery finds that out at its next event or
while it waits for room (`_POLL`), drops the event, as there is nobody left to take it, and
calls `on_loop_end` once (an `eventpy.aio` subscription unsubscribes there).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from typing import Any, Callable

log = logging.getLogger("eventpy.aio")
_POLL = 0.2  # seconds between a full inbox's checks that its loop still exists (a delivery thread)
_SOURCE_POLL = 0.5  # seconds between a waiting consumer's checks that its source is still open


class InboxClosed(Exception):
    """`Inbox.get()` (or an `eventpy.aio` subscription's) after the end: closed and empty."""


class Inbox:
    """Events for one asyncio loop, put by any other thread: `put` waits while `maxsize` events
    wait (see the module's docstring); `await get()` or `async for` takes them in order."""

    def __init__(self, maxsize: int = 1024, *, loop: asyncio.AbstractEventLoop | None = None,
                 source_closed: Callable[[], bool] | None = None,
                 on_loop_end: Callable[[], None] | None = None) -> None:
        """`loop`: the running loop unless given. `source_closed`: tells the consumer that nothing
        will be put any more (a subscription closed by its node); `on_loop_end`: called once, on a
        delivery thread, when a put finds the loop closed."""
        if type(maxsize) is not int or maxsize < 1:
            raise ValueError(f"maxsize is the number of events an inbox holds, at least 1, not {maxsize!r}")
        self._loop = loop if loop is not None else running_loop("an eventpy.aio Inbox")
        self.maxsize = maxsize
        self._items: deque = deque()
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._getters: list[asyncio.Future] = []  # consumers waiting on the loop
        self._wake_queued = False  # a wake-up handle waits in the loop's ready queue
        self._closed = False
        self._source_closed = source_closed
        self._on_loop_end = on_loop_end
        self.peak = 0  # the most events it has held at once (a flood shows its bound here)

    # -- any thread but the loop's -----------------------------------------------------------------
    def put(self, item: Any) -> bool:
        """Add `item`, waiting while the inbox is full; False (dropped) if the inbox is closed, or
        its source or its loop has. On the loop's own thread it cannot wait: RuntimeError when full."""
        loop_ended = wake = False
        with self._lock:
            while True:
                if self._closed:
                    return False
                if self._loop.is_closed():
                    loop_ended = True
                    self._closed = True
                    self._room.notify_all()
                    break
                if self._source_closed is not None and self._source_closed():
                    # closed by its node or shutdown(), whose wait for the running callbacks this
                    # delivery would otherwise hold for the whole 5 s
                    wake = self._close_locked()
                    break
                if len(self._items) < self.maxsize:
                    self._items.append(item)
                    if len(self._items) > self.peak:
                        self.peak = len(self._items)
                    wake = self._wake_wanted()
                    break
                if asyncio._get_running_loop() is self._loop:
                    raise RuntimeError("Inbox.put on its own loop's thread with the inbox full: it would "
                                       "wait for itself")
                self._room.wait(_POLL)
            queued = not self._closed
        if loop_ended:
            self._loop_ended()
        if wake:
            self._call_on_loop(self._wake)
        return queued

    def _wake_wanted(self) -> bool:
        """Under the lock: True if the caller is to wake the loop (a consumer waits and no
        wake-up is queued yet); it is then counted as queued."""
        if self._getters and not self._wake_queued:
            self._wake_queued = True
            return True
        return False

    def _close_locked(self) -> bool:
        """Under the lock: closed, puts waiting for room told; True if the loop is to be woken."""
        self._closed = True
        self._room.notify_all()
        return self._wake_wanted()

    def _call_on_loop(self, fn: Callable[[], None]) -> None:
        try:
            self._loop.call_soon_threadsafe(fn)
        except RuntimeError:  # closed since we looked: what it holds is nobody's now
            with self._lock:
                self._closed = True
                self._room.notify_all()

    def _loop_ended(self) -> None:
        with self._lock:
            held, on_end, self._on_loop_end = len(self._items), self._on_loop_end, None
            self._items.clear()
        log.info("the asyncio loop of an eventpy.aio inbox has closed; the %d events it held and "
                 "the later ones are dropped", held)
        if on_end is not None:
            on_end()

    # -- the loop's thread -------------------------------------------------------------------------
    def _wake(self) -> None:
        with self._lock:
            self._wake_queued = False
            getters, self._getters = self._getters, []
        for f in getters:
            if not f.done():
                f.set_result(None)

    def get_nowait(self) -> Any:
        """The next event; asyncio.QueueEmpty if none waits, InboxClosed after the end."""
        with self._lock:
            if self._items:
                item = self._items.popleft()
                self._room.notify()
                return item
            if not self._closed and self._source_closed is not None and self._source_closed():
                self._closed = True
            if self._closed:
                raise InboxClosed("the inbox is closed")
        raise asyncio.QueueEmpty

    async def get(self) -> Any:
        """The next event, waiting for one; InboxClosed once it is closed and empty. Cancelling
        the wait takes nothing: the event stays for the next get."""
        while True:
            try:
                return self.get_nowait()
            except asyncio.QueueEmpty:
                pass
            getter = self._loop.create_future()
            with self._lock:
                if self._items or self._closed:
                    continue  # arrived or closed since get_nowait looked
                self._getters.append(getter)
            # a subscription closed by its node (node.close(), eventpy.shutdown()) says nothing
            # to the inbox: look again now and then while waiting
            timer = (self._loop.call_later(_SOURCE_POLL, _settle, getter)
                     if self._source_closed is not None else None)
            try:
                await getter
            finally:
                if timer is not None:
                    timer.cancel()
                with self._lock:
                    if getter in self._getters:
                        self._getters.remove(getter)

    def qsize(self) -> int:
        """How many events wait."""
        return len(self._items)

    @property
    def closed(self) -> bool:
        """Nothing more will be put (what it holds can still be taken)."""
        return self._closed

    def close(self) -> None:
        """No more puts (a delivery waiting for room gives up its event); consumers take what it
        holds, then the end. Any thread; a second call does nothing."""
        with self._lock:
            if self._closed:
                return
            wake = self._close_locked()
        if wake:
            if asyncio._get_running_loop() is self._loop:
                self._wake()
            else:
                self._call_on_loop(self._wake)

    def __aiter__(self) -> "Inbox":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.get()
        except InboxClosed:
            raise StopAsyncIteration from None

    def __repr__(self) -> str:
        return f"<eventpy.aio.Inbox {len(self._items)}/{self.maxsize}{' closed' if self._closed else ''}>"


def running_loop(what: str) -> asyncio.AbstractEventLoop:
    """The running loop, or a RuntimeError saying where `what` is made (asyncio's says only "no
    running event loop")."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(f"{what} belongs to the asyncio loop that makes it: make it in a coroutine "
                           "(no loop runs here)") from None


def _settle(f: asyncio.Future) -> None:
    if not f.done():
        f.set_result(None)
