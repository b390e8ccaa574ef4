"""Summaries a broker sends upstream (000 §3.4 LUB; 001 §5.6 per-attribute approximation).

A summary for neighbor N covers every active conjunction the broker holds from links other than
N (so that nothing is sent back where it came from, Fig. 2 line 18 `pubs[τ] \\ pj`).

`AttributeSummary` keeps one aggregate per link (the LUB of that link's conjunctions) and, per
ordered attribute, the aggregates' bounds in two heaps (lowest lower bound first, highest upper
bound first), so that the LUB over all links but N is read off their tops: O(log L) per change
instead of a pass over every entry. A bound that moves pushes its new value and leaves the old
one behind, recognised as stale when it surfaces (the heaps are compacted when stale items
outnumber the live ones), so a parametric update costs one push, no removal from a sorted list.
`PosetSummary` (_summaries_other.py) is the Siena-style LUB: the roots of a covering poset (000 §3.4,
Fig. 2); `NoSummary` is kept for a type no broker upstream reads.
"""

from __future__ import annotations

from collections import Counter
from heapq import heapify, heappop, heappush
from itertools import count
from typing import Any, ClassVar, Hashable

from ..model import INF, Constraint, EventType, Filter, Interval, ValueSet, derive, filter_lub, set_changes
from ._link_lub import LinkLub, recount
from ._summaries_other import PosetSummary

Link = Hashable
_WILD = object()  # an attribute a link's aggregate does not constrain
_MISSING = object()


class _Heap:
    """Lazy-deletion heap of one bound per link: items (key, closedness rank, tick, link).

    `of[link]` is the link's live item; any other item in `heap` is stale. The tick is unique,
    so items never compare links (which need not be ordered)."""

    __slots__ = ("heap", "of")

    def __init__(self) -> None:
        self.heap: list[tuple] = []
        self.of: dict[Link, tuple] = {}

    def put(self, link: Link, item: tuple) -> None:
        self.of[link] = item
        heap = self.heap
        heappush(heap, item)
        if len(heap) > 2 * len(self.of) + 32:
            heap[:] = self.of.values()
            heapify(heap)

    def drop(self, link: Link) -> None:
        of = self.of
        del of[link]
        if not of:  # the last link left: nothing stale stays behind (put compacts only on a push)
            self.heap.clear()
        elif len(self.heap) > 2 * len(of) + 32:
            self.heap[:] = of.values()
            heapify(self.heap)

    def top(self, neighbor: Link) -> tuple:
        """The smallest live item of a link other than `neighbor` (there must be one)."""
        heap, of = self.heap, self.of
        while True:
            item = heap[0]
            if of.get(item[3]) is not item:
                heappop(heap)  # stale: the link's bound moved or the link left
            elif item[3] != neighbor:
                return item
            else:
                break
        heappop(heap)  # the neighbor's own bound: look below it, then put it back
        try:
            while True:
                nxt = heap[0]
                if of.get(nxt[3]) is nxt:
                    return nxt
                heappop(heap)
        finally:
            heappush(heap, item)


def _aggregate(filters: list[Filter], acc: dict[str, Constraint] | None = None) -> dict[str, Constraint] | None:
    """The LUB of `acc` (None: nothing yet) and the filters, those with an empty constraint left out."""
    for f in filters:
        if any(c.is_empty() for c in f.values()):
            continue
        acc = dict(f) if acc is None else filter_lub(acc, f)
    return acc


