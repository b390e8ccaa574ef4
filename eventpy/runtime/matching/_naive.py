"""The oracle: every entry evaluated on every event. Obviously correct, O(K·N) per event."""

from __future__ import annotations

from typing import Iterable

from ..model import Constraint, Filter, set_constraint
from ._base import Key, Matcher


class NaiveMatcher(Matcher):
    name = "naive"

    def __init__(self, etype) -> None:
        super().__init__(etype)
        self._filters: dict[Key, dict[str, Constraint]] = {}
        # (attribute position, constraint) pairs, kept beside the filter for the match loop
        self._compiled: dict[Key, tuple] = {}

    def _compile(self, key: Key) -> None:
        idx = self.etype.index
        self._compiled[key] = tuple((idx[a], c) for a, c in self._filters[key].items())

    def add(self, key: Key, flt: Filter) -> None:
        if key in self._filters:
            raise KeyError(f"entry {key!r} is already indexed")
        self._filters[key] = dict(flt)
        self._compile(key)

    def remove(self, key: Key) -> None:
        del self._filters[key]
        del self._compiled[key]

    def update(self, key: Key, attr: str, constraint: Constraint | None) -> None:
        flt = self._filters[key]
        set_constraint(flt, attr, constraint)
        self._compile(key)

    def match(self, values: tuple) -> list[Key]:
        out = []
        for key, preds in self._compiled.items():
            for i, c in preds:
                if not c.contains(values[i]):
                    break
            else:
                out.append(key)
        return out

    def filter_of(self, key: Key) -> Filter:
        return self._filters[key]

    def keys(self) -> Iterable[Key]:
        return self._filters.keys()

    def __len__(self) -> int:
        return len(self._filters)
