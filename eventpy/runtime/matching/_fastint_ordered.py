"""FASTINT's per-attribute structure for ordered attributes (int, float; paper 001 §5.3).

The SV tree's leaves (elementary intervals between sorted endpoints) are kept as a flat sorted
array of breakpoints, quantiles of the endpoints, recomputed when the population drifts, so a
leaf holds O(N/B) endpoints and finding a leaf is one `bisect`. Each leaf carries the bit vector
V of 001 §5.3 as two packed bit rows: `full` (entries whose interval covers the whole leaf) and
`part` (entries with an endpoint inside it, to be checked against their exact bounds).
"""

from __future__ import annotations

from bisect import bisect_right
from math import nextafter
from typing import Any

import numpy as np

from ..model import EVERYTHING, INF, Interval

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


def _closed_lo(lo: int | float, closed: bool) -> float:
    """The least float64 an event may hold above `lo` (or at it, closed): checks compare closed
    bounds only. x > lo <=> x >= nextafter(lo, +inf) for a float lo; an int lo beyond 2**53
    (`price > 9007199254740995`) is first rounded by float(), either way, so the comparison with
    the exact bound (Python compares an int and a float exactly) decides the step."""
    f = float(lo)
    return f if (f >= lo if closed else f > lo) else nextafter(f, INF)


def _closed_hi(hi: int | float, closed: bool) -> float:
    f = float(hi)
    return f if (f <= hi if closed else f < hi) else nextafter(f, -INF)


def _span(m: Marks) -> tuple[int, int]:
    """The first and last leaf that carry a mark of the entry (partial or full)."""
    first_full, last_full, p_lo, p_hi = m
    if p_hi >= 0:
        last = p_hi
    elif last_full >= first_full:
        last = last_full
    else:
        last = p_lo  # both ends in one leaf
    return (p_lo if p_lo >= 0 else first_full), last


def _state(m: Marks, leaf: int) -> int:
    """0: no mark on `leaf`, 1: the entry covers the leaf (`full`), 2: an end inside (`part`)."""
    if leaf == m[2] or leaf == m[3]:
        return 2
    return 1 if m[0] <= leaf <= m[1] else 0