class AttributeSummary:
    # (ClassVar: constants of the class, read off the class too, also when compiled by mypyc)
    name: ClassVar[str] = "attribute"
    sorts: ClassVar[bool] = False  # its summary is one filter

    def __init__(self, etype: EventType) -> None:
        self.etype = etype
        # link -> key -> filter (active only); the summary owns these dicts: an UPD changes them
        # in place (LinkLub.change)
        self.entries: dict[Link, dict[Any, dict[str, Constraint]]] = {}
        self.aggs: dict[Link, dict[str, Constraint]] = {}  # link -> LUB of its entries
        self.lubs: dict[Link, LinkLub] = {}  # link -> its entries counted, to read that LUB off
        self.wild: dict[str, set[Link]] = {a: set() for a in etype.attrs}
        self.lo: dict[str, _Heap] = {}  # items (lo, 0 if closed else 1, tick, link)
        self.hi: dict[str, _Heap] = {}  # items (-hi, 0 if closed else 1, tick, link)
        self._tick = count()
        self._cache: dict[Link, dict[str, Constraint | None]] = {}  # neighbor -> attr -> LUB
        self._dirty: set[Link] = set()  # links whose aggregate is recomputed at the next read
        self._added: dict[Link, list] = {}  # links that only gained entries since: their keys
        self.version = 0  # bumped whenever a summary may have changed
        self.inc: dict[str, Counter] = {}
        self.exc: dict[str, dict[Link, frozenset]] = {}
        for a, t in etype.schema.items():
            if t in (int, float):
                self.lo[a], self.hi[a] = _Heap(), _Heap()
            else:
                self.inc[a], self.exc[a] = Counter(), {}

    # -- maintenance -----------------------------------------------------------------------------
    def set_entry(self, link: Link, key: Any, flt: dict[str, Constraint] | None) -> None:
        """Record the active filter of an entry (None: the entry is gone or switched off); the
        summary keeps `flt` and changes it in place at the entry's UPDs.

        The link's aggregate is recomputed when a summary is next read (`settle`), not here: a
        client that makes thousands of subscriptions would otherwise pay a pass over all of its
        entries for each one (quadratic; 4,000 subscriptions of one process took 12 s)."""
        entries = self.entries.setdefault(link, {})
        lub = self.lubs.get(link)
        if lub is None:
            lub = self.lubs[link] = LinkLub(self.etype)
        was = entries.get(key)
        if was is not None:
            lub.remove(was)
        if flt is not None:
            lub.add(flt)
        if flt is None:
            entries.pop(key, None)
            if not entries:  # the link's last entry: its aggregate goes now, not at the next read
                self._forget(link)  # (a broker nothing upstream reads kept every such link)
            else:
                self._dirty.add(link)  # the aggregate may shrink: read off the link's counts at the next read
        else:
            if was is not None:
                if not self._replace_in_place(link, was, flt):
                    self._dirty.add(link)
            elif link not in self._dirty:  # only grows: the new entries join the aggregate
                self._added.setdefault(link, []).append(key)
            entries[key] = flt
        self.version += 1

    def _replace_in_place(self, link: Link, old: Filter, new: Filter) -> bool:
        """Move an entry of `link` from `old` to `new` without a pass over the link's entries,
        when `old` set none of the aggregate's bounds (strictly inside it on every attribute it
        changes): the aggregate is then the LUB of itself and `new`. A moving player's area of
        interest (a version recomputed at each UPD of its position) is one entry of many on the
        game host's link; recomputing that link's aggregate over all of them at each move cost
        the edge broker O(players) per move (200 players: ~0.9 ms instead of ~2 us). False:
        the caller recomputes it (at the next read)."""
        agg = self.aggs.get(link)
        if agg is None or link in self._dirty or link in self._added:
            return False
        joins = not any(c.is_empty() for c in new.values())  # (an empty filter is left out of it)
        if not any(c.is_empty() for c in old.values()):  # `old` is part of the aggregate
            # every attribute when `new` does not join: `old` leaves the aggregate whole, and a
            # wildcard or a set it gave the aggregate may go with it
            for a in (old.keys() | new.keys()) if joins else self.etype.attrs:
                c_old = old.get(a)
                if joins and c_old == new.get(a):
                    continue  # the entries' constraints on `a` are the same as before
                c_agg = agg.get(a)
                if not (type(c_old) is Interval and type(c_agg) is Interval and c_agg.lo < c_old.lo
                        and c_old.hi < c_agg.hi):
                    return False  # `old` may hold a bound of the aggregate (or its wildcard)
        widened = filter_lub(agg, new) if joins else agg
        self._refresh(link, widened)
        return True

    def drop_link(self, link: Link) -> None:
        self.entries.pop(link, None)
        self.lubs.pop(link, None)
        self._cache.pop(link, None)  # the LUBs cached for it as a neighbor
        self._forget(link)
        self.version += 1

    def _forget(self, link: Link) -> None:
        """A link without entries: its aggregate and its bounds go at once (a pass over the
        attributes), and nothing of it waits for a `settle`. Deferred to the next read, as
        before, a broker whose summaries nobody upstream reads (the root of the overlay, the
        embedded broker) kept every link that ever unsubscribed or left in `_dirty`, and its
        `entries`, for as long as it ran."""
        self.entries.pop(link, None)
        self.lubs.pop(link, None)
        self._dirty.discard(link)
        self._added.pop(link, None)
        if link in self.aggs:
            self._refresh(link, None)

    def settle(self) -> None:
        """Bring the aggregates of the links changed since the last read up to date: a pass over
        the entries of a link that lost or replaced one, the new entries alone for one that only
        gained some (so a broker that reads its summaries at every SUB stays linear too)."""
        while self._dirty:
            link = self._dirty.pop()
            self._added.pop(link, None)
            self._refresh(link)
        while self._added:
            link, keys = self._added.popitem()
            entries = self.entries.get(link) or {}
            old = self.aggs.get(link)
            new = _aggregate([entries[k] for k in keys if k in entries], dict(old) if old is not None else None)
            self._refresh(link, new)

    def _refresh(self, link: Link, new: Any = _MISSING) -> None:
        """Install the link's aggregate (`new`, or the LUB of all its entries) and move the bounds
        and the cached LUBs it changes."""
        entries = self.entries.get(link)
        if new is _MISSING:  # read off the link's counted entries, not a pass over them (_link_lub)
            lub = self.lubs.get(link)
            new = lub.value() if entries and lub is not None else None
        old = self.aggs.get(link)
        if new == old:
            return
        if new is None:
            del self.aggs[link]
        else:
            self.aggs[link] = new
        if not entries:
            self.entries.pop(link, None)
        # only the attributes whose constraint changed touch the bounds (an UPD of one parameter
        # usually changes one attribute)
        for a in self.etype.attrs:
            c_old = None if old is None else old.get(a, _WILD)
            c_new = None if new is None else new.get(a, _WILD)
            if c_old != c_new:
                self._changed(link, a, c_old, c_new)

    def update_entry(self, link: Link, key: Any, attr: str, c: Constraint | None) -> None:
        """One attribute of an active entry changed (None: the wildcard); the UPD path.

        A link with one entry (a client with one subscription) has that entry as its aggregate:
        the change goes straight to the attribute's bounds, without recomputing the aggregate.
        An entry not recorded (switched off, or switched on by the same UPD) is left alone.
        """
        entries = self.entries.get(link)
        if not entries:
            return
        flt = entries.get(key)
        if flt is None:
            return
        agg = self.aggs.get(link)
        several = len(entries) != 1
        before = dict(flt) if several and agg is not None else None
        self.lubs[link].change(flt, attr, c)  # the filter changes in place, and is recounted
        if agg is None or several or (
                (self._dirty or self._added) and (link in self._dirty or link in self._added)):
            # several entries, none in the aggregate (an empty constraint), or an aggregate
            # recomputed at the next read anyway; one of several that holds no bound of the
            # aggregate moves in place (a pass over the link's entries per UPD, otherwise)
            if before is not None and self._replace_in_place(link, before, flt):
                return
            self._dirty.add(link)
            self.version += 1
            return
        c_old = agg.get(attr, _WILD)
        if c == c_old or (c is None and c_old is _WILD):
            return
        if type(c) is Interval and type(c_old) is Interval:  # a bound moved: the common UPD
            lo, lc, hi, hc = c
            if lo > hi or (lo == hi and not (lc and hc)):  # Interval.is_empty, inline
                self._dirty.add(link)  # the entry leaves the aggregate
                self.version += 1
                return
            olo, olc, ohi, ohc = c_old
            if not (lo == -INF and hi == INF and lc and hc) and not (
                    olo == -INF and ohi == INF and olc and ohc):  # neither is the wildcard
                agg[attr] = c
                self._move(link, attr, olo, olc, ohi, ohc, lo, lc, hi, hc)
                return
        elif c is not None and c.is_empty():
            self._dirty.add(link)
            self.version += 1
            return
        if c is None:
            del agg[attr]
            self._changed(link, attr, c_old, _WILD)
        else:
            agg[attr] = c
            self._changed(link, attr, c_old, c)

    def _changed(self, link: Link, a: str, c_old: Any, c_new: Any) -> None:
        """`link`'s aggregate constraint on `a` went from c_old to c_new (None: no aggregate,
        _WILD: unconstrained); invalidate the cached LUBs it may change."""
        if (type(c_old) is Interval and type(c_new) is Interval and not c_old.is_wildcard()
                and not c_new.is_wildcard()):
            self._move(link, a, *c_old, *c_new)
            return
        if (type(c_old) is ValueSet and type(c_new) is ValueSet and not c_old.exclude
                and not c_new.exclude):
            # a set that stays a set: the counts of the members it lost and gained move (the
            # whole set went out and in before, a pass over 50,000 members for one added), and
            # so do the LUBs cached for the neighbors
            lost, gained = set_changes(c_old, c_new)
            recount(self.inc[a], lost, gained)
            self._move_sets(link, a, lost, gained)
            self.version += 1
            return
        else:
            if c_old is not None:
                self._contribute(link, a, None if c_old is _WILD else c_old, -1)
            if c_new is not None:
                self._contribute(link, a, None if c_new is _WILD else c_new, +1)
        for stale in self._cache.values():
            stale.pop(a, None)
        self.version += 1

    def _move(self, link: Link, a: str, olo: Any, olc: bool, ohi: Any, ohc: bool, lo: Any, lc: bool,
              hi: Any, hc: bool) -> None:
        """A link's interval on `a` moved from (olo, olc, ohi, ohc) to (lo, lc, hi, hc), neither the
        wildcard: push the bound(s) that moved, and drop the cached LUBs it may change. A bound
        strictly inside a cached LUB (before and after) cannot move it, nor can the neighbor's own
        entries (its LUB leaves them out), nor anything while another link is a wildcard on `a`."""
        lo_moved = lo != olo or lc != olc
        hi_moved = hi != ohi or hc != ohc
        if lo_moved:
            self.lo[a].put(link, (lo, 0 if lc else 1, next(self._tick), link))
        if hi_moved:
            self.hi[a].put(link, (-hi, 0 if hc else 1, next(self._tick), link))
        for neighbor, cache in self._cache.items():
            cached = cache.get(a, _MISSING)
            if cached is _MISSING or neighbor == link:
                continue
            if cached is None:
                wild = self.wild[a]
                if len(wild) > (1 if neighbor in wild else 0):
                    continue
            elif isinstance(cached, Interval) and (
                    not lo_moved or (olo > cached.lo and lo > cached.lo)) and (
                    not hi_moved or (ohi < cached.hi and hi < cached.hi)):
                continue  # (an ordered attribute's cached LUB is an Interval or None)
            del cache[a]
            self.version += 1

    def _move_sets(self, link: Link, a: str, lost: frozenset, gained: frozenset) -> None:
        """`link`'s set on `a` lost and gained members (their counts moved already): each cached
        LUB on `a` of another neighbor loses the members no link but that neighbor admits any
        more and gains those only `link` admits, so that the next read and the UPD upstream
        (`set_delta`) do not take the whole set again. The neighbor's own set is not in its LUB,
        so `link`'s own cache does not move; one read under an exclusion (`!=`) is dropped."""
        inc = self.inc[a]
        simple = not self.exc[a]
        for neighbor, cache in self._cache.items():
            cached = cache.get(a, _MISSING)
            if cached is _MISSING or neighbor == link or (cached is None and simple):
                continue  # (None: another link admits every value of `a`, and still does)
            if not simple or type(cached) is not ValueSet or cached.exclude:
                del cache[a]
                continue
            mine = self.aggs.get(neighbor)
            own = mine.get(a) if mine is not None else None
            owned = own.values if type(own) is ValueSet and not own.exclude else frozenset()
            out = {v for v in lost if inc.get(v, 0) == (v in owned)}  # none left but the neighbor's
            into = {v for v in gained if inc[v] - (v in owned) == 1}  # only `link` admits it
            if out or into:
                cache[a] = derive(cached, frozenset(out), frozenset(into))

    def _contribute(self, link: Link, a: str, c: Constraint | None, sign: int) -> None:
        """Count `link`'s constraint `c` on `a` in (sign +1) or out (-1); None: unconstrained."""
        if c is None or c.is_wildcard():
            (self.wild[a].add if sign > 0 else self.wild[a].discard)(link)
        elif isinstance(c, Interval):
            if sign > 0:
                self.lo[a].put(link, (c.lo, 0 if c.lo_closed else 1, next(self._tick), link))
                self.hi[a].put(link, (-c.hi, 0 if c.hi_closed else 1, next(self._tick), link))
            else:
                self.lo[a].drop(link)
                self.hi[a].drop(link)
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
        self.settle()
        if not any(link != neighbor for link in self._some_links(neighbor)):
            return []
        cache = self._cache.setdefault(neighbor, {})
        out: dict[str, Constraint] = {}
        for a in self.etype.attrs:
            if a in cache:
                c = cache[a]
            else:
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
            lo = self.lo[a].top(neighbor)
            hi = self.hi[a].top(neighbor)
            c: Constraint = Interval(lo[0], lo[1] == 0, -hi[0], hi[1] == 0)
        else:
            # every counted value, but those the neighbor's own aggregate alone admits: a pass
            # over the neighbor's set, not over every value counted
            inc = self.inc[a]
            mine = self.aggs.get(neighbor)
            own = mine.get(a) if mine is not None else None
            values = frozenset(inc)
            if type(own) is ValueSet and not own.exclude:
                values -= {v for v in own.values if inc.get(v) == 1}
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


SUMMARIES = {"attribute": AttributeSummary, "poset": PosetSummary}
