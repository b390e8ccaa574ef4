"""A clock a test moves by hand, for the embedded overlay (`fresh_overlay(clock=...)`).

Guards with elapsed() move with the overlay's clock; on wall-clock time a test of "where is the
courier after 10 s" would sleep 10 s, and its result would depend on how loaded the machine is.
"""

from __future__ import annotations

import math
import threading
import time


class ManualClock:
    """Seconds since the epoch, as `time.time()`, that stand still until `advance` moves them.
    Starts at the wall-clock time of its creation unless `start` says otherwise."""

    def __init__(self, start: float | None = None) -> None:
        now = time.time() if start is None else start
        if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now):
            raise ValueError(f"a clock starts at a finite number of seconds, not {start!r}")
        self._now = float(now)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by `seconds` (a finite number, 0 or more); returns the new time.
        A clock does not go back: publication times and elapsed() only grow, as on a real one."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
                or seconds < 0:
            raise ValueError(f"advance takes a finite number of seconds, 0 or more, not {seconds!r}")
        with self._lock:
            self._now += float(seconds)
            return self._now

    def __repr__(self) -> str:
        return f"<ManualClock {self._now:.6f}>"
