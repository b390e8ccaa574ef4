"""FASTINT (paper 001 §5, Algorithms 2 and 3): split every conjunction by attribute, index each
attribute on its own (`_fastint_ordered`, `_fastint_enum`), intersect the per-attribute results.

Matching is Algorithm 3: RETRIEVE a count for every attribute (lines 58-62); when the smallest
is a small share of the entries, take its candidates and keep those every other attribute admits
(lines 63-65); otherwise AND the packed bit rows of all attributes (the BITWISE-AND of line 64 for
all entries at once) and check exactly only the entries that lie on a leaf boundary somewhere.

Past the paper: entries are first partitioned by the value of their equality on the first string
attribute (`firm == 'IBM'` — the common shape of trading subscriptions), each partition with its
own per-attribute structures, so an event only meets the entries of its own value (plus those
without such an equality). Matching cost then follows the partition, not the whole population.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable

import numpy as np

from ..model import Constraint, EventType, Filter, Interval, ValueSet
from ._base import Key, Matcher
from ._fastint_enum import EnumIndex
from ._fastint_ordered import OrderedIndex, bits

_CANDIDATE_SHARE = 64  # below 1/8 of the entries, gather-and-check beats ANDing bit rows
_EXACT_INT = 2 ** 53  # beyond this an int is not exact in float64: check such events one by one
_EMPTY = np.empty(0, dtype=np.int64)


def _set(ix: OrderedIndex | EnumIndex, slot: int, c: Constraint | None) -> None:
    """Give `slot` constraint `c` in an index of either kind. An ordered attribute's constraint
    is an Interval, an enumerated one's a ValueSet: the broker checks each against the schema
    (SubState, `_check_constraint`), so the asserts state what holds, not a check of user input."""
    if isinstance(ix, OrderedIndex):
        assert c is None or isinstance(c, Interval)
        ix.set(slot, c)
    else:
        assert c is None or isinstance(c, ValueSet)
        ix.set(slot, c)


class _Engine:
    """The per-attribute structures over one set of entries (slots 0..cap-1)."""

    def __init__(self, etype: EventType, skip: str | None = None) -> None:
        self.cap = 64
        self.slot: dict[Key, int] = {}
        self.key = np.empty(self.cap, dtype=object)  # slot -> key (fancy-indexed on a match)
        self.free: list[int] = list(range(self.cap - 1, -1, -1))
        self.index: dict[str, OrderedIndex | EnumIndex] = {
            a: (OrderedIndex(i, self.cap) if t in (int, float) else EnumIndex(i, self.cap))
            for i, (a, t) in enumerate(etype.schema.items()) if a != skip}
        self.ordered = [ix for ix in self.index.values() if isinstance(ix, OrderedIndex)]
        self.built_at = 0
        self.changes = 0

    def _grow(self) -> None:
        old, self.cap = self.cap, self.cap * 2
        self.key = np.concatenate([self.key, np.empty(self.cap - old, dtype=object)])
        self.free.extend(range(self.cap - 1, old - 1, -1))
        for ix in self.index.values():
            ix.grow(self.cap)

    def _maybe_rebuild(self, force_check: bool = False) -> None:
        n = len(self.slot)
        grown = n >= 2 * self.built_at + 32
        if grown or force_check:
            slots = sorted(self.slot.values())
            for ix in self.ordered:
                if grown or ix.crowded(n):
                    ix.rebuild(slots, n)
            if grown:
                self.built_at = n

    def add(self, key: Key, flt: Filter) -> int:
        if not self.free:
            self._grow()
        slot = self.free.pop()
        self.slot[key] = slot
        self.key[slot] = key
        for attr, ix in self.index.items():
            _set(ix, slot, flt.get(attr))  # (counts `constrained` too)
        self.changes += 1
        self._maybe_rebuild((self.changes & 1023) == 0)
        return slot

    def remove(self, key: Key) -> None:
        slot = self.slot.pop(key)
        for ix in self.index.values():
            ix.clear(slot)
        self.key[slot] = None
        self.free.append(slot)

    def match(self, values: tuple) -> list[Key]:
        n = len(self.slot)
        if not n:
            return []
        retrieved = []
        for ix in self.index.values():
            if ix.constrained:
                v = values[ix.pos]
                count, ctx = ix.retrieve(v)
                if count == 0:
                    return []
                retrieved.append((count, ix, v, ctx))
        if not retrieved:
            return list(self.slot)  # nothing constrained here: every entry admits the event
        else:
            retrieved.sort(key=lambda r: r[0])
            count, ix, v, ctx = retrieved[0]
            if count * _CANDIDATE_SHARE <= n:
                slots = ix.candidates(v, ctx)
                # an ordered attribute's candidates include its leaf's boundary entries: check
                # them too; an enumerated attribute's candidates are exact
                rest = retrieved if isinstance(ix, OrderedIndex) else retrieved[1:]
                for _, other, v, ctx in rest:
                    if not slots.size:
                        return []
                    slots = slots[other.check(slots, v, ctx)]
            else:
                slots = self._and_rows(retrieved)
        return self.key[slots].tolist()

    @staticmethod
    def _and_rows(retrieved: list) -> np.ndarray:
        acc: np.ndarray | None = None
        boundary: np.ndarray | None = None  # entries with an endpoint in the leaf of some attribute
        for _, ix, v, ctx in retrieved:
            if isinstance(ix, OrderedIndex):
                row, part = ix.row(v, ctx)
                boundary = part.copy() if boundary is None else boundary | part
            else:
                row = ix.row(v, ctx)
            acc = row.copy() if acc is None else acc & row
        assert acc is not None  # (`retrieved` is never empty: `match` returned before)
        if boundary is None:
            return bits(acc)
        sure = bits(acc & ~boundary)
        maybe = bits(acc & boundary)
        for _, ix, v, ctx in retrieved:
            if not maybe.size:
                break
            if isinstance(ix, OrderedIndex):
                maybe = maybe[ix.check(maybe, v, ctx)]
        return np.concatenate([sure, maybe]) if maybe.size else sure


class FastIntMatcher(Matcher):
    name: ClassVar[str] = "fastint"  # (ClassVar: read off the class, also when compiled)

    def __init__(self, etype: EventType) -> None:
        super().__init__(etype)
        strings = [a for a, t in etype.schema.items() if t is str]
        self._part_attr = strings[0] if strings else None
        self._part_pos = etype.index[self._part_attr] if self._part_attr else -1
        self._parts: dict[Any, _Engine] = {}
        self._rest = _Engine(etype)
        # key -> (filter, partition value, engine, slot): one lookup on the UPD path
        self._entries: dict[Key, tuple[dict[str, Constraint], Any, _Engine, int]] = {}
        self._ints = [etype.index[a] for a, t in etype.schema.items() if t is int]
        # a float attribute may hold an int, as brokers accept from a peer (EventType.accepts)
        self._floats = [etype.index[a] for a, t in etype.schema.items() if t is float]

    def _partition(self, flt: Filter) -> tuple[Any, _Engine]:
        """The partition an entry belongs to: its value and its engine."""
        c = flt.get(self._part_attr) if self._part_attr else None
        if isinstance(c, ValueSet) and not c.exclude and len(c.values) == 1:
            (v,) = c.values
            engine = self._parts.get(v)
            if engine is None:
                engine = self._parts[v] = _Engine(self.etype, skip=self._part_attr)
            return v, engine
        return _REST, self._rest

    def add(self, key: Key, flt: Filter) -> None:
        if key in self._entries:
            raise KeyError(f"entry {key!r} is already indexed")
        flt = dict(flt)
        value, engine = self._partition(flt)
        self._entries[key] = (flt, value, engine, engine.add(key, flt))

    def remove(self, key: Key) -> None:
        _, value, engine, _ = self._entries.pop(key)
        engine.remove(key)
        if value is not _REST and not engine.slot:
            del self._parts[value]

    def update(self, key: Key, attr: str, constraint: Constraint | None) -> None:
        flt, value, engine, slot = self._entries[key]
        if constraint is None:
            flt.pop(attr, None)
        else:
            flt[attr] = constraint
        if attr == self._part_attr:
            new_value, new_engine = self._partition(flt)
            if new_value != value:  # the equality moved: the entry changes partition
                engine.remove(key)
                if value is not _REST and not engine.slot:
                    del self._parts[value]
                self._entries[key] = (flt, new_value, new_engine, new_engine.add(key, flt))
                return
            if value is not _REST:
                return  # the partition attribute is implied inside a partition
        ix = engine.index[attr]  # the UPD hot path: `_set` inline (a call fewer)
        if isinstance(ix, OrderedIndex):
            assert constraint is None or isinstance(constraint, Interval)
            ix.set(slot, constraint)
        else:
            assert constraint is None or isinstance(constraint, ValueSet)
            ix.set(slot, constraint)
        engine.changes += 1
        if (engine.changes & 1023) == 0:
            engine._maybe_rebuild(True)

    def match(self, values: tuple) -> list[Key]:
        for i in self._ints:
            v = values[i]
            if v >= _EXACT_INT or v <= -_EXACT_INT:
                return self._exact(values)
        for i in self._floats:
            v = values[i]
            if type(v) is int and (v >= _EXACT_INT or v <= -_EXACT_INT):
                return self._exact(values)
        out = self._rest.match(values) if self._rest.slot else []
        if self._parts:
            engine = self._parts.get(values[self._part_pos])
            if engine is not None:
                out.extend(engine.match(values))
        return out

    def _exact(self, values: tuple) -> list[Key]:
        idx = self.etype.index
        return [k for k, (f, *_) in self._entries.items()
                if all(c.contains(values[idx[a]]) for a, c in f.items())]

    def filter_of(self, key: Key) -> Filter:
        return self._entries[key][0]

    def check(self) -> None:
        """Assert the invariants (for tests): every entry sits in its partition's engine, and each
        index holds exactly what a fresh marking of the entries' constraints would."""
        engines = [self._rest, *self._parts.values()]
        assert sum(len(e.slot) for e in engines) == len(self._entries)
        for key, (flt, value, engine, slot) in self._entries.items():
            assert (value, engine) == self._partition(flt) and engine.slot[key] == slot
            assert engine.key[slot] == key
        for engine in engines:
            for attr, ix in engine.index.items():
                given = {slot: self._entries[key][0].get(attr) for key, slot in engine.slot.items()}
                if isinstance(ix, OrderedIndex):
                    ivs = {s: c for s, c in given.items() if c is None or isinstance(c, Interval)}
                    assert len(ivs) == len(given), (attr, given)
                    ix.verify(ivs)
                else:
                    sets = {s: c for s, c in given.items() if c is None or isinstance(c, ValueSet)}
                    assert len(sets) == len(given), (attr, given)
                    ix.verify(sets)

    def keys(self) -> Iterable[Key]:
        return self._entries.keys()

    def __len__(self) -> int:
        return len(self._entries)


class _Rest:
    def __repr__(self) -> str:
        return "<entries without a partition value>"


_REST = _Rest()
