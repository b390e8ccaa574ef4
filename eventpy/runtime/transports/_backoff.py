"""How long a TCP node (or a broker re-dialing a neighbor) waits before it tries again.

The wait doubles with every failure, up to a cap, with jitter (so that the clients of a broker
that restarts do not all come back in the same instant). A *session* that ends is a failure too,
unless it stayed up for `healthy` seconds: before, the wait went back to its minimum at every
connection that opened, so a broker that sent a bad frame right after its HELLO had its clients
reconnect ~20 times a second for ever.
"""

from __future__ import annotations

import random
import time
from typing import Callable

BASE = 0.05  # seconds before the first retry
CAP = 5.0  # the longest wait (before jitter)
HEALTHY = 10.0  # a session that lasted this long resets the wait


class Backoff:
    def __init__(self, base: float = BASE, cap: float = CAP, healthy: float = HEALTHY, *,
                 clock: Callable[[], float] = time.monotonic,
                 rand: Callable[[], float] = random.random) -> None:
        self.base, self.cap, self.healthy = base, cap, healthy
        self.clock, self.rand = clock, rand
        self.level = 0  # failures since the last healthy session (while the wait still grows)
        self._since: float | None = None  # when the current session began
        self._step = 0.0  # the last wait before jitter

    def connected(self) -> None:
        """A session began."""
        self._since = self.clock()

    def lost(self) -> None:
        """The session ended; if it stayed up long enough, the failures before it are forgiven."""
        if self._since is not None and self.clock() - self._since >= self.healthy:
            self.level, self._step = 0, 0.0
        self._since = None

    def next(self) -> tuple[float, bool]:
        """The wait before the next attempt, and whether it grew (escalated): a caller logs on an
        escalation only, so a peer that keeps failing is logged a few times, not once per attempt."""
        step = min(self.cap, self.base * 2 ** self.level)
        escalated = step > self._step
        self._step = step
        if step < self.cap:
            self.level += 1
        # "equal jitter": never less than half the step, so the wait still grows
        return step * (0.5 + 0.5 * self.rand()), escalated
