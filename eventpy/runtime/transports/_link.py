"""The frames waiting for one peer of a broker, and the bounds that keep them from growing the
broker's memory without end (a peer that stopped reading, or reads more slowly than its events
arrive): the TCP broker (tcp.py) gives each link one `_Link`."""

from __future__ import annotations

import asyncio
import time
from collections import deque

DEFAULT_MAX_PENDING = 32 << 20  # bytes queued towards one peer before it may count as stuck
STALL_SECONDS = 2.0  # ... if, in addition, nothing could be written to it for this long
# ... or, however it reads, once more than max_pending has waited for it this long without a
# break: a peer that reads, but more slowly than its events arrive, made progress often enough
# never to stall, and its queue (the broker's memory) grew for as long as it fell behind. A burst
# a reading peer catches up with (its queue back under max_pending) does not count.
BEHIND_SECONDS = 30.0
HARD_FACTOR = 16  # ... and at once past this many times max_pending (512 MiB by default)
_CHUNK = 256 << 10  # the most one write takes, so that progress is seen often


class _Link:
    """Outgoing frames of one link, written by one task. What waits for a peer is bounded: once
    more than `max_pending` bytes wait and nothing could be written for `stall` seconds (a peer
    that stopped reading), or more than `max_pending` has waited for `behind` seconds without a
    break (one that reads more slowly than its events arrive), or HARD_FACTOR times `max_pending`
    waits at all, the link is closed (the peer reconnects and re-subscribes; events queued for it
    are lost, as at a crash) instead of growing memory."""

    def __init__(self, writer: asyncio.StreamWriter, max_pending: int = DEFAULT_MAX_PENDING,
                 stall: float = STALL_SECONDS, behind: float = BEHIND_SECONDS) -> None:
        self.writer = writer
        self.frames: deque[bytes] = deque()
        self.pending = 0
        self.max_pending = max_pending
        self.stall = stall
        self.behind = behind
        self.progress = time.monotonic()
        self.over_since: float | None = None  # since when more than max_pending waits (None: it does not)
        self.ready = asyncio.Event()
        self.closed = False
        self.overflowed = ""  # why it was closed for its queue: "stalled", "behind" or "hard"

    def send(self, frame: bytes) -> None:
        if self.closed:
            return
        self.pending += len(frame)
        if self.pending > self.max_pending:
            now = time.monotonic()
            if self.over_since is None:
                self.over_since = now
            why = ("stalled" if now - self.progress > self.stall else
                   "behind" if now - self.over_since > self.behind else
                   "hard" if self.pending > HARD_FACTOR * self.max_pending else "")
            if why:
                self.overflowed = why
                self.closed = True
                self.frames.clear()
                self.writer.transport.abort()  # the reader sees the connection drop and cleans up
                return
        self.frames.append(frame)
        self.ready.set()

    async def pump(self) -> None:
        try:
            while not self.closed:
                await self.ready.wait()
                self.ready.clear()
                while self.frames:
                    parts, size = [], 0
                    while self.frames and size < _CHUNK:  # small writes: progress is visible
                        parts.append(self.frames.popleft())
                        size += len(parts[-1])
                    self.writer.write(b"".join(parts))
                    await self.writer.drain()
                    self.pending -= size
                    self.progress = time.monotonic()
                    if self.pending <= self.max_pending:
                        self.over_since = None  # caught up: a burst, not a peer falling behind
        except (ConnectionError, OSError):
            pass
