"""The LUB of one link's entries (001 §5.6), kept exact as entries come and go.

The attribute summary's aggregate of a link is the per-attribute LUB of that link's entries.
Recomputed by a pass over them after each removal or narrowing replacement, it made a client with
many subscriptions quadratic at its broker: a fleet process of 4,000 users cost it 18 ms per
user that left and 39 ms per user that changed a one-sided bound (`price <= max_price`, whose
-inf every entry shares, so no replacement could be made in place); closing 10,000 users kept
the broker busy for minutes. Here each entry is counted in per-attribute multisets when it joins
and uncounted when it leaves, and the LUB is read off them: O(log n) per change and per read.

The LUB of intervals is the lowest lower bound (closed if any entry closed there) and the
highest upper bound; of value sets, the union of the included values, or, once an entry
excludes values (`!=`), the values every excluding entry excludes less those an including
entry admits. An attribute one joined entry leaves open is open in the LUB, and so is one whose
LUB admits everything. An entry with an empty constraint admits nothing and is left out.
"""

from __future__ import annotations

from collections import Counter
from heapq import heapify, heappop, heappush
from typing import Any

from ..model import Constraint, EventType, Filter, Interval, ValueSet, set_changes


def recount(counts: Counter, lost: Any, gained: Any) -> None:
    """Counts of values, one less for each value lost (gone at 0), one more for each gained: a
    set that stays a set moves by its difference, not by all of its members."""
    for v in lost:
        n = counts[v] - 1
        if n:
            counts[v] = n
        else:
            del counts[v]
    for v in gained:
        counts[v] += 1


class _Least:
    """A multiset of keys whose least is read in O(log n): counts, and a heap of the keys with
    lazy deletion (a key whose count fell to 0 is dropped when it surfaces)."""

    __slots__ = ("count", "heap")

    def __init__(self) -> None:
        # a plain dict, not a Counter: Counter's __missing__ and __delitem__ are Python code, two
        # interpreted calls per bound an UPD moves (a third of a compiled UPD's instructions)
        self.count: dict[Any, int] = {}
        self.heap: list = []

    def add(self, key: Any, sign: int) -> None:
        count = self.count
        n = count.get(key, 0) + sign
        if n:
            count[key] = n
            if n == 1 and sign > 0:
                heappush(self.heap, key)
                if len(self.heap) > 2 * len(count) + 32:  # stale keys outnumber the live ones
                    self.heap[:] = count.keys()
                    heapify(self.heap)
        else:
            del count[key]

    def least(self) -> Any:
        heap, count = self.heap, self.count
        while heap[0] not in count:
            heappop(heap)
        return heap[0]


class LinkLub:
    """The per-attribute LUB of the entries counted in (`add`) and not counted out (`remove`);
    `value()` is what a pass of `filter_lub` over them gives, without the pass."""

    __slots__ = ("etype", "joined", "open", "lo", "hi", "inc", "exc", "excluding")

    def __init__(self, etype: EventType) -> None:
        self.etype = etype
        self.joined = 0  # entries without an empty constraint
        self.open: Counter = Counter()  # attr -> joined entries that leave it unconstrained
        self.lo: dict[str, _Least] = {}  # (lo, 0 if closed else 1): the least is the LUB's lower end
        self.hi: dict[str, _Least] = {}  # (-hi, 0 if closed else 1)
        self.inc: dict[str, Counter] = {}  # value -> including entries that admit it
        self.exc: dict[str, Counter] = {}  # value -> excluding entries that exclude it
        self.excluding: Counter = Counter()  # attr -> excluding entries
        for a, t in etype.schema.items():
            if t in (int, float):
                self.lo[a], self.hi[a] = _Least(), _Least()
            else:
                self.inc[a], self.exc[a] = Counter(), Counter()

    def add(self, flt: Filter, sign: int = 1) -> None:
        if any(c.is_empty() for c in flt.values()):
            return
        self.joined += sign
        for a in self.etype.attrs:
            self._count(a, flt.get(a), sign)

    def change(self, flt: dict[str, Constraint], attr: str, c: Constraint | None) -> None:
        """Set `attr` of a counted-in entry's filter to `c` (None: open) and recount it: that
        attribute alone while the entry stays joined (an UPD of one bound, the common case)."""
        if c is not None and not c.is_empty() and not any(x.is_empty() for x in flt.values()):
            was = flt.get(attr)
            if (type(c) is ValueSet and type(was) is ValueSet and c.exclude == was.exclude
                    and not c.is_wildcard() and not was.is_wildcard()):
                # a set that stays a set of its kind: the members it lost and gained are
                # recounted, not all of them (a pass over a 50,000-member set at each UPD)
                recount(self.exc[attr] if c.exclude else self.inc[attr], *set_changes(was, c))
            else:
                self._count(attr, was, -1)
                self._count(attr, c, 1)
            flt[attr] = c
            return
        self.remove(flt)
        if c is None:
            flt.pop(attr, None)
        else:
            flt[attr] = c
        self.add(flt)

    def _count(self, a: str, c: Constraint | None, sign: int) -> None:
        if c is None or c.is_wildcard():
            self.open[a] += sign
        elif isinstance(c, Interval):
            self.lo[a].add((c.lo, 0 if c.lo_closed else 1), sign)
            self.hi[a].add((-c.hi, 0 if c.hi_closed else 1), sign)
        else:
            if c.exclude:
                self.excluding[a] += sign
            counts = self.exc[a] if c.exclude else self.inc[a]
            for v in c.values:
                n = counts[v] + sign
                if n:
                    counts[v] = n
                else:
                    del counts[v]

    def remove(self, flt: Filter) -> None:
        """Count out an entry counted in with this very filter (as it was then)."""
        self.add(flt, -1)

    def value(self) -> dict[str, Constraint] | None:
        """The LUB (None: no joined entry), without the attributes it leaves open."""
        if not self.joined:
            return None
        out: dict[str, Constraint] = {}
        for a in self.etype.attrs:
            if self.open[a]:
                continue
            c: Constraint
            if a in self.lo:
                lo, lo_open = self.lo[a].least()
                neg_hi, hi_open = self.hi[a].least()
                c = Interval(lo, not lo_open, -neg_hi, not hi_open)
            elif self.excluding[a]:
                n = self.excluding[a]
                admitted = self.inc[a]
                c = ValueSet(frozenset(v for v, k in self.exc[a].items() if k == n and v not in admitted), True)
            else:
                c = ValueSet(frozenset(self.inc[a]))
            if not c.is_wildcard():
                out[a] = c
        return out
