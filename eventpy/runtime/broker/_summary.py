"""Summaries a broker sends upstream (000 §3.4 LUB; 001 §5.6 per-attribute approximation).

A summary for neighbor N covers every active conjunction the broker holds from links other than
N (so that nothing is sent back where it came from, Fig. 2 line 18 `pubs[τ] \\ pj`).

`AttributeSummary` keeps one aggregate per link (the LUB of that link's conjunctions) and, per
attribute, the aggregates' bounds in sorted order, so that the LUB over all links but N is read
off the ends of two sorted lists: O(log L) per change instead of a pass over every entry.
`PosetSummary` is the Siena-style LUB: the roots of a covering poset (000 §3.4, Fig. 2).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Hashable

from sortedcontainers import SortedList

from ..matching import PosetMatcher
from ..model import Constraint, EventType, Filter, Interval, ValueSet, filter_lub

Link = Hashable
_WILD = object()  # an attribute a link's aggregate does not constrain
_MISSING = object()


def _aggregate(filters: list[Filter]) -> dict[str, Constraint] | None:
    acc: dict[str, Constraint] | None = None
    for f in filters:
        if any(c.is_empty() for c in f.values()):
            continue
        acc = dict(f) if acc is None else filter_lub(acc, f)
    return acc


class AttributeSummary:
    name = "attribute"

    def __init__(self, etype: EventType) -> None:
        self.etype = etype
        self.entries: dict[Link, dict[Any, Filter]] = {}  # link -> key -> filter (active only)
        self.aggs: dict[Link, dict[str, Constraint]] = {}  # link -> LUB of its entries
        self.wild: dict[str, set[Link]] = {a: set() for a in etype.attrs}
        self.lo: dict[str, SortedList] = {}
        self.hi: dict[str, SortedList] = {}
        self._cache: dict[Link, dict[str, Constraint | None]] = {}  # neighbor -> attr -> LUB
        self.version = 0  # bumped whenever a summary may have changed
        self.inc: dict[str, Counter] = {}
        self.exc: dict[str, dict[Link, frozenset]] = {}
        for a, t in etype.schema.items():
            if t in (int, float):
                self.lo[a], self.hi[a] = SortedList(), SortedList()
            else:
                self.inc[a], self.exc[a] = Counter(), {}

    # -- maintenance -----------------------------------------------------------------------------
    def set_entry(self, link: Link, key: Any, flt: Filter | None) -> None:
        """Record the active filter of an entry (None: the entry is gone or switched off)."""
        entries = self.entries.setdefault(link, {})
        if flt is None:
            entries.pop(key, None)
        else:
            entries[key] = flt
        self._refresh(link)

    def drop_link(self, link: Link) -> None:
        self.entries.pop(link, None)
        self._refresh(link)

    def _refresh(self, link: Link) -> None:
        entries = self.entries.get(link)
        new = _aggregate(list(entries.values())) if entries else None
        old = self.aggs.get(link)
        if new == old:
            return
        if new is None:
            del self.aggs[link]
        else:
            self.aggs[link] = new
        if not entries:
            self.entries.pop(link, None)
        # only the attributes whose constraint changed touch the sorted bounds (an UPD of one
        # parameter usually changes one attribute)
        for a in self.etype.attrs:
            c_old = None if old is None else old.get(a, _WILD)
            c_new = None if new is None else new.get(a, _WILD)
            if c_old == c_new:
                continue
            if type(c_old) is Interval and type(c_new) is Interval and not (
                    c_old.is_wildcard() or c_new.is_wildcard()):
                self._move_bounds(link, a, c_old, c_new)
                lo = min(c_old.lo, c_new.lo)
                hi = max(c_old.hi, c_new.hi)
                for neighbor, cache in self._cache.items():
                    cached = cache.get(a, _MISSING)
                    # a bound strictly inside a cached LUB cannot move it, nor can the neighbor's
                    # own entries (its LUB leaves them out), nor anything while another link is
                    # a wildcard on `a`
                    if cached is _MISSING or neighbor == link:
                        continue
                    if cached is None:
                        if len(self.wild[a]) > (1 if neighbor in self.wild[a] else 0):
                            continue
                    elif lo > cached.lo and hi < cached.hi:
                        continue
                    del cache[a]
                    self.version += 1
                continue
            if c_old is not None:
                self._contribute(link, a, c_old, -1)
            if c_new is not None:
                self._contribute(link, a, c_new, +1)
            for stale in self._cache.values():
                stale.pop(a, None)
            self.version += 1

    def _move_bounds(self, link: Link, a: str, old: Interval, new: Interval) -> None:
        """An interval that changed: touch only the sorted list of the bound that moved."""
        if (old.lo, old.lo_closed) != (new.lo, new.lo_closed):
            self.lo[a].remove((old.lo, 0 if old.lo_closed else 1, link))
            self.lo[a].add((new.lo, 0 if new.lo_closed else 1, link))
        if (old.hi, old.hi_closed) != (new.hi, new.hi_closed):
            self.hi[a].remove((old.hi, 1 if old.hi_closed else 0, link))
            self.hi[a].add((new.hi, 1 if new.hi_closed else 0, link))

    def _contribute(self, link: Link, a: str, c: Constraint, sign: int) -> None:
        if c is _WILD or c.is_wildcard():
            (self.wild[a].add if sign > 0 else self.wild[a].discard)(link)
        elif isinstance(c, Interval):
            lo_item = (c.lo, 0 if c.lo_closed else 1, link)
            hi_item = (c.hi, 1 if c.hi_closed else 0, link)
            if sign > 0:
                self.lo[a].add(lo_item)
                self.hi[a].add(hi_item)
            else:
                self.lo[a].remove(lo_item)
                self.hi[a].remove(hi_item)
        elif c.exclude:
            if sign > 0:
                self.exc[a][link] = c.values
            else:
                del self.exc[a][link]
        else:
            inc = self.inc[a]
            for v in c.values:
                inc[v] += sign
                if inc[v] == 0:
                    del inc[v]

    # -- reading -----------------------------------------------------------------------------------
    def summary_for(self, neighbor: Link) -> list[dict[str, Constraint]]:
        if not any(link != neighbor for link in self._some_links(neighbor)):
            return []
        cache = self._cache.setdefault(neighbor, {})
        out: dict[str, Constraint] = {}
        for a in self.etype.attrs:
            c = cache.get(a, _MISSING)
            if c is _MISSING:
                c = cache[a] = self._lub_without(a, neighbor)
            if c is not None:
                out[a] = c
        return [out]

    def _lub_without(self, a: str, neighbor: Link) -> Constraint | None:
        """The LUB of every link's constraint on `a` but `neighbor`'s; None for the wildcard."""
        wild = self.wild[a]
        if len(wild) > (1 if neighbor in wild else 0):
            return None  # some other link admits every value of `a`
        if a in self.lo:
            lo = next(item for item in self.lo[a] if item[2] != neighbor)
            hi = next(item for item in reversed(self.hi[a]) if item[2] != neighbor)
            c: Constraint = Interval(lo[0], lo[1] == 0, hi[0], hi[1] == 1)
        else:
            mine = self.aggs.get(neighbor)
            values = {v for v, n in self.inc[a].items()
                      if n > (1 if mine is not None and _includes(mine.get(a), v) else 0)}
            excl = [vs for link, vs in self.exc[a].items() if link != neighbor]
            if excl:
                c = ValueSet(frozenset.intersection(*excl) - values, True)
            else:
                c = ValueSet(frozenset(values))
        return None if c.is_wildcard() else c

    def _some_links(self, neighbor: Link):
        # at most two links are needed to know whether one differs from `neighbor`
        n = 0
        for link in self.aggs:
            yield link
            n += 1
            if n == 2:
                return


def _includes(c: Constraint | None, v: Any) -> bool:
    return isinstance(c, ValueSet) and not c.exclude and v in c.values


class PosetSummary:
    name = "poset"
    version = property(lambda self: self._version)

    def __init__(self, etype: EventType) -> None:
        self.poset = PosetMatcher(etype)
        self._version = 0

    def set_entry(self, link: Link, key: Any, flt: Filter | None) -> None:
        self._version += 1
        if key in self.poset:
            self.poset.remove(key)
        if flt is not None:
            self.poset.add(key, flt)

    def drop_link(self, link: Link) -> None:
        self._version += 1
        for key in [k for k in self.poset.keys() if k[0] == link]:
            self.poset.remove(key)

    def summary_for(self, neighbor: Link) -> list[dict[str, Constraint]]:
        return self.poset.summary(skip=lambda key: key[0] == neighbor)


SUMMARIES = {"attribute": AttributeSummary, "poset": PosetSummary}
