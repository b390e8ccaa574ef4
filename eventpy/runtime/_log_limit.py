"""Warnings about a peer's bad input, bounded: a buggy or hostile peer that sends thousands of
refused messages (or connections) a second wrote a log line for each, and could fill the disk of
a broker's machine while the broker itself held up. Each key (a link, a peer address) gets
`burst` lines per `window` seconds; the rest are counted, and the first line after the window
says how many were left out (the broker's stats count every one). A key the table forgets to
make room (MAX_KEYS) has its count said with the line that made the room."""

from __future__ import annotations

import time
from typing import Callable, Hashable

MAX_KEYS = 1024  # keys remembered at once: random peer addresses cannot grow the table for ever


class LogLimit:
    def __init__(self, burst: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.window = window
        self.clock = clock
        self._seen: dict[Hashable, list] = {}  # key -> [window start, lines said, lines left out]

    def allow(self, key: Hashable) -> tuple[bool, str]:
        """Whether to log this one, and what to add to its line: how many lines were left out
        for `key` in the windows before it, and for keys forgotten to make room for it ("" when
        none, and always when this one is left out too)."""
        now = self.clock()
        seen = self._seen.get(key)
        if seen is None or now - seen[0] >= self.window:
            note = left_out_note(seen[2] if seen is not None else 0)
            if seen is None and len(self._seen) >= MAX_KEYS:
                note += self._forget_old(now)
            self._seen[key] = [now, 1, 0]
            return True, note
        if seen[1] < self.burst:
            seen[1] += 1
            return True, ""
        seen[2] += 1
        return False, ""

    def _forget_old(self, now: float) -> str:
        """Room in the table: the keys whose window is over, else the oldest half. What they
        left out is said now (the line that asked for room is always said), or never."""
        stale = [k for k, s in self._seen.items() if now - s[0] >= self.window]
        left_out = peers = 0
        for k in stale or list(self._seen)[: len(self._seen) // 2]:
            n = self._seen.pop(k)[2]
            left_out += n
            peers += n > 0
        if not left_out:
            return ""
        return (f" ({left_out} more like it from {peers} other peer{'s' * (peers != 1)}, no longer tracked, "
                "were not logged)")


def left_out_note(n: int) -> str:
    return f" ({n} more like it in the last window were not logged)" if n else ""
