"""What a broker knows of each event type, and the advertisements that build it (paper 000 Fig. 6
lines 7-9): subscriptions follow the reverse path of advertisements, so a type's publishers
(`pubs`) are where its summaries go. A subscriber's schema-only ADV (`publishes=False`) makes the
type known here and routes nothing."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Hashable

from ..matching import Matcher, make_matcher
from ..messages import Adv, Refused, Unadv, Unsub
from ..model import EventType
from ._clees import VersionCache
from ._state import MessageError
from ._summaries_other import NoSummary

log = logging.getLogger("eventpy.broker")
Link = Hashable
Sends = list[tuple[Link, Any]]


@dataclass
class _TypeState:
    etype: EventType
    matcher: Matcher
    summary: Any
    pubs: set = field(default_factory=set)  # links that advertised the type (Fig. 6 line 8)
    upstream: set = field(default_factory=set)  # the broker links among them: summaries go there
    adv_sent: set = field(default_factory=set)  # broker links we forwarded the ADV to
    subs: dict = field(default_factory=dict)  # (link, sid) -> SubState
    # the links that told us the schema (an ADV, a publisher's or a subscriber's) and may still
    # subscribe to the type: a client until it leaves, a broker until its UNADV. The type is kept
    # while one of them is here, or it has subscriptions or publishers (_forget_unused)
    known: set = field(default_factory=set)
    sent: dict = field(default_factory=dict)  # upstream broker link -> _Sent
    seen: dict = field(default_factory=dict)  # upstream broker link -> summary version last read
    accepts: tuple = ()  # per attribute, the Python types a PUB value may have
    cache: VersionCache | None = None  # the CLEES versions of its evolving conjunctions
    # the subscriptions whose filters move with time, (link, sid) -> horizon: this broker's
    # evolving ones, and the summaries neighbors marked moving (Sub.moving); `late_links`: per
    # broker link holding some, the shortest horizon (an event older than about that is late there)
    moving: dict = field(default_factory=dict)
    late_links: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.accepts = self.etype.accepts  # EventType's table: a float attribute takes ints, a bool is no int


class Advertisements:
    """ADV and UNADV, for Broker."""

    # -- advertisements (Fig. 6 lines 7-9) ------------------------------------------------------------
    def _type(self, name: str) -> _TypeState:
        ts = self.types.get(name)
        if ts is None:
            raise MessageError(f"event type {name!r} was never advertised here")
        return ts

    def _on_adv(self, link: Link, msg: Adv, out: Sends) -> None:
        if self._limited:  # a client's per-client limit (_caps)
            self._admit_adv(link, msg)
        try:
            etype = EventType.from_wire(msg.etype, msg.schema)
        except (KeyError, TypeError, ValueError) as e:
            raise MessageError(f"bad schema for {msg.etype!r}: {e}") from None
        ts = self.types.get(msg.etype)
        if ts is None:
            # (no summary until a broker upstream would read one: NoSummary, Upstream._summarize)
            ts = self.types[msg.etype] = _TypeState(etype, make_matcher(self.matcher_name, etype), NoSummary())
            if self.evolving_engine == "clees":
                ts.cache = VersionCache(etype.index, self.cache_ttl)
        elif ts.etype != etype:
            raise MessageError(f"{msg.etype!r} advertised with schema ({etype.describe()}), "
                               f"known as ({ts.etype.describe()})")
        if self._limited and link not in ts.known:
            self._told_of(link)
        ts.known.add(link)
        if not msg.publishes:
            return  # a subscriber's schema: known here now, and no route for subscriptions
        new = link not in ts.pubs
        ts.pubs.add(link)
        if link in self.broker_links:
            if not ts.upstream:
                self._summarize(ts)  # the first neighbor that will read the type's summary
            ts.upstream.add(link)
        self._forward_adv(ts, out)
        if new and link in self.broker_links:
            self._propagate(ts, out)  # subscriptions follow the reverse path of advertisements

    def _on_refused(self, link: Link, msg: Refused, out: Sends) -> None:
        """A neighbor refused the ADV we forwarded (it knows the type with another schema): the
        publishers behind us are told, as the edge broker tells its own, or they would publish
        into silence with the reason only in that broker's log."""
        if link not in self.broker_links:
            raise MessageError("a client sent Refused")
        ts = self.types.get(msg.etype)
        if ts is None:
            return  # forgotten since: its publishers have left
        log.warning("%s: %r refused our advertisement of %r: %s", self.name, link, msg.etype, msg.reason)
        for pub in ts.pubs:
            if pub != link:
                out.append((pub, Refused(msg.etype, msg.reason)))

    def _forward_adv(self, ts: _TypeState, out: Sends) -> None:
        adv = Adv(ts.etype.name, ts.etype.to_wire())
        for link, role in self.links.items():
            if role == "broker" and link not in ts.adv_sent and _others(ts.pubs, link):
                ts.adv_sent.add(link)
                out.append((link, adv))

    def _on_unadv(self, link: Link, msg: Unadv, out: Sends) -> None:
        ts = self._type(msg.etype)
        if link in ts.pubs:
            ts.pubs.discard(link)
            self._not_upstream(ts, link)
            ts.seen.pop(link, None)  # a later ADV on this link must get the summary again
            sent = ts.sent.pop(link, None)
            if sent is not None:
                out.append((link, Unsub(ts.etype.name, sent.sid)))
                self._stats["unsub_sent"] += 1
            self._retract_adv(ts, out)
        if link in self.broker_links:  # a client keeps its schema (its subscriptions may follow)
            ts.known.discard(link)
        self._forget_unused(ts)

    def _forget_unused(self, ts: _TypeState) -> None:
        """Forget a type nothing refers to any more: no subscription, publisher or link that
        told us its schema. Before, a type stayed for the broker's life once advertised, with its
        matcher and summary: an overlay whose programs make classes on the fly (each one's event
        types) grew at every broker for as long as it ran."""
        if not (ts.subs or ts.pubs or ts.known or ts.adv_sent):
            name = ts.etype.name
            del self.types[name]
        elif not ts.subs:
            # a dict keeps the table of its largest size: the type's lookup held ~40 bytes per
            # subscription it ever had at once, for as long as a publisher kept the type here
            ts.subs = {}

    def _retract_adv(self, ts: _TypeState, out: Sends) -> None:
        for link in list(ts.adv_sent):
            if not _others(ts.pubs, link):
                ts.adv_sent.discard(link)
                if link in self.links:
                    out.append((link, Unadv(ts.etype.name)))


def _others(links: set, link: Link) -> bool:
    """Does `links` hold a link other than `link`? (without copying the set)"""
    return len(links) > (1 if link in links else 0)
