"""The broker's `fastint`: a plain scan while an event type has few entries, the FASTINT index once
it has many.

FASTINT's per-event cost has a constant part (numpy calls, bit-row intersection) that a handful of
entries never repays: with 4 subscriptions a broker spent 17 us per PUB with the index and 2.6 us
with the scan (the algorithmic-trading replay has ~4 subscriptions per event type). So entries
start in a `NaiveMatcher` and move into the index when there are more than `up` of them, and back
when fewer than `down` remain (the gap keeps a population near the threshold from moving at every
change). Both sides are exact, so the answers never depend on where the entries are.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..model import Constraint, EventType, Filter
from ._base import Key, Matcher
from ._fastint import FastIntMatcher
from ._naive import NaiveMatcher


class AdaptiveMatcher(Matcher):
    name = "fastint"

    def __init__(self, etype: EventType, up: int = 64, down: int = 16,
                 index: type[Matcher] = FastIntMatcher) -> None:
        super().__init__(etype)
        if not 0 <= down < up:
            raise ValueError("the scan-to-index threshold must exceed the way back")
        self.up, self.down, self.index = up, down, index
        self.inner: Matcher = NaiveMatcher(etype)
        self.match = self.inner.match  # type: ignore[method-assign]  # no extra call per event
        self.update = self.inner.update  # type: ignore[method-assign]  # nor per parametric UPD

    @property
    def indexed(self) -> bool:
        return not isinstance(self.inner, NaiveMatcher)

    def _move(self, cls: type[Matcher]) -> None:
        new = cls(self.etype)
        for key in list(self.inner.keys()):
            new.add(key, dict(self.inner.filter_of(key)))
        self.inner = new
        self.match = new.match  # type: ignore[method-assign]
        self.update = new.update  # type: ignore[method-assign]

    def add(self, key: Key, flt: Filter) -> None:
        self.inner.add(key, flt)
        if len(self.inner) > self.up and not self.indexed:
            self._move(self.index)

    def remove(self, key: Key) -> None:
        self.inner.remove(key)
        if len(self.inner) < self.down and self.indexed:
            self._move(NaiveMatcher)

    def update(self, key: Key, attr: str, constraint: Constraint | None) -> None:
        self.inner.update(key, attr, constraint)

    def match(self, values: tuple) -> list[Key]:
        return self.inner.match(values)

    def filter_of(self, key: Key) -> Filter:
        return self.inner.filter_of(key)

    def keys(self) -> Iterable[Key]:
        return self.inner.keys()

    def __len__(self) -> int:
        return len(self.inner)

    def summary(self, skip: Callable[[Key], bool] | None = None) -> list[dict[str, Constraint]]:
        return self.inner.summary(skip)
