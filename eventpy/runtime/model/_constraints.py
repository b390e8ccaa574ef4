"""Normalized constraints (paper 001 §4): one per attribute of a conjunction.

Ordered attributes (int, float) carry an `Interval` with open or closed bounds, enumerated ones
(str, bool) a `ValueSet`, either the values admitted or, for `!=`, the values excluded. A missing
attribute is the wildcard. `covers` is the covering relation of 000 §3.1 restricted to one
attribute, `lub` the least upper bound used for summaries (000 §3.4, 001 §5.6).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple, Union

INF = math.inf


class Interval(NamedTuple):
    # an int attribute's bounds are ints, compared exactly (beyond 2**53 a float would round
    # them); `int | float` says so to mypyc, which would convert a bound typed `float` to a double
    lo: int | float
    lo_closed: bool
    hi: int | float
    hi_closed: bool

    def contains(self, v: Any) -> bool:
        lo, hi = self.lo, self.hi
        return (v > lo or (v == lo and self.lo_closed)) and (v < hi or (v == hi and self.hi_closed))

    def is_empty(self) -> bool:
        return self.lo > self.hi or (self.lo == self.hi and not (self.lo_closed and self.hi_closed))

    def is_wildcard(self) -> bool:
        # closed at both infinities: an open end rejects the infinite value itself
        return self.lo == -INF and self.hi == INF and self.lo_closed and self.hi_closed

    def covers(self, o: "Interval") -> bool:
        if o.is_empty():
            return True
        lo_ok = self.lo < o.lo or (self.lo == o.lo and (self.lo_closed or not o.lo_closed))
        hi_ok = self.hi > o.hi or (self.hi == o.hi and (self.hi_closed or not o.hi_closed))
        return lo_ok and hi_ok

    def lub(self, o: "Interval") -> "Interval":
        if o.is_empty():
            return self
        if self.is_empty():
            return o
        if self.lo < o.lo:
            lo, lc = self.lo, self.lo_closed
        elif o.lo < self.lo:
            lo, lc = o.lo, o.lo_closed
        else:
            lo, lc = self.lo, self.lo_closed or o.lo_closed
        if self.hi > o.hi:
            hi, hc = self.hi, self.hi_closed
        elif o.hi > self.hi:
            hi, hc = o.hi, o.hi_closed
        else:
            hi, hc = self.hi, self.hi_closed or o.hi_closed
        return Interval(lo, lc, hi, hc)

    def intersect(self, o: "Interval") -> "Interval":
        if self.lo > o.lo:
            lo, lc = self.lo, self.lo_closed
        elif o.lo > self.lo:
            lo, lc = o.lo, o.lo_closed
        else:
            lo, lc = self.lo, self.lo_closed and o.lo_closed
        if self.hi < o.hi:
            hi, hc = self.hi, self.hi_closed
        elif o.hi < self.hi:
            hi, hc = o.hi, o.hi_closed
        else:
            hi, hc = self.hi, self.hi_closed and o.hi_closed
        return Interval(lo, lc, hi, hc)

    def __str__(self) -> str:
        return f"{'[' if self.lo_closed else '('}{self.lo}, {self.hi}{']' if self.hi_closed else ')'}"


class ValueSet(NamedTuple):
    values: frozenset
    exclude: bool = False  # True: every value except `values` (from `!=`)

    def contains(self, v: Any) -> bool:
        return (v in self.values) is not self.exclude

    def is_empty(self) -> bool:
        return not self.exclude and not self.values

    def is_wildcard(self) -> bool:
        return self.exclude and not self.values

    def covers(self, o: "ValueSet") -> bool:
        if o.is_empty():
            return True
        if not self.exclude:
            return (not o.exclude) and o.values <= self.values
        if not o.exclude:
            return not (o.values & self.values)
        return self.values <= o.values

    def lub(self, o: "ValueSet") -> "ValueSet":
        if not self.exclude and not o.exclude:
            return ValueSet(self.values | o.values)
        if self.exclude and o.exclude:
            return ValueSet(self.values & o.values, True)
        inc, exc = (o, self) if self.exclude else (self, o)
        return ValueSet(exc.values - inc.values, True)

    def intersect(self, o: "ValueSet") -> "ValueSet":
        if not self.exclude and not o.exclude:
            return ValueSet(self.values & o.values)
        if self.exclude and o.exclude:
            return ValueSet(self.values | o.values, True)
        inc, exc = (o, self) if self.exclude else (self, o)
        return ValueSet(inc.values - exc.values)

    def __str__(self) -> str:
        body = "{" + ", ".join(sorted(map(repr, self.values))) + "}"
        return ("not in " if self.exclude else "in ") + body


class SetDelta(NamedTuple):
    """An update of a set constraint by the values it loses and gains (001 Algorithm 2, lines
    31-35: the two sets of an UPD for a string attribute), instead of the whole new set."""

    removed: frozenset
    added: frozenset

    def apply(self, vs: ValueSet) -> ValueSet:
        return derive(vs, self.removed, self.added)


# The last few sets made from another by a change (`derive`), with what they lost and gained: a
# broker applies a UPD's SetDelta once, then its index, its summary's counts, its per-link LUB and
# the UPD it sends upstream each ask what changed between the same two sets. Taking the
# differences again, each a pass over the whole set in C, cost a UPD adding one member to a
# 50,000-member set tens of milliseconds. A slot is an immutable tuple written in one store, and
# a hit needs both sets to be the very objects derived (held by the slot, so their ids cannot be
# reused meanwhile): a slot overwritten by another thread is a miss, never a wrong answer.
_RECENT_SLOTS = 8
_recent: list = [None] * _RECENT_SLOTS
_recent_next = [0]


def derive(vs: ValueSet, removed: frozenset, added: frozenset) -> ValueSet:
    """`vs` less `removed`, plus `added`, remembered so that `set_changes` of the two is O(1)."""
    values = vs.values
    lost = (removed & values) - added if removed else frozenset()
    gained = added - values if added else frozenset()
    if not lost and not gained:
        return vs
    new = ValueSet(values ^ (lost | gained), vs.exclude)  # one copy of the set: lost is in it, gained not
    i = _recent_next[0]
    _recent_next[0] = (i + 1) % _RECENT_SLOTS
    _recent[i] = (vs, new, lost, gained)
    return new


def set_changes(old: ValueSet, new: ValueSet) -> tuple[frozenset, frozenset]:
    """The values `old` has and `new` lacks, and those `new` has and `old` lacks (as sets of
    values: what `exclude` means is the caller's)."""
    if old is new:
        return frozenset(), frozenset()
    for slot in _recent:
        if slot is not None and slot[1] is new and slot[0] is old:
            return slot[2], slot[3]
    return old.values - new.values, new.values - old.values


def set_delta(old: ValueSet, new: ValueSet) -> SetDelta | None:
    """The delta from `old` to `new` when it is smaller than `new` itself, in members and in
    bytes, else None. Smaller in members only, a delta that swaps a long string for another can
    be twice the bytes of a set that fits a frame, and the transport could not send it."""
    if old.exclude != new.exclude:
        return None
    removed, added = set_changes(old, new)
    if len(removed) + len(added) >= len(new.values):
        return None
    delta = _chars(removed) + _chars(added)
    # every member counts at least one character: a delta that small needs no pass over the set
    if 4 * delta > len(new.values) and 4 * delta > _chars(new.values):  # in UTF-8 (up to 4 bytes a character) it might not be smaller: measure
        if _utf8_bytes(removed) + _utf8_bytes(added) > _utf8_bytes(new.values):
            return None
    return SetDelta(removed, added)


def _chars(values: frozenset) -> int:
    return sum(len(v) + 1 if type(v) is str else 9 for v in values)


def _utf8_bytes(values: frozenset) -> int:
    return sum(len(v.encode("utf-8", "surrogatepass")) + 5 if type(v) is str else 9 for v in values)


Constraint = Union[Interval, ValueSet]
#: A concrete conjunction as brokers index it: attribute -> constraint; absent = wildcard.
Filter = Mapping[str, Constraint]

EVERYTHING = Interval(-INF, True, INF, True)
ANY_VALUE = ValueSet(frozenset(), True)


def set_constraint(flt: dict, attr: str, c: Constraint | None) -> None:
    """Replace one attribute's constraint in a filter, in place (None: the wildcard)."""
    if c is None:
        flt.pop(attr, None)
    else:
        flt[attr] = c


def filter_matches(flt: Filter, index: Mapping[str, int], values: tuple) -> bool:
    for attr, c in flt.items():
        if not c.contains(values[index[attr]]):
            return False
    return True


def filter_covers(a: Filter, b: Filter) -> bool:
    """a covers b (every event matching b matches a), attribute by attribute (sound)."""
    if any(c.is_empty() for c in b.values()):
        return True
    for attr, ca in a.items():
        cb = b.get(attr)
        if cb is None:
            if not ca.is_wildcard():
                return False
        elif isinstance(ca, Interval):
            if not (isinstance(cb, Interval) and ca.covers(cb)):
                return False
        elif not (isinstance(cb, ValueSet) and ca.covers(cb)):
            return False  # (an interval and a set: filters of two schemas; neither covers)
    return True


def filter_lub(a: Filter, b: Filter) -> dict[str, Constraint]:
    """The per-attribute least upper bound of two conjunctions (001 §5.6); wildcards absorb."""
    out: dict[str, Constraint] = {}
    for attr, ca in a.items():
        cb = b.get(attr)
        if cb is not None:
            c: Constraint
            if isinstance(ca, Interval) and isinstance(cb, Interval):
                c = ca.lub(cb)
            elif isinstance(ca, ValueSet) and isinstance(cb, ValueSet):
                c = ca.lub(cb)
            else:
                raise TypeError(f"no LUB of {ca} and {cb} on {attr!r}: filters of two schemas")
            if not c.is_wildcard():
                out[attr] = c
    return out


def filter_str(flt: Filter) -> str:
    if not flt:
        return "true"
    return " and ".join(f"{a} {c}" if isinstance(c, ValueSet) else f"{a} in {c}" for a, c in flt.items())
