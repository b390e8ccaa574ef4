"""FASTINT's hash map for enumerated attributes (str, bool; paper 001 §5.3, Algorithm 2 lines
31-35): value -> the entries whose set includes it, plus the entries open to every value
(wildcards and `!=`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import ValueSet, set_changes

_EMPTY = np.empty(0, dtype=np.int64)


class EnumIndex:
    """Per-attribute hash map over set constraints (001 §5.3, Algorithm 2 lines 31-35)."""

    def __init__(self, pos: int, cap: int) -> None:
        self.pos = pos
        self.constrained = 0  # entries with a constraint here (not the implicit wildcard)
        self.given = [False] * cap
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
        self.given.extend([False] * extra)
        self.open = np.concatenate([self.open, np.zeros(extra, dtype=bool)])
        self.code = np.concatenate([self.code, np.full(extra, -1, dtype=np.int64)])
        self.special = np.concatenate([self.special, np.zeros(extra, dtype=bool)])

    def _touch(self, v: Any) -> None:
        self._arrays.pop(v, None)

    def set(self, slot: int, c: ValueSet | None) -> None:
        was = self.sets.get(slot)
        if c is not None and was is not None and self.given[slot] and was.exclude == c.exclude:
            self._move(slot, was, c)
            return
        self.clear(slot)
        if c is not None:
            self.constrained += 1
            self.given[slot] = True
        else:
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

    def _move(self, slot: int, was: ValueSet, c: ValueSet) -> None:
        """A set that stays a set of the same kind: only the members it lost and gained move
        in the table (a followed category added to a 50,000-member set was a pass over all of
        them, twice: milliseconds a UPD)."""
        table = self.excl if c.exclude else self.incl
        lost, gained = set_changes(was, c)  # (from the UPD's SetDelta, not a pass over the set)
        for v in lost:
            s = table[v]
            s.discard(slot)
            if not s:
                del table[v]
            self._touch(v)
        for v in gained:
            table.setdefault(v, set()).add(slot)
            self._touch(v)
        self.sets[slot] = c
        if c.exclude:
            self.special[slot] = bool(c.values)
        elif len(c.values) == 1:
            (v,) = c.values
            self.code[slot] = self.codes.setdefault(v, len(self.codes))
            self.special[slot] = False
        else:
            self.code[slot] = -1
            self.special[slot] = len(c.values) > 1

    def clear(self, slot: int) -> None:
        if self.given[slot]:
            self.constrained -= 1
            self.given[slot] = False
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

    def verify(self, given: dict[int, ValueSet | None]) -> None:
        """Assert that the tables hold what `given` (slot -> constraint) says."""
        assert self.constrained == sum(c is not None for c in given.values())
        assert self.sets.keys() == given.keys()
        for slot, c in given.items():
            assert self.given[slot] == (c is not None)
            assert self.sets[slot] == (ValueSet(frozenset(), True) if c is None else c)

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
        """The entries admitting `v`, exactly, as a packed bit row."""
        row = self.open.copy()
        exc = self.excl.get(v)
        if exc:
            row[np.fromiter(exc, dtype=np.int64, count=len(exc))] = False
        row[self._included(v)] = True
        return np.packbits(row, bitorder="little")
