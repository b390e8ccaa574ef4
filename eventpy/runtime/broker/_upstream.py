"""What a broker tells the brokers upstream (paper 000 Fig. 6 lines 39-47, `propagate`): its
summary for each neighbor it received an advertisement from, sent only when it changed, as UPDs
of broker variables when its structure is unchanged (parametric mode), else as a fresh SUB and an
UNSUB of the old one (and so when the summary starts or stops moving with time, _late). A mixin
of `Broker`, whose state it reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Hashable

from ..matching._poset import order_key
from ..messages import Sub, Unsub, Upd
from ..model import ValueSet, set_delta
from ._late import nothing_of
from ._summaries_other import NoSummary
from ._summary import SUMMARIES

if TYPE_CHECKING:
    from ._adverts import _TypeState

Link = Hashable
Sends = list[tuple[Link, Any]]


@dataclass
class _Sent:
    """What this broker has subscribed at one upstream neighbor for one event type."""

    sid: int
    filters: list[dict]
    structure: tuple
    seqs: list[int]
    moving: float = 0.0  # the mark it was sent with (Sub.moving)


class Upstream:
    """`propagate`, for Broker."""

    # -- the summary, while a broker upstream reads it ------------------------------------------------
    def _summarize(self, ts: _TypeState) -> None:
        """A neighbor is about to read the type's summary, and none was kept (NoSummary): it is
        built from the subscriptions held now, each conjunction as the broker indexes it (its
        filter, or its version now), as the summary would hold them had it been kept all along."""
        summary = SUMMARIES[self.summary_name](ts.etype)
        for state in ts.subs.values():
            for ci in state.switched_on:
                summary.set_entry(state.link, (state.link, state.sid, ci), self._version(ts, state, ci))
        ts.summary = summary  # (its moving versions computed now, at the window's time)

    def _not_upstream(self, ts: _TypeState, link: Hashable) -> None:
        """`link` no longer reads the type's summary; the last one gone, none is kept."""
        ts.upstream.discard(link)
        if not ts.upstream:
            ts.summary = NoSummary()

    # -- propagate (Fig. 6 lines 39-47) -------------------------------------------------------------
    def _propagate(self, ts: _TypeState, out: Sends) -> None:
        if ts.upstream:
            ts.summary.settle()  # the version read below is then the one the summaries are for
        for link in ts.upstream:
            version = ts.summary.version
            if ts.seen.get(link) == version:
                continue  # nothing that could change this neighbor's summary happened
            ts.seen[link] = version
            new = ts.summary.summary_for(link)
            if len(new) > 1 and not ts.summary.sorts:  # (a poset's summary comes in order_key order)
                new.sort(key=order_key)
            if self.max_summary is not None and new and _size(new) > self.max_summary:
                new = [{}]
                self._stats["summary_widened"] += 1
            sent = ts.sent.get(link)
            moving = self._moving_for(ts, link) if ts.moving else 0.0
            if not new and moving:
                # every version behind it admits nothing now (expired: `elapsed() < ttl`), but an
                # event published while one held may still come late: the neighbor keeps a
                # subscription that admits no event on time and whose mark lets late ones through
                new = [nothing_of(ts.etype)]
            if sent is not None and new == sent.filters and moving == sent.moving:
                continue
            structure = tuple(tuple(sorted(f)) for f in new)
            name = ts.etype.name
            if (self.mode == "parametric" and sent is not None and structure == sent.structure
                    and moving == sent.moving):
                changes: dict = {}
                var = 0
                for f_old, f_new, attrs in zip(sent.filters, new, structure):
                    for attr in attrs:  # (sorted once, above)
                        c, was = f_new[attr], f_old[attr]
                        if c != was:
                            sent.seqs[var] += 1
                            if type(c) is ValueSet and type(was) is ValueSet:
                                # a set travels as what it lost and gained, as from a client
                                # (a member added to a 50,000-member summary re-sent all of it)
                                c = set_delta(was, c) or c
                            changes[var] = (c, sent.seqs[var])
                        var += 1
                sent.filters = new
                out.append((link, Upd(name, sent.sid, changes)))
                self._stats["upd_sent"] += 1
                continue
            if new:
                spec, values = _spec_of(new)
                sid = next(self._sids)
                out.append((link, Sub(name, sid, spec, values, moving)))
                self._stats["sub_sent"] += 1
                ts.sent[link] = _Sent(sid, new, structure, [0] * len(values), moving)
            else:
                ts.sent.pop(link, None)
            if sent is not None:
                out.append((link, Unsub(name, sent.sid)))
                self._stats["unsub_sent"] += 1


def _size(filters: list[dict]) -> int:
    """About the bytes of `filters` on the wire, at most 4 per character of a string (UTF-8)."""
    n = 0
    for f in filters:
        for c in f.values():
            n += 16
            if type(c) is ValueSet and c.values:
                values = c.values  # one attribute's: all str, or all bool
                if type(next(iter(values))) is str:
                    n += 4 * sum(map(len, values)) + 5 * len(values)
                else:
                    n += 9 * len(values)
    return n


def _spec_of(filters: list[dict]) -> tuple[tuple, list]:
    """Broker variables (Fig. 6 line 45): one fresh variable per constraint of the summary."""
    spec, values = [], []
    for f in filters:
        cons = []
        for attr in sorted(f):
            cons.append((attr, len(values)))
            values.append(f[attr])
        spec.append((tuple(cons), -1, ()))
    return tuple(spec), values
