"""The other summaries a broker may keep for a type (the attribute summary is _summary.py's):
`PosetSummary`, the Siena-style LUB, the roots of a covering poset (000 §3.4, Fig. 2), and
`NoSummary`, for a type no broker upstream reads."""

from __future__ import annotations

from typing import Any, ClassVar, Hashable

from ..matching import PosetMatcher
from ..model import Constraint, EventType, Filter

Link = Hashable


def _link_of(key: Hashable) -> Link:
    """The link of an entry's key: the broker keys entries (link, subscription id, conjunction)."""
    assert type(key) is tuple
    return key[0]


class PosetSummary:
    name: ClassVar[str] = "poset"
    sorts: ClassVar[bool] = True  # its summaries come in order_key order

    def __init__(self, etype: EventType) -> None:
        self.poset = PosetMatcher(etype)
        self._version = 0

    @property
    def version(self) -> int:
        return self._version

    def set_entry(self, link: Link, key: Any, flt: Filter | None) -> None:
        self._version += 1
        if key in self.poset:
            self.poset.remove(key)
        if flt is not None:
            self.poset.add(key, flt)

    def update_entry(self, link: Link, key: Any, attr: str, c: Constraint | None) -> None:
        if key not in self.poset:
            return  # not recorded (switched off, or switched on by the same UPD)
        flt = dict(self.poset.filter_of(key))
        if c is None:
            flt.pop(attr, None)
        else:
            flt[attr] = c
        self.set_entry(link, key, flt)

    def drop_link(self, link: Link) -> None:
        self._version += 1
        for key in [k for k in self.poset.keys() if _link_of(k) == link]:
            self.poset.remove(key)

    def settle(self) -> None:
        pass  # the poset is kept up to date at each change

    def summary_for(self, neighbor: Link) -> list[dict[str, Constraint]]:
        return self.poset.summary(skip=lambda key: _link_of(key) == neighbor, ordered=True)


class NoSummary:
    """The summary of a type no broker upstream reads (no neighbor advertised it to us): none is
    kept, as none would be sent. The broker builds the real one from the subscriptions it holds
    when a neighbor first advertises the type (`Upstream._summarize`). The embedded overlay's
    broker has no neighbor at all: the summary's upkeep was a fifth of the cost of every UPD it
    applied (a game's moves) and a table per subscription that nothing read."""

    name: ClassVar[str] = "none"
    version: ClassVar[int] = 0
    sorts: ClassVar[bool] = False

    def set_entry(self, link: Link, key: Any, flt: Filter | None) -> None:
        pass

    def update_entry(self, link: Link, key: Any, attr: str, c: Constraint | None) -> None:
        pass

    def drop_link(self, link: Link) -> None:
        pass

    def settle(self) -> None:
        pass

    def summary_for(self, neighbor: Link) -> list[dict[str, Constraint]]:
        raise RuntimeError("no summary is kept for a type no broker upstream reads")
