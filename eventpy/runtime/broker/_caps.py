"""The broker's side of the per-client limits (runtime/_client_caps.py): what each client link
holds, the checks of a client's SUB and UPD against the limits, and who hit them.

A mixin of Broker, apart so that the limits stay out of the matching and routing code: the hooks
in _broker.py are one call each (a SUB's admission, an UPD's admission, a removal), and they cost
nothing but a test of `self.caps` when no limit is set (the default)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Hashable

from .._client_caps import (NO_CAPS, ClientCaps, LimitExceeded, set_members, too_many_members, too_many_subscriptions,
                            too_many_types)
from ..messages import Refused
from ..model import ValueSet
from ._state import MessageError, SubState

MAX_HIT_CLIENTS = 256  # clients whose hits are named in `describe` (the oldest go first): bounded


class LimitRefusal(MessageError):
    """A client's SUB or UPD past one of its limits: refused like any bad message (logged within
    the link's bound, counted in `refused`), counted per limit (`limit_<name>`), and the client
    is told which subscription (`reply`)."""

    def __init__(self, error: LimitExceeded, etype: str, sid: int) -> None:
        super().__init__(str(error))
        self.limit = error.limit
        self.reply = Refused(etype, f"broker refused it: {error}", sid)


class ClientLimits:
    """Mixin state: `caps`, the number of subscriptions per link, and the hits per client."""

    name: str
    mode: str
    links: dict
    _stats: Counter

    def _init_caps(self, caps: ClientCaps | None) -> None:
        self.caps = caps if caps is not None and caps.any() else NO_CAPS
        self._limited = self.caps is not NO_CAPS  # the hot paths test this alone
        self._held: Counter = Counter()  # link -> subscriptions it holds here (client links, with limits)
        self._told: Counter = Counter()  # client link -> event types it told us of (ADVs; kept until it leaves)
        self.limit_hits: dict[str, Counter] = {}  # client -> limit name -> refusals (status, `describe`)

    def _admit_sub(self, link: Hashable, msg: Any, replaces: bool, state: SubState) -> None:
        """Before a client's SUB is stored: LimitRefusal past a limit (it changes nothing)."""
        if self.links.get(link) != "client":
            return
        error = None
        if not replaces:
            held = self._held[link]
            if self.mode == "resub":  # each update is a SUB, then the UNSUB of the one it replaces:
                held -= 1             # a client at its limit holds one more for that moment
            error = too_many_subscriptions(self.caps, held, f"client {link!r}", self.name)
        if error is None:
            error = too_many_members(self.caps, set_members(state.values), f"subscription {msg.sid} of {msg.etype!r}",
                                     self.name)
        if error is not None:
            raise self._hit(link, error, msg.etype, msg.sid)

    def _admit_adv(self, link: Hashable, msg: Any) -> None:
        """Before a client's ADV of a type it has not told us of: LimitRefusal past max_event_types
        (the broker makes no type for it; the client hears it as a refused advertisement)."""
        if self.caps.max_event_types is None or self.links.get(link) != "client":
            return
        ts = self.types.get(msg.etype)
        if ts is not None and link in ts.known:
            return
        error = too_many_types(self.caps, self._told[link], f"client {link!r}", msg.etype, self.name)
        if error is not None:
            raise self._hit(link, error, msg.etype, -1)

    def _told_of(self, link: Hashable) -> None:
        """A client link told us of one more type (it stays known until the link goes)."""
        if self.links.get(link) == "client":
            self._told[link] += 1

    def _admit_upd(self, link: Hashable, msg: Any, state: SubState, checked: list) -> None:
        """Before a client's checked UPD is stored: LimitRefusal if the sets it changes would
        take the subscription past max_set_members (the subscription keeps its values)."""
        if self.caps.max_set_members is None or self.links.get(link) != "client":
            return
        if not any(type(value) is ValueSet or isinstance(value, (frozenset, set)) for _, value, _ in checked):
            return
        values = list(state.values)
        for var, value, _ in checked:
            values[var] = value
        error = too_many_members(self.caps, set_members(values), f"subscription {msg.sid} of {msg.etype!r}", self.name)
        if error is not None:
            raise self._hit(link, error, msg.etype, msg.sid)

    def _counted(self, link: Hashable, n: int) -> None:
        """A subscription of `link` stored (1) or removed (-1)."""
        held = self._held[link] + n
        if held > 0:
            self._held[link] = held
        else:
            del self._held[link]

    def _hit(self, link: Hashable, error: LimitExceeded, etype: str, sid: int) -> LimitRefusal:
        self._stats[f"limit_{error.limit}"] += 1
        who = str(link)
        hits = self.limit_hits.pop(who, None) or Counter()
        hits[error.limit] += 1
        self.limit_hits[who] = hits  # the latest at the end: the oldest go first
        if len(self.limit_hits) > MAX_HIT_CLIENTS:
            del self.limit_hits[next(iter(self.limit_hits))]
        return LimitRefusal(error, etype, sid)

    def describe_limits(self) -> dict:
        """For the status file (`overlay status`): the limits and who hit them."""
        return {"limits": dict(self.caps.to_wire()),
                "limit_hits": {who: dict(hits) for who, hits in self.limit_hits.items()}}
