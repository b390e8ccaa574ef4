"""The one interface every subscription index implements.

An index holds *entries* for one event type: a hashable key (the broker uses
(link, subscription id, conjunction index)) and a concrete conjunction (`Filter`). It knows
nothing of links, messages or sockets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, ClassVar, Hashable, Iterable

from ..model import Constraint, EventType, Filter, filter_lub

Key = Hashable


class Matcher(ABC):
    #: the name used in configuration (`naive`, `poset`, `fastint`)
    name: ClassVar[str] = ""

    def __init__(self, etype: EventType) -> None:
        self.etype = etype

    @abstractmethod
    def add(self, key: Key, flt: Filter) -> None:
        """Index a new entry; `key` must not be present."""

    @abstractmethod
    def remove(self, key: Key) -> None:
        """Forget an entry; a missing key is a KeyError."""

    @abstractmethod
    def update(self, key: Key, attr: str, constraint: Constraint | None) -> None:
        """Replace the constraint of one attribute of an entry (None: the wildcard)."""

    @abstractmethod
    def match(self, values: tuple) -> list[Key]:
        """The keys whose conjunction holds for an event (values in schema order), each once."""

    @abstractmethod
    def filter_of(self, key: Key) -> Filter:
        """The entry's current conjunction."""

    @abstractmethod
    def keys(self) -> Iterable[Key]:
        ...

    @abstractmethod
    def __len__(self) -> int:
        ...

    def __contains__(self, key: Key) -> bool:
        try:
            self.filter_of(key)
        except KeyError:
            return False
        return True

    def summary(self, skip: Callable[[Key], bool] | None = None) -> list[dict[str, Constraint]]:
        """A disjunction of conjunctions covering every entry not skipped.

        The default is the per-attribute approximation of 001 §5.6: one conjunction whose
        constraint on each attribute is the LUB of the entries' constraints on it.
        """
        acc: dict[str, Constraint] | None = None
        for key in self.keys():
            if skip is not None and skip(key):
                continue
            flt = self.filter_of(key)
            if any(c.is_empty() for c in flt.values()):
                continue
            acc = dict(flt) if acc is None else filter_lub(acc, flt)
            if not acc:
                break
        return [] if acc is None else [acc]