class OrderedIndex:
    def __init__(self, pos: int, cap: int) -> None:
        self.pos = pos
        self.constrained = 0  # entries with a non-wildcard constraint here
        self.given = [False] * cap  # slot -> it has a constraint here (counted in `constrained`)
        self.lo = np.full(cap, INF)  # closed bounds (open ones moved by one float)
        self.hi = np.full(cap, -INF)
        self._views()
        self.ivs: list[Interval | None] = [None] * cap
        self.marks: list[Marks | None] = [None] * cap
        self.bp: list[float] = []
        nbytes = cap // 8
        self.full = np.zeros((1, nbytes), dtype=np.uint8)
        self.part = np.zeros((1, nbytes), dtype=np.uint8)
        self.n_full = np.zeros(1, dtype=np.int64)
        self.n_part = np.zeros(1, dtype=np.int64)

    # -- storage ---------------------------------------------------------------------------------
    def _views(self) -> None:
        # one-element writes through a memoryview cost a third of numpy's scalar __setitem__
        # (cast through bytes to "d", float64: the same buffer, in a view typed as holding floats)
        self._lo_w: memoryview[float] = self.lo.data.cast("B").cast("d")
        self._hi_w: memoryview[float] = self.hi.data.cast("B").cast("d")

    def grow(self, cap: int) -> None:
        extra = cap - self.lo.shape[0]
        self.lo = np.concatenate([self.lo, np.full(extra, INF)])
        self.hi = np.concatenate([self.hi, np.full(extra, -INF)])
        self._views()
        self.given.extend([False] * extra)
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

    def _flip(self, slot: int, leaf: int, state: int, d: int) -> None:
        byte, bit = slot >> 3, np.uint8(1 << (slot & 7))
        if state == 1:
            self.full[leaf, byte] ^= bit
            self.n_full[leaf] += d
        else:
            self.part[leaf, byte] ^= bit
            self.n_part[leaf] += d

    def _move(self, slot: int, old: Marks | None, new: Marks | None) -> None:
        """Replace the marks of `slot`, flipping only the bits of the leaves whose mark changes.

        Leaves strictly inside both spans are `full` in both, leaves outside both carry nothing:
        only the leaves between the two first leaves and between the two last leaves can differ.
        """
        if old is not None and new is not None:
            s1, e1 = _span(old)
            s2, e2 = _span(new)
            a, b = (s1, s2) if s1 <= s2 else (s2, s1)
            c, d = (e1, e2) if e1 <= e2 else (e2, e1)
            if b - a + d - c <= 8:
                leaves = range(a, d + 1) if c <= b + 1 else (*range(a, b + 1), *range(c, d + 1))
                for leaf in leaves:
                    was, now = _state(old, leaf), _state(new, leaf)
                    if was != now:
                        if was:
                            self._flip(slot, leaf, was, -1)
                        if now:
                            self._flip(slot, leaf, now, 1)
                return
        self._apply(slot, old, False)
        self._apply(slot, new, True)

    def set(self, slot: int, c: Interval | None) -> None:
        """Mark `slot` with interval `c` (None: the wildcard), replacing what it had.

        The hot path of a parametric update: a bound that moves within its leaf only rewrites
        the exact bounds; one that crosses leaves flips the bits of the leaves crossed.
        """
        given = c is not None
        if given is not self.given[slot]:  # (a moved bound, the common UPD, stays given)
            self.constrained += 1 if given else -1
            self.given[slot] = given
        iv = EVERYTHING if c is None else c
        was = self.ivs[slot]
        old = self.marks[slot]
        self.ivs[slot] = iv
        lo, lc, hi, hc = iv
        if lo > hi or (lo == hi and not (lc and hc)):  # Interval.is_empty
            m = None
            self._lo_w[slot] = INF
            self._hi_w[slot] = -INF
        else:
            bp = self.bp
            # an update usually moves one bound: the other end's leaf and exact bound are those of
            # the old marks (kept in step with the breakpoints by `rebuild`) and the stored bound
            # (a slot with marks has its interval: `was` is None only when `old` is)
            if old is not None and was is not None and lo == was[0] and lc == was[1]:
                first_full, p_lo = old[0], old[2]
            elif lo == -INF and lc:
                first_full, p_lo = 0, -1
                self._lo_w[slot] = lo
            else:
                p_lo = bisect_right(bp, lo)
                first_full = p_lo + 1
                self._lo_w[slot] = _closed_lo(lo, lc)
            if hi == INF and hc:
                last_full, p_hi = len(bp), -1
                self._hi_w[slot] = hi
            else:
                if old is not None and was is not None and hi == was[2] and hc == was[3]:
                    p_hi = old[1] + 1  # (last_full is p_hi - 1 whenever hi is finite or open)
                else:
                    p_hi = bisect_right(bp, hi)
                    self._hi_w[slot] = _closed_hi(hi, hc)
                last_full = p_hi - 1
                if p_hi == p_lo:
                    p_hi = -1
            m = (first_full, last_full, p_lo, p_hi)
        if m == old:
            return  # a bound moved within its leaf: the bit rows stay, only the bounds change
        self.marks[slot] = m
        self._move(slot, old, m)

    def clear(self, slot: int) -> None:
        self.constrained -= self.given[slot]
        self.given[slot] = False
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
        if ends.size and leaves > 1:
            # between endpoints near the float limits (x > -inf is x >= -1.8e308) the quantile's
            # interpolation overflows: numpy warned on the broker's stderr (an error under
            # -W error) and gave a leaf bound of -inf; a bound that is not finite splits nothing
            with np.errstate(over="ignore", invalid="ignore"):
                bp = np.unique(np.quantile(ends, np.linspace(0, 1, leaves + 1)[1:-1]))
            bp = bp[np.isfinite(bp)]
        else:
            bp = np.empty(0)
        if bp.tolist() == self.bp:
            # the same leaves: the marks are already theirs (set/clear keep them in step). An index
            # with no finite bound (a game's `abs(x - self.x) < view` leaves x unconstrained) or
            # with one bound for all stays `crowded`, and re-marked every entry at every 1024th
            # change of its type, for nothing, at a cost that grew with the entries
            return
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

    def verify(self, given: dict[int, Interval | None]) -> None:
        """Assert that the rows, counts and bounds are those of `given` (slot -> constraint)."""
        assert self.constrained == sum(c is not None for c in given.values())
        full, part = np.zeros_like(self.full), np.zeros_like(self.part)
        n_full, n_part = np.zeros_like(self.n_full), np.zeros_like(self.n_part)
        for slot, c in given.items():
            c = EVERYTHING if c is None else c
            assert self.ivs[slot] == c and self.given[slot] == (given[slot] is not None)
            m = self._leaves_of(c)
            assert self.marks[slot] == m, (slot, c, self.marks[slot], m)
            if m is None:
                assert self.lo[slot] == INF and self.hi[slot] == -INF
                continue
            assert self.lo[slot] == _closed_lo(c.lo, c.lo_closed)
            assert self.hi[slot] == _closed_hi(c.hi, c.hi_closed)
            first_full, last_full, p_lo, p_hi = m
            byte, bit = slot >> 3, np.uint8(1 << (slot & 7))
            for leaf in range(first_full, last_full + 1):
                full[leaf, byte] |= bit
                n_full[leaf] += 1
            for p in (p_lo, p_hi):
                if p >= 0:
                    part[p, byte] |= bit
                    n_part[p] += 1
        assert (full == self.full).all() and (part == self.part).all()
        assert (n_full == self.n_full).all() and (n_part == self.n_part).all()

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
