"""FASTINT's per-attribute structure for ordered attributes (int, float; paper 001 §5.3).

The SV tree's leaves (elementary intervals between sorted endpoints) are kept as a flat sorted
array of breakpoints, quantiles of the endpoints, recomputed when the population drifts, so a
leaf holds O(N/B) endpoints and finding a leaf is one `bisect`. Each leaf carries the bit vector
V of 001 §5.3 as two packed bit rows: `full` (entries whose interval covers the whole leaf) and
`part` (entries with an endpoint inside it, to be checked against their exact bounds).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np

from ..model import INF, Interval

MAX_LEAVES = 64
_EMPTY = np.empty(0, dtype=np.int64)
Marks = tuple[int, int, int, int]  # first full leaf, last full leaf, low partial, high partial


def bits(row: np.ndarray) -> np.ndarray:
    """Positions of the set bits of a packed (little-endian) row."""
    nz = np.flatnonzero(row)
    if not nz.size:
        return _EMPTY
    r, c = np.nonzero(np.unpackbits(row[nz][:, None], axis=1, bitorder="little"))
    return nz[r] * 8 + c


def _closed_lo(lo: float, closed: bool) -> float:
    # x > lo  <=>  x >= nextafter(lo, +inf) for float64 values: checks compare closed bounds only
    return lo if closed else float(np.nextafter(lo, INF))


def _closed_hi(hi: float, closed: bool) -> float:
    return hi if closed else float(np.nextafter(hi, -INF))


class OrderedIndex:
    def __init__(self, pos: int, cap: int) -> None:
        self.pos = pos
        self.constrained = 0  # entries with a non-wildcard constraint here
        self.lo = np.full(cap, INF)  # closed bounds (open ones moved by one float)
        self.hi = np.full(cap, -INF)
        self.ivs: list[Interval | None] = [None] * cap
        self.marks: list[Marks | None] = [None] * cap
        self.bp: list[float] = []
        nbytes = cap // 8
        self.full = np.zeros((1, nbytes), dtype=np.uint8)
        self.part = np.zeros((1, nbytes), dtype=np.uint8)
        self.n_full = np.zeros(1, dtype=np.int64)
        self.n_part = np.zeros(1, dtype=np.int64)

    # -- storage ---------------------------------------------------------------------------------
    def grow(self, cap: int) -> None:
        extra = cap - self.lo.shape[0]
        self.lo = np.concatenate([self.lo, np.full(extra, INF)])
        self.hi = np.concatenate([self.hi, np.full(extra, -INF)])
        self.ivs.extend([None] * extra)
        self.marks.extend([None] * extra)
        pad = np.zeros((self.full.shape[0], extra // 8), dtype=np.uint8)
        self.full = np.concatenate([self.full, pad], axis=1)
        self.part = np.concatenate([self.part, pad.copy()], axis=1)

    def _leaves_of(self, c: Interval) -> Marks | None:
        if c.is_empty():
            return None
        bp = self.bp
        if c.lo == -INF and c.lo_closed:
            first_full, p_lo = 0, -1
        else:
            p_lo = bisect_right(bp, c.lo)
            first_full = p_lo + 1
        if c.hi == INF and c.hi_closed:
            last_full, p_hi = len(bp), -1
        else:
            p_hi = bisect_right(bp, c.hi)
            last_full = p_hi - 1
        if p_hi == p_lo:
            p_hi = -1
        return first_full, last_full, p_lo, p_hi

    def _apply(self, slot: int, m: Marks | None, on: bool) -> None:
        if m is None:
            return
        first_full, last_full, p_lo, p_hi = m
        byte, bit = slot >> 3, np.uint8(1 << (slot & 7))
        d = 1 if on else -1
        if first_full <= last_full:
            rows = self.full[first_full:last_full + 1, byte]
            self.full[first_full:last_full + 1, byte] = (rows | bit) if on else (rows & ~bit)
            self.n_full[first_full:last_full + 1] += d
        for p in (p_lo, p_hi):
            if p >= 0:
                self.part[p, byte] = (self.part[p, byte] | bit) if on else (self.part[p, byte] & ~bit)
                self.n_part[p] += d

    def set(self, slot: int, c: Interval | None) -> None:
        """Mark `slot` with interval `c` (None: the wildcard), replacing what it had."""
        if c is None:
            c = Interval(-INF, True, INF, True)
        self.ivs[slot] = c
        self.lo[slot] = _closed_lo(c.lo, c.lo_closed) if not c.is_empty() else INF
        self.hi[slot] = _closed_hi(c.hi, c.hi_closed) if not c.is_empty() else -INF
        m = self._leaves_of(c)
        old = self.marks[slot]
        if m == old:
            return  # a bound moved within its leaf: the bit rows stay, only the bounds change
        self._apply(slot, old, False)
        self.marks[slot] = m
        self._apply(slot, m, True)

    def clear(self, slot: int) -> None:
        self._apply(slot, self.marks[slot], False)
        self.marks[slot] = None
        self.ivs[slot] = None
        self.lo[slot] = INF
        self.hi[slot] = -INF

    def rebuild(self, slots: list[int], n: int) -> None:
        """Recompute the leaves as quantiles of the current endpoints."""
        ends = np.concatenate([self.lo[slots], self.hi[slots]]) if slots else np.empty(0)
        ends = ends[np.isfinite(ends)]
        leaves = int(min(MAX_LEAVES, max(1, n // 32)))
        bp = np.unique(np.quantile(ends, np.linspace(0, 1, leaves + 1)[1:-1])) if ends.size and leaves > 1 else np.empty(0)
        self.bp = bp.tolist()
        nleaves = len(self.bp) + 1
        nbytes = self.full.shape[1]
        self.full = np.zeros((nleaves, nbytes), dtype=np.uint8)
        self.part = np.zeros((nleaves, nbytes), dtype=np.uint8)
        self.n_full = np.zeros(nleaves, dtype=np.int64)
        self.n_part = np.zeros(nleaves, dtype=np.int64)
        for slot in slots:
            c = self.ivs[slot]
            m = self._leaves_of(c) if c is not None else None
            self.marks[slot] = m
            self._apply(slot, m, True)

    def crowded(self, n: int) -> bool:
        """True when some leaf holds far more endpoints than a balanced split would give it."""
        leaves = len(self.bp) + 1
        if leaves < min(MAX_LEAVES, max(1, n // 32)) // 2:
            return True
        return int(self.n_part.max()) > 4 * (2 * n) // leaves + 64

    # -- matching ----------------------------------------------------------------------------------
    def retrieve(self, v: Any) -> tuple[int, int]:
        leaf = bisect_right(self.bp, v)
        return int(self.n_full[leaf] + self.n_part[leaf]), leaf

    def candidates(self, v: Any, leaf: int) -> np.ndarray:
        """A superset of the entries admitting `v` (exact after `check`)."""
        return bits(self.full[leaf] | self.part[leaf])

    def check(self, slots: np.ndarray, v: Any, leaf: Any) -> np.ndarray:
        return (self.lo[slots] <= v) & (v <= self.hi[slots])

    def row(self, v: Any, leaf: int) -> tuple[np.ndarray, np.ndarray]:
        """(full | partial, partial) packed rows of the leaf holding `v`."""
        part = self.part[leaf]
        return self.full[leaf] | part, part
