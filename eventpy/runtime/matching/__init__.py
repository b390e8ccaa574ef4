"""Subscription indexes behind one interface: `naive` (the oracle), `poset`, `fastint`."""

from __future__ import annotations

from ..model import EventType
from ._adaptive import AdaptiveMatcher
from ._base import Key, Matcher
from ._fastint import FastIntMatcher
from ._naive import NaiveMatcher
from ._poset import PosetMatcher

MATCHERS: dict[str, type[Matcher]] = {
    "naive": NaiveMatcher,
    "poset": PosetMatcher,
    "fastint": FastIntMatcher,
}


def make_matcher(name: str, etype: EventType) -> Matcher:
    """The matcher a broker uses for one event type. `fastint` is adaptive: a scan while the type
    has few entries, the FASTINT index beyond (MATCHERS["fastint"] is the index alone)."""
    if name == "fastint":
        return AdaptiveMatcher(etype)
    try:
        cls = MATCHERS[name]
    except KeyError:
        raise ValueError(f"unknown matcher {name!r}; choose one of {', '.join(MATCHERS)}") from None
    return cls(etype)


__all__ = ["MATCHERS", "AdaptiveMatcher", "FastIntMatcher", "Key", "Matcher", "NaiveMatcher", "PosetMatcher", "make_matcher"]
