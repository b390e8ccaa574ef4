"""FASTINT (paper 001 §5, Algorithms 2 and 3): split every conjunction by attribute, index each
attribute on its own, and intersect the per-attribute results.

* Ordered attributes (int, float) go to an `_OrderedIndex`: the SV tree of 001 §5.3 with its leaves
  (elementary intervals between sorted endpoints) kept as a flat, sorted array of breakpoints, since a
  B-tree walk in Python costs more than one `bisect`. Each leaf carries the bit vector V of 001 §5.3
  (here the row of `full`: entries whose interval covers the whole leaf) and the entries with an
  endpoint inside the leaf (`part`), which are checked against their exact bounds. Leaves are
  quantiles of the endpoints, recomputed when the population drifts, so each leaf holds O(N/B)
  endpoints.
* Enumerated attributes (str, bool) go to an `_EnumIndex`: the hash map of 001 §5.3, value -> the
  entries whose set includes it, plus the entries open to every value (wildcards and `!=`).

Matching is Algorithm 3: RETRIEVE a count for every attribute (lines 58-62), take the attribute with
the fewest candidates and keep the candidates that every other attribute admits (lines 63-65). When
even the smallest candidate set is a large share of N, the bit vectors of all attributes are ANDed
instead (the BITWISE-AND of line 64 done for all entries at once), which numpy does at memory speed.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterable

import numpy as np

from ..model import INF, Constraint, EventType, Filter, Interval, ValueSet
from ._base import Key, Matcher

_MAX_LEAVES = 64
# Below this share of the entries the candidate path (gather and check) beats ANDing bit vectors.
_CANDIDATE_SHARE = 8
_EMPTY = np.empty(0, dtype=np.int64)


class _OrderedIndex:
    """Per-attribute segment index over interval constraints."""

    def __init__(self, pos: int, cap: int) -> None:
        self.pos = pos
        self.constrained = 0  # entries with a non-wildcard constraint here
        self.lo = np.full(cap, INF)
        self.hi = np.full(cap, -INF)
        self.lo_closed = np.zeros(cap, dtype=bool)
        self.hi_closed = np.zeros(cap, dtype=bool)
        # the leaves each entry is marked in: first/last fully covered leaf, partial leaves
        self.marks: list[tuple[int, int, int, int] | None] = [None] * cap
        self.bp: list[float] = []
        self.bp_arr = np.empty(0)
        self.full = np.zeros((1, cap), dtype=bool)
        self.part = np.zeros((1, cap), dtype=bool)
        self.n_full = np.zeros(1, dtype=np.int64)
        self.n_part = np.zeros(1, dtype=np.int64)

    # -- storage -----------------------------------------------------------------------------
    def grow(self, cap: int) -> None:
        old = self.lo.shape[0]
        extra = cap - old
        self.lo = np.concatenate([self.lo, np.full(extra, INF)])
        self.hi = np.concatenate([self.hi, np.full(extra, -INF)])
        self.lo_closed = np.concatenate([self.lo_closed, np.zeros(extra, dtype=bool)])
        self.hi_closed = np.concatenate([self.hi_closed, np.zeros(extra, dtype=bool)])
        self.marks.extend([None] * extra)
        leaves = self.full.shape[0]
        self.full = np.concatenate([self.full, np.zeros((leaves, extra), dtype=bool)], axis=1)
        self.part = np.concatenate([self.part, np.zeros((leaves, extra), dtype=bool)], axis=1)

    def _leaves_of(self, lo: float, lo_c: bool, hi: float, hi_c: bool) -> tuple[int, int, int, int] | None:
        """(first full leaf, last full leaf, low partial leaf, high partial leaf); -1 = none."""
        if lo > hi or (lo == hi and not (lo_c and hi_c)):
            return None
        last = len(self.bp)
        bp = self.bp
        if lo == -INF and lo_c:
            first_full, p_lo = 0, -1
        else:
            p_lo = bisect_right(bp, lo)
            first_full = p_lo + 1
        if hi == INF and hi_c:
            last_full, p_hi = last, -1
        else:
            p_hi = bisect_right(bp, hi)
            last_full = p_hi - 1
        if p_hi == p_lo:
            p_hi = -1
        return first_full, last_full, p_lo, p_hi

    def _apply(self, slot: int, m: tuple[int, int, int, int] | None, on: bool) -> None:
        if m is None:
            return
        first_full, last_full, p_lo, p_hi = m
        d = 1 if on else -1
        if first_full <= last_full:
            self.full[first_full:last_full + 1, slot] = on
            self.n_full[first_full:last_full + 1] += d
        if p_lo >= 0:
            self.part[p_lo, slot] = on
            self.n_part[p_lo] += d
        if p_hi >= 0:
            self.part[p_hi, slot] = on
            self.n_part[p_hi] += d

    def set(self, slot: int, c: Interval | None) -> None:
        """Mark `slot` with interval `c` (None: the wildcard), replacing what it had."""
        if c is None:
            c = Interval(-INF, True, INF, True)
        self.lo[slot] = c.lo
        self.hi[slot] = c.hi
        self.lo_closed[slot] = c.lo_closed
        self.hi_closed[slot] = c.hi_closed
        m = self._leaves_of(c.lo, c.lo_closed, c.hi, c.hi_closed)
        old = self.marks[slot]
        if m == old:
            return  # a bound moved within its leaf: the bit vectors stay, only the bounds change
        self._apply(slot, old, False)
        self.marks[slot] = m
        self._apply(slot, m, True)

    def clear(self, slot: int) -> None:
        self._apply(slot, self.marks[slot], False)
        self.marks[slot] = None
        self.lo[slot] = INF
        self.hi[slot] = -INF

    def rebuild(self, active: np.ndarray, n: int) -> None:
        """Recompute the leaves as quantiles of the current endpoints (vectorized)."""
        cap = self.lo.shape[0]
        ends = np.concatenate([self.lo[active], self.hi[active]])
        ends = ends[np.isfinite(ends)]
        leaves = int(min(_MAX_LEAVES, max(1, n // 32)))
        if ends.size and leaves > 1:
            qs = np.quantile(ends, np.linspace(0, 1, leaves + 1)[1:-1])
            bp = np.unique(qs)
        else:
            bp = np.empty(0)
        self.bp_arr = bp
        self.bp = bp.tolist()
        nleaves = len(self.bp) + 1
        self.full = np.zeros((nleaves, cap), dtype=bool)
        self.part = np.zeros((nleaves, cap), dtype=bool)
        self.n_full = np.zeros(nleaves, dtype=np.int64)
        self.n_part = np.zeros(nleaves, dtype=np.int64)
        for slot in np.flatnonzero(active).tolist():
            m = self._leaves_of(self.lo[slot], bool(self.lo_closed[slot]), self.hi[slot], bool(self.hi_closed[slot]))
            self.marks[slot] = m
            if m is not None:
                first_full, last_full, p_lo, p_hi = m
                if first_full <= last_full:
                    self.full[first_full:last_full + 1, slot] = True
                if p_lo >= 0:
                    self.part[p_lo, slot] = True
                if p_hi >= 0:
                    self.part[p_hi, slot] = True
        self.n_full = self.full.sum(axis=1)
        self.n_part = self.part.sum(axis=1)

    def crowded(self, n: int) -> bool:
        """True when some leaf holds far more endpoints than a balanced split would give it."""
        leaves = len(self.bp) + 1
        target = max(1, n // 32)
        if leaves < min(_MAX_LEAVES, target) // 2:
            return True
        return int(self.n_part.max()) > 4 * (2 * n) // leaves + 64

    # -- matching ------------------------------------------------------------------------------
    def retrieve(self, v: Any) -> tuple[int, int]:
        leaf = bisect_right(self.bp, v)
        return int(self.n_full[leaf] + self.n_part[leaf]), leaf

    def _check(self, slots: np.ndarray, v: Any) -> np.ndarray:
        lo = self.lo[slots]
        hi = self.hi[slots]
        return ((lo < v) | ((lo == v) & self.lo_closed[slots])) & (
            (hi > v) | ((hi == v) & self.hi_closed[slots])
        )

    def candidates(self, v: Any, leaf: int) -> np.ndarray:
        full = np.flatnonzero(self.full[leaf])
        part = np.flatnonzero(self.part[leaf])
        if part.size:
            part = part[self._check(part, v)]
            return np.concatenate([full, part]) if full.size else part
        return full

    def check(self, slots: np.ndarray, v: Any, leaf: int) -> np.ndarray:
        return self._check(slots, v)

    def row(self, v: Any, leaf: int) -> np.ndarray:
        row = self.full[leaf].copy()
        part = np.flatnonzero(self.part[leaf])
        if part.size:
            row[part[self._check(part, v)]] = True
        return row


class _EnumIndex:
    """Per-attribute hash map over set constraints (001 §5.3, Algorithm 2 lines 31-35)."""

    def __init__(self, pos: int, cap: int) -> None:
        self.pos = pos
        self.constrained = 0
        self.incl: dict[Any, set[int]] = {}
        self.excl: dict[Any, set[int]] = {}
        self._arrays: dict[Any, np.ndarray] = {}  # cache of incl[v] as an array
        self.open = np.zeros(cap, dtype=bool)  # admits every value not excluded
        self.n_open = 0
        self.code = np.full(cap, -1, dtype=np.int64)  # the one admitted value, when there is one
        self.codes: dict[Any, int] = {}
        self.special = np.zeros(cap, dtype=bool)  # several values, or exclusions: checked exactly
        self.sets: dict[int, ValueSet] = {}

    def grow(self, cap: int) -> None:
        extra = cap - self.open.shape[0]
        self.open = np.concatenate([self.open, np.zeros(extra, dtype=bool)])
        self.code = np.concatenate([self.code, np.full(extra, -1, dtype=np.int64)])
        self.special = np.concatenate([self.special, np.zeros(extra, dtype=bool)])

    def _touch(self, v: Any) -> None:
        self._arrays.pop(v, None)

    def set(self, slot: int, c: ValueSet | None) -> None:
        self.clear(slot)
        if c is None:
            c = ValueSet(frozenset(), True)
        self.sets[slot] = c
        table = self.excl if c.exclude else self.incl
        for v in c.values:
            table.setdefault(v, set()).add(slot)
            self._touch(v)
        if c.exclude:
            self.open[slot] = True
            self.n_open += 1
            self.special[slot] = bool(c.values)
        elif len(c.values) == 1:
            (v,) = c.values
            self.code[slot] = self.codes.setdefault(v, len(self.codes))
        else:
            self.special[slot] = len(c.values) > 1

    def clear(self, slot: int) -> None:
        c = self.sets.pop(slot, None)
        if c is None:
            return
        table = self.excl if c.exclude else self.incl
        for v in c.values:
            s = table[v]
            s.discard(slot)
            if not s:
                del table[v]
            self._touch(v)
        if c.exclude:
            self.open[slot] = False
            self.n_open -= 1
        self.code[slot] = -1
        self.special[slot] = False

    def retrieve(self, v: Any) -> tuple[int, Any]:
        inc = self.incl.get(v)
        exc = self.excl.get(v)
        return (len(inc) if inc else 0) + self.n_open - (len(exc) if exc else 0), v

    def _included(self, v: Any) -> np.ndarray:
        arr = self._arrays.get(v)
        if arr is None:
            s = self.incl.get(v)
            arr = np.fromiter(s, dtype=np.int64, count=len(s)) if s else _EMPTY
            self._arrays[v] = arr
        return arr

    def candidates(self, v: Any, leaf: Any) -> np.ndarray:
        inc = self._included(v)
        if not self.n_open:
            return inc
        opened = np.flatnonzero(self.open)
        exc = self.excl.get(v)
        if exc:
            opened = opened[~np.isin(opened, np.fromiter(exc, dtype=np.int64, count=len(exc)))]
        return np.concatenate([inc, opened]) if inc.size else opened

    def check(self, slots: np.ndarray, v: Any, leaf: Any) -> np.ndarray:
        ok = self.code[slots] == self.codes.get(v, -2)
        ok |= self.open[slots] & ~self.special[slots]
        special = np.flatnonzero(self.special[slots])
        if special.size:
            sets = self.sets
            for i in special.tolist():
                ok[i] = sets[int(slots[i])].contains(v)
        return ok

    def row(self, v: Any, leaf: Any) -> np.ndarray:
        row = self.open.copy()
        exc = self.excl.get(v)
        if exc:
            row[np.fromiter(exc, dtype=np.int64, count=len(exc))] = False
        row[self._included(v)] = True
        return row


class FastIntMatcher(Matcher):
    name = "fastint"

    def __init__(self, etype: EventType) -> None:
        super().__init__(etype)
        self._cap = 64
        self._slot: dict[Key, int] = {}
        self._key: list[Key | None] = [None] * self._cap
        self._free: list[int] = list(range(self._cap - 1, -1, -1))
        self._filters: dict[Key, dict[str, Constraint]] = {}
        self._active = np.zeros(self._cap, dtype=bool)
        self._index: dict[str, _OrderedIndex | _EnumIndex] = {
            a: (_OrderedIndex(i, self._cap) if t in (int, float) else _EnumIndex(i, self._cap))
            for i, (a, t) in enumerate(etype.schema.items())
        }
        self._built_at = 0
        self._changes = 0

    # -- storage -----------------------------------------------------------------------------
    def _grow(self) -> None:
        old, cap = self._cap, self._cap * 2
        self._cap = cap
        self._key.extend([None] * (cap - old))
        self._free.extend(range(cap - 1, old - 1, -1))
        self._active = np.concatenate([self._active, np.zeros(cap - old, dtype=bool)])
        for ix in self._index.values():
            ix.grow(cap)

    def _maybe_rebuild(self) -> None:
        n = len(self._slot)
        self._changes += 1
        if n >= 2 * self._built_at + 32 or (self._changes & 1023) == 0:
            for ix in self._index.values():
                if isinstance(ix, _OrderedIndex) and (n >= 2 * self._built_at + 32 or ix.crowded(n)):
                    ix.rebuild(self._active, n)
            if n >= 2 * self._built_at + 32:
                self._built_at = n

    def add(self, key: Key, flt: Filter) -> None:
        if key in self._slot:
            raise KeyError(f"entry {key!r} is already indexed")
        if not self._free:
            self._grow()
        slot = self._free.pop()
        self._slot[key] = slot
        self._key[slot] = key
        self._active[slot] = True
        self._filters[key] = dict(flt)
        for attr, ix in self._index.items():
            c = flt.get(attr)
            ix.set(slot, c)  # type: ignore[arg-type]
            if c is not None:
                ix.constrained += 1
        self._maybe_rebuild()

    def remove(self, key: Key) -> None:
        slot = self._slot.pop(key)
        flt = self._filters.pop(key)
        for attr, ix in self._index.items():
            ix.clear(slot)
            if attr in flt:
                ix.constrained -= 1
        self._key[slot] = None
        self._active[slot] = False
        self._free.append(slot)

    def update(self, key: Key, attr: str, constraint: Constraint | None) -> None:
        slot = self._slot[key]
        flt = self._filters[key]
        ix = self._index[attr]
        had = attr in flt
        if constraint is None:
            flt.pop(attr, None)
        else:
            flt[attr] = constraint
        ix.constrained += (constraint is not None) - had
        ix.set(slot, constraint)  # type: ignore[arg-type]
        self._changes += 1
        if (self._changes & 1023) == 0:
            self._maybe_rebuild()

    # -- matching (Algorithm 3) ----------------------------------------------------------------
    def match(self, values: tuple) -> list[Key]:
        n = len(self._slot)
        if not n:
            return []
        retrieved = []
        for ix in self._index.values():
            if ix.constrained:
                v = values[ix.pos]
                count, ctx = ix.retrieve(v)
                if count == 0:
                    return []
                retrieved.append((count, ix, v, ctx))
        if not retrieved:
            slots = np.flatnonzero(self._active)
        else:
            retrieved.sort(key=lambda r: r[0])
            count, ix, v, ctx = retrieved[0]
            if count * _CANDIDATE_SHARE <= n:
                slots = ix.candidates(v, ctx)
                for _, ix, v, ctx in retrieved[1:]:
                    if not slots.size:
                        return []
                    slots = slots[ix.check(slots, v, ctx)]
            else:
                row = ix.row(v, ctx)
                for _, ix, v, ctx in retrieved[1:]:
                    row &= ix.row(v, ctx)
                slots = np.flatnonzero(row)
        key = self._key
        return [key[s] for s in slots.tolist()]

    def filter_of(self, key: Key) -> Filter:
        return self._filters[key]

    def keys(self) -> Iterable[Key]:
        return self._filters.keys()

    def __len__(self) -> int:
        return len(self._slot)
