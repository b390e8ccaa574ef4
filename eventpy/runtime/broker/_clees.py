"""CLEES, cached lazy evaluation of evolving subscriptions (paper 003 §IV-C; §V-C, Figure 5).

As in LEES (§V-B), a conjunction's non-evolving constraints stay in the matcher and its evolving
bounds do not, so the matcher's candidates include every evolving conjunction whose other
constraints hold. Each such candidate is checked against a cached *version* of the conjunction
(§V-C's Lazy Evolution Cache): the first publication that finds it without a version, or with one
that expired, builds one, which then serves the publications of the next TT seconds (`cache_ttl`,
the paper's time threshold). Figure 2(b), TT 1 s: publications 1, 1.5 and 3 s after subscribing
build a version at 1 s and 3 s and find the cached one at 1.5 s.

Where this differs from the paper, and why. The paper's version is the subscription evaluated
with the evolution variables' values when it is built (a point value, used for TT seconds while
the subscription moves on), so its CLEES has false positives and negatives (§VI-B, Figure 7).
EventPy delivers exactly (strictness and coverage against a centralized evaluation of the guard
at the event's publication time), so here:
* a version holds, for each evolving bound, the hull of the values it takes over the publication
  times [t, t + TT] the version serves (`guards._hull`, as VES's versions over their window): it
  can only turn a candidate away, never admit one;
* t and the expiry are publication times (the time an event carries, §V-D's snapshot at its entry
  point), not the broker's clock: the version is about the events it is used for. t is the
  publication time of the event that built it; an event published after t + TT builds a new one
  (the paper's expiry, "current time plus TT");
* an event published before t (it arrived late: a longer path from another publisher, a broker
  behind) is outside what the version covers: it skips the version and is checked exactly, as
  under LEES, and does not move the cached interval back (counted: `clees_late`);
* a candidate that passes its version is checked exactly (`SubState.residual_holds`), as every
  candidate is under VES and LEES.
The cache saves what it saves in the paper: evaluating every evolving predicate of every candidate
for every publication (LEES's cost) becomes a few interval comparisons, plus one version per
conjunction per TT seconds in which publications find it. A version is built from the
subscription's values, so an update of them drops its versions (`invalidate`).
"""

from __future__ import annotations

import math
from typing import Any, Hashable

from ...guards._hull import hull, never_holds

Key = tuple[Hashable, int, int]  # (link, sid, conjunction): the matcher's key
NONE_YET = (math.inf, -math.inf, None)  # an interval nothing is published in: the next event builds


class VersionCache:
    """The cached versions of one event type's evolving conjunctions, for Broker(evolving_engine=
    "clees"); `builds`, `hits` and `late` are what the broker's stats show."""

    __slots__ = ("ttl", "index", "slots", "builds", "hits", "late")

    def __init__(self, index: dict[str, int], ttl: float) -> None:
        self.ttl = ttl
        self.index = index  # attribute -> its position in an event's values
        # per evolving conjunction, [t, t + TT, checks, SubState, ci]: its version covers the
        # publication times [t, t + TT]; checks are (attribute index, lo, lo closed, hi, hi closed),
        # one per bound that could be ranged, or None: the conjunction holds nowhere in [t, t + TT].
        # One list per conjunction, looked up once per candidate: this is CLEES's cost per candidate
        self.slots: dict[Key, list] = {}
        self.builds = self.hits = self.late = 0

    def add(self, state: Any) -> None:
        for ci, bounds in enumerate(state.evolving):
            if bounds:
                self.slots[state.link, state.sid, ci] = [*NONE_YET, state, ci]

    def drop(self, state: Any) -> None:
        """The subscription went away (UNSUB, a new SUB of its sid, its link lost)."""
        for ci, bounds in enumerate(state.evolving):
            if bounds:
                self.slots.pop((state.link, state.sid, ci), None)

    def invalidate(self, state: Any) -> None:
        """Its values changed: its versions were built from the old ones."""
        for ci, bounds in enumerate(state.evolving):
            slot = self.slots.get((state.link, state.sid, ci)) if bounds else None
            if slot is not None:
                slot[0:3] = NONE_YET

    def versions(self) -> int:
        """How many conjunctions have a version (expired or not)."""
        return sum(1 for slot in self.slots.values() if slot[0] <= slot[1])

    def filter(self, keys: list, values: tuple, t: float) -> list:
        """The matcher's candidates `keys` for an event published at t, without the evolving
        conjunctions their versions turn away (each kept one is then checked exactly)."""
        slots = self.slots
        out = []
        hits = 0
        for key in keys:
            slot = slots.get(key)
            if slot is None:  # no evolving bound: the exact check decides, as for any candidate
                out.append(key)
                continue
            if t > slot[1]:
                self._build(slot, t)  # lazy evaluation: no version yet, or it expired
            elif t < slot[0]:
                self.late += 1  # before what the version covers: the exact check alone
                out.append(key)
                continue
            else:
                hits += 1
            checks = slot[2]
            if checks is None:
                continue
            for i, lo, lo_closed, hi, hi_closed in checks:
                v = values[i]
                # written out, not Interval.contains (a call per check)
                if v < lo or v > hi or (v == lo and not lo_closed) or (v == hi and not hi_closed):
                    break
            else:
                out.append(key)
        self.hits += hits
        return out

    def _build(self, slot: list, t: float) -> None:
        lo, hi = t, t + self.ttl
        state, ci = slot[3], slot[4]
        vs = state.values
        checks: list | None = []
        for attr, op, tree in state.evolving[ci]:
            if attr is None:  # a time switch (elapsed() < ttl): off over the whole interval?
                if never_holds(op, tree[0], tree[1], vs, lo, hi):
                    checks = None
                    break
                continue
            iv = hull(op, tree, vs, lo, hi)
            if iv is None:  # cannot be ranged over the interval: the exact check decides
                continue
            if iv.is_empty():
                checks = None
                break
            checks.append((self.index[attr], iv.lo, iv.lo_closed, iv.hi, iv.hi_closed))
        slot[0:3] = (lo, hi, None if checks is None else tuple(checks))
        self.builds += 1
