"""Evolving subscriptions at the broker that holds them (paper 003 §IV-A, VES, with its
overestimating version for forwarding).

Every `horizon` seconds (the paper's minimum evolution interval) the broker recomputes, for each
evolving subscription it holds, the values each evolving bound takes over the window of
publication times [R - horizon, R + 2 * horizon], R being the time of that recomputation (one R
for all, so one window for the whole broker). That *version* goes
* into its matcher, so an event finds its candidates through the index instead of every evolving
  subscription of its type being evaluated (LEES's cost); each candidate is then checked exactly,
  with the event's publication time (`SubState.residual_holds`);
* into its summaries, so brokers upstream narrow as the subscription moves instead of admitting
  every event of the type.
An event published outside the window (a broker far behind) is matched by evaluating every
evolving subscription of its type exactly, as LEES would. The recomputation runs on the broker's
timer (`tick`), and also when an event of an evolving type arrives after the window was due to
move (a broker nothing ticks, the embedded one, stays fresh through its own traffic).

The previous version covers up to R + horizon, so an upstream broker holding either one admits
every event published within a horizon of its installation, as long as events and summaries take
less than `horizon` to cross the overlay.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable

from ...guards._hull import hull, never_holds
from ...guards._plan import EMPTY_INTERVAL, EMPTY_SET, integral
from .._params import INT_MAX, INT_MIN
from ..model import filter_matches

DEFAULT_HORIZON = 1.0


class EvolvingHulls:
    def __init__(self, horizon: float, overlay_clock: Callable[[], float], indexed: bool = True) -> None:
        if not horizon > 0:
            raise ValueError(f"the evolution horizon must be above 0 s, not {horizon!r}")
        self.horizon = horizon
        self.overlay_clock = overlay_clock  # the clock of publication times (Pub.time)
        self.indexed = indexed  # versions go into the matcher too (else only into the summaries)
        self.anchor: float | None = None  # R: when the versions were last recomputed
        self.members: dict[tuple[str, Any], Any] = {}  # (event type, (link, sid)) -> SubState
        self.types: Counter = Counter()  # event type -> how many evolving subscriptions it has

    def window(self) -> tuple[float, float]:
        r = self.anchor if self.anchor is not None else self.overlay_clock()
        return r - self.horizon, r + 2 * self.horizon

    def covers(self, t: float) -> bool:
        """Whether the current versions hold every value an event published at t can match."""
        lo, hi = self.window()
        return lo <= t <= hi

    def track(self, etype: str, key: Any, state: Any) -> None:
        if self.anchor is None:
            self.anchor = self.overlay_clock()
        if (etype, key) not in self.members:
            self.types[etype] += 1
        self.members[etype, key] = state

    def forget(self, etype: str, key: Any) -> None:
        if self.members.pop((etype, key), None) is not None:
            self.types[etype] -= 1
            if not self.types[etype]:
                del self.types[etype]
            if not self.members:
                self.anchor = None

    def next_due(self) -> float | None:
        """When the versions are next recomputed, on the overlay clock."""
        return None if self.anchor is None else self.anchor + self.horizon

    def stale(self) -> bool:
        return self.anchor is not None and self.overlay_clock() >= self.anchor + self.horizon

    def advance(self) -> list[tuple[str, Any, Any]]:
        """Move the window to now; the subscriptions whose versions must be recomputed."""
        self.anchor = self.overlay_clock()
        return [(etype, key, state) for (etype, key), state in self.members.items()]


def version_filter(state: Any, ci: int, schema: dict[str, type], window: tuple[float, float]) -> dict:
    """The conjunction's version over the window: its constraints, each evolving bound narrowed to
    the values it takes over the window (a bound that cannot be bounded stays open)."""
    flt = state.filter(ci)
    for attr, op, tree in state.evolving[ci]:
        if attr is None:  # a time switch: off over the whole window, the version admits nothing
            if never_holds(op, tree[0], tree[1], state.values, *window):
                first = next(iter(schema))
                return {first: EMPTY_INTERVAL if schema[first] in (int, float) else EMPTY_SET}
            continue
        iv = hull(op, tree, state.values, *window)
        if iv is None:
            continue
        iv = integral(iv) if schema[attr] is int else outward_floats(iv)
        cur = flt.get(attr)
        flt[attr] = iv if cur is None else cur.intersect(iv)
    return flt


def outward_floats(iv: Any) -> Any:
    """A float attribute's hull with every int end beyond the wire's 64 bits (a parameter near
    2**64 plus elapsed()) as a float rounded outwards: the version still covers the exact bound,
    and the summary that carries it can be sent (integral() does this for int attributes)."""
    lo, hi = iv.lo, iv.hi
    if isinstance(lo, int) and not INT_MIN <= lo <= INT_MAX:
        lo = math.nextafter(float(lo), -math.inf)
    if isinstance(hi, int) and not INT_MIN <= hi <= INT_MAX:
        hi = math.nextafter(float(hi), math.inf)
    return iv._replace(lo=lo, hi=hi)


class Evolving:
    """The versions of the evolving subscriptions a broker holds, for Broker (a mixin reading its
    state: `types`, `evolving`, `_propagate`)."""

    def _version(self, ts: Any, state: Any, ci: int) -> dict:
        """What the summaries get of a conjunction: its filter, or its version."""
        if not state.evolving[ci]:
            return state.filter(ci)
        return version_filter(state, ci, ts.etype.schema, self.evolving.window())

    def _indexed(self, state: Any, ci: int, version: dict) -> dict:
        """What the matcher gets: the version, unless the broker was told not to index evolving
        subscriptions (`Broker(index_evolving=False)`: every one is then a candidate, as the
        paper's LEES engine has them; the baseline of tools/bench/evolving.py)."""
        return version if self.evolving.indexed or not state.evolving[ci] else state.filter(ci)

    def _revise(self, ts: Any, state: Any, ci: int, attrs: Any = ()) -> None:
        """Recompute a conjunction's version after its window moved or a value it reads changed:
        in the index (its evolving attributes, and `attrs`, the constraints that changed) and in
        the summaries."""
        key = (state.link, state.sid, ci)
        flt = self._version(ts, state, ci)
        indexed = self._indexed(state, ci, flt)
        touched = {a if a is not None else next(iter(ts.etype.schema)) for a, _, _ in state.evolving[ci]}
        for attr in touched.union(attrs):  # a time switch turns the version off on the first attribute
            ts.matcher.update(key, attr, indexed.get(attr))
        ts.summary.set_entry(state.link, key, flt)

    def _refresh_versions(self, out: list) -> None:
        """The window moves to now: every evolving subscription's version is recomputed."""
        touched = {}
        for etype, key, state in self.evolving.advance():
            ts = self.types[etype]
            for ci in state.switched_on:
                if state.evolving[ci]:
                    self._revise(ts, state, ci)
            touched[etype] = ts
        for ts in touched.values():
            self._propagate(ts, out)

    def _evolving_keys(self, ts: Any, values: tuple, time: float) -> list:
        """The index's candidates for an event of a type with evolving subscriptions; for one
        published outside the versions' window, also every evolving conjunction whose own
        constraints hold (each is then checked exactly, as any candidate)."""
        keys = ts.matcher.match(values)
        if self.evolving.covers(time):
            return keys
        self._stats["evolving_outside_window"] += 1
        keys = list(keys)  # extended below: not a list a matcher might keep
        seen = set(keys)
        index = ts.etype.index
        for (etype, (link, sid)), state in self.evolving.members.items():
            if etype != ts.etype.name:
                continue
            for ci in state.switched_on:
                key = (link, sid, ci)
                if state.evolving[ci] and key not in seen and filter_matches(state.filter(ci), index, values):
                    keys.append(key)
                    seen.add(key)
        return keys
