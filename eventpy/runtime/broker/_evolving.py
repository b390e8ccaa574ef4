"""Upstream hulls of evolving subscriptions (paper 003 §IV-A, VES with its overestimating version
for forwarding). A broker holding an evolving subscription evaluates it exactly, event by event
(LEES, `SubState.residual_holds`); what it tells the brokers upstream is the subscription widened
to every value its evolving bounds take over a window of publication times, recomputed every
`horizon` seconds (the paper's minimum evolution interval), so that the summary an upstream broker
filters with narrows as the subscription moves instead of admitting every event of the type.

The window at time T is [T - horizon, T + 2 * horizon]: the previous hull covers until T + horizon,
so an upstream broker holding either one admits every event published within a horizon of its
installation, as long as events and summaries take less than `horizon` to cross the overlay.
"""

from __future__ import annotations

import heapq
from itertools import count
from typing import Any, Callable

from ...guards._hull import hull
from ...guards._plan import integral

DEFAULT_HORIZON = 1.0


class EvolvingHulls:
    def __init__(self, horizon: float, overlay_clock: Callable[[], float],
                 alive: Callable[[str, Any, Any], bool]) -> None:
        if not horizon > 0:
            raise ValueError(f"the evolution horizon must be above 0 s, not {horizon!r}")
        self.horizon = horizon
        self.overlay_clock = overlay_clock  # the clock of publication times (Pub.time)
        self._heap: list[tuple[float, int, str, Any, Any]] = []
        self._seq = count()
        # entries of subscriptions that went away are dropped when they come due, or, where
        # nothing ticks (a broker without timers), when the heap has doubled since the last sweep
        self._alive = alive
        self._sweep_at = 64

    def window(self) -> tuple[float, float]:
        now = self.overlay_clock()
        return now - self.horizon, now + 2 * self.horizon

    def track(self, etype: str, key: Any, state: Any) -> None:
        """Recompute `state`'s hulls a horizon from now (states that went away are skipped then)."""
        heapq.heappush(self._heap, (self.overlay_clock() + self.horizon, next(self._seq), etype, key, state))
        if len(self._heap) > self._sweep_at:
            self._heap = [e for e in self._heap if self._alive(e[2], e[3], e[4])]
            heapq.heapify(self._heap)
            self._sweep_at = max(64, 2 * len(self._heap))

    def next_due(self) -> float | None:
        """When the next recomputation is due, on the overlay clock."""
        return self._heap[0][0] if self._heap else None

    def due(self) -> list[tuple[str, Any, Any]]:
        now = self.overlay_clock()
        out = []
        while self._heap and self._heap[0][0] <= now:
            _, _, etype, key, state = heapq.heappop(self._heap)
            out.append((etype, key, state))
        return out


def summary_filter(state: Any, ci: int, schema: dict[str, type], window: tuple[float, float]) -> dict:
    """The conjunction's filter for summaries: its indexed constraints, each evolving bound
    narrowed to the values it takes over the window (a bound that cannot be bounded stays open)."""
    flt = state.filter(ci)
    for attr, op, tree in state.evolving[ci]:
        iv = hull(op, tree, state.values, *window)
        if iv is None:
            continue
        if schema[attr] is int:
            iv = integral(iv)
        cur = flt.get(attr)
        flt[attr] = iv if cur is None else cur.intersect(iv)
    return flt
