"""The wall-clock timer of a node's update monitor (000 Fig. 10 lines 37-44; docs/concurrency.md):
exact values come back once a monitored subscription calms down. The simulator does the same on
its virtual clock (transports/inproc.py)."""

from __future__ import annotations

import threading
from typing import Any

from .client import ClientCore


class Settler:
    """One timer per node, set for the earliest moment some subscription's update rate can fall
    below freq_approx (`ClientCore.settle_due`), and set again while one still holds an
    approximation. Its state is guarded by the node's lock."""

    def __init__(self, local: Any) -> None:
        self._local = local  # the node's LocalNode: its lock, its core, `send`
        self._monitored: dict[int, Any] = {}  # states that may hold an approximation
        self._timer: threading.Timer | None = None
        self._due = 0.0  # when the timer fires, on the core's clock

    def later(self, state: Any) -> None:
        """Check `state` when it may have calmed down."""
        local = self._local
        with local.lock:
            if local.closed:
                return
            due = local.core.settle_due(state)
            if due is None:  # no approximation in force (or closed): nothing to settle
                # kept before, so a node with the monitor on held every subscription ever
                # updated, closed or not, and what its callback reaches, until a timer fired
                self._monitored.pop(id(state), None)
                return
            self._monitored[id(state)] = state
            if self._timer is not None and self._due <= due:
                return
            if self._timer is not None:
                self._timer.cancel()  # set for later than this one
            timer = self._timer = threading.Timer(max(0.0, due - local.core.clock()), self._fire)
            timer.args = (timer,)
            timer.daemon = True
            self._due = due
        timer.start()  # outside the lock (docs/concurrency.md)

    def cancel(self) -> None:
        """The node closes (called under its lock)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._monitored.clear()

    def _fire(self, timer: threading.Timer) -> None:
        with self._local.lock:
            if self._timer is not timer:  # cancelled for an earlier one as it fired
                return
            self._timer = None
            states = list(self._monitored.values())
            self._monitored.clear()

        def settle(core: ClientCore, state: Any) -> bool:  # under the node lock (LocalNode.send)
            core.settle(state)
            return core.approximating(state)

        for state in states:
            try:
                still = self._local.send(lambda core, st=state: settle(core, st))
            except RuntimeError:  # the node closed meanwhile
                return
            if still:
                self.later(state)
