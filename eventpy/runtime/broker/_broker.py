"""The broker algorithm as a sans-I/O state machine (paper 000 Fig. 6; 001 Algorithm 2).

`Broker.handle(link, message)` returns the messages to send as `(link, message)` pairs; it never
touches a socket or a clock. The same object runs inside the embedded overlay, the discrete-event
simulator and (later) a TCP broker process. Links are opaque hashable names chosen by whoever
drives the broker; `connect(link, role)` tells whether a peer is a broker or a client.

Modes (DESIGN §2):
* `parametric` — subscriptions are kept with their variables; an UPD changes one constraint in
  place (Fig. 6 lines 33-38, `lookup` is the `(link, sid)` table) and `propagate` (lines 39-47)
  sends upstream only what changed in the summary: UPDs of broker variables when its structure is
  unchanged, else a fresh SUB and an UNSUB of the old one.
* `resub` — the baseline of Fig. 1/2: summaries that change are re-subscribed upstream
  (a SUB then an UNSUB), never updated.

Evolving subscriptions (guards over elapsed(), paper 003) are matched by one of three engines,
`evolving_engine` "ves", "lees" or "clees" (_evolving, _clees).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from itertools import count
from typing import Any, Callable, Hashable

from .._log_limit import LogLimit
from ..matching import make_matcher
from ..messages import Ack, AckReq, Adv, Bye, Flush, FlushAck, Hello, Pub, Refused, Sub, Unadv, Unsub, Upd
from ._acks import AckTracker
from ._caps import ClientLimits, LimitRefusal
from ._adverts import Advertisements, _TypeState
from ._flushes import FlushTracker
from ._late import LateEvents
from ._upstream import Upstream
from ._evolving import DEFAULT_HORIZON, DEFAULT_TTL, Evolving, EvolvingHulls, choose_engine
from .._client_caps import ClientCaps
from ..model import EventType
from ._state import STALE, MessageError, SubState
from ._summary import SUMMARIES

log = logging.getLogger("eventpy.broker")
Link = Hashable
Sends = list[tuple[Link, Any]]
MODES = ("parametric", "resub")
MAX_UNKNOWN_PUB_NOTES = 1000  # (link, type) pairs whose dropped PUB is logged; after that, counted only
_NOTED = (Pub, Flush, FlushAck)  # what handle() does not pass to FlushTracker.note (a PUB: noted inline)


class Broker(Advertisements, Upstream, Evolving, LateEvents, ClientLimits):
    def __init__(self, name: str = "broker", *, mode: str = "parametric", matcher: str = "fastint",
                 summary: str = "attribute", clock: Callable[[], float] = time.monotonic,
                 overlay_clock: Callable[[], float] = time.time, evolve_horizon: float = DEFAULT_HORIZON,
                 evolving_engine: str = "ves", cache_ttl: float = DEFAULT_TTL,
                 index_evolving: bool | None = None, caps: ClientCaps | None = None) -> None:
        """`clock` times the broker's timers; `overlay_clock` is the clock of publication times
        (Pub.time, what elapsed() is measured on); `evolve_horizon`: how often the versions of
        evolving subscriptions are recomputed (VES's matcher, and every engine's summaries);
        `evolving_engine`: how evolving subscriptions are matched, "ves", "lees" or "clees"
        (paper 003 §IV; _evolving); `cache_ttl`: how long a CLEES version is used (003's TT).
        `index_evolving` is deprecated: True is evolving_engine="ves", False "lees".
        `caps`: the per-client limits of a shared overlay (_client_caps; None: none)."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose parametric or resub")
        if summary not in SUMMARIES:
            raise ValueError(f"unknown summary {summary!r}; choose {' or '.join(SUMMARIES)}")
        make_matcher(matcher, EventType("probe", x=int))  # fail early on an unknown matcher
        self.evolving_engine = choose_engine(evolving_engine, cache_ttl, index_evolving)
        self.cache_ttl = float(cache_ttl)
        self.name = name
        self.mode = mode
        self.matcher_name = matcher
        self.summary_name = summary
        self.links: dict[Link, str] = {}  # link -> "broker" | "client"
        self.broker_links: set[Link] = set()  # the links whose role is "broker" (the PUB path asks)
        self.types: dict[str, _TypeState] = {}
        self.clock = clock
        self.acks = AckTracker(self)  # cascading acknowledgements (000 §9.3)
        self.flushes = FlushTracker(self)  # the drain barrier
        self._flush_reached = self.flushes.reached  # the PUB path adds to it
        self.evolving = EvolvingHulls(evolve_horizon, overlay_clock)
        self._stats: Counter = Counter()
        self._unknown_pubs: set[tuple[Link, str]] = set()  # (link, type) whose dropped PUB was logged
        self._refusals_logged = LogLimit()  # per link: a peer flooding bad messages does not flood the log
        # the counters every PUB touches are plain ints (a Counter increment is ~130 ns, an
        # attribute's ~30 ns; four of them per PUB were a fifth of a broker's routing time);
        # `stats` folds them in
        self.n_received = self.n_sent = self.n_pub_received = self.n_pub_forwarded = 0
        self._sids = count(1)
        # about how many bytes a summary sent to a neighbor may take (None: no limit). A summary is
        # the union of many subscriptions' filters and can outgrow a frame that each of them fits
        # in; a transport with a frame limit sets this, and a larger summary goes as "every event
        # of the type" (coverage holds; this broker's own index still filters exactly)
        self.max_summary: int | None = None
        self._init_caps(caps)

    @property
    def stats(self) -> Counter:
        """What this broker counted: received, sent, pub_received, pub_forwarded, refused, ..."""
        s = self._stats
        for key, n in (("received", self.n_received), ("sent", self.n_sent),
                       ("pub_received", self.n_pub_received), ("pub_forwarded", self.n_pub_forwarded)):
            if n:
                s[key] = n
        if self.evolving_engine == "clees":  # the cache counts in plain ints too (its per-candidate loop)
            caches = [ts.cache for ts in self.types.values() if ts.cache is not None]
            for key in ("builds", "hits", "late"):
                n = sum(getattr(c, key) for c in caches)
                if n:
                    s["clees_" + key] = n
        return s

    # -- links ---------------------------------------------------------------------------------------
    def connect(self, link: Link, role: str) -> Sends:
        """A peer is attached; a broker peer learns every advertisement we know of."""
        self.links[link] = role
        if role == "broker":
            self.broker_links.add(link)
        else:
            self.broker_links.discard(link)
        out: Sends = []
        if role == "broker":
            for ts in self.types.values():
                self._forward_adv(ts, out)
        return out

    def disconnect(self, link: Link) -> Sends:
        """Forget everything learnt from `link` (its subscriptions, advertisements, flushes)."""
        self.links.pop(link, None)
        self.broker_links.discard(link)
        if self._limited:
            self._told.pop(link, None)  # every type forgets it below
        out: Sends = []
        for ts in list(self.types.values()):
            ts.known.discard(link)
            for key in [k for k in ts.subs if k[0] == link]:
                self._remove_sub(ts, ts.subs.pop(key))
            ts.summary.drop_link(link)
            ts.sent.pop(link, None)
            ts.seen.pop(link, None)
            ts.adv_sent.discard(link)
            if link in ts.pubs:
                ts.pubs.discard(link)
                self._not_upstream(ts, link)
                self._retract_adv(ts, out)
            self._propagate(ts, out)
            self._forget_unused(ts)
        # its notes of dropped events go too (a bounded set: a link's would stay for good, and
        # later links' drops go unlogged)
        self._unknown_pubs = {p for p in self._unknown_pubs if p[0] != link}
        self.flushes.disconnect(link, out)
        self.acks.disconnect(link, out)
        return out

    # -- dispatch ------------------------------------------------------------------------------------
    def handle(self, link: Link, msg: Any) -> Sends:
        out: Sends = []
        self.n_received += 1
        try:
            if link not in self.links:
                raise MessageError(f"message from unknown link {link!r}")
            kind = type(msg)
            if kind is Pub:
                self._on_pub(link, msg, out)
                if out:  # FlushTracker.note written out: no call on the path of every event
                    reached = self._flush_reached.get(link)
                    if reached is None:
                        reached = self._flush_reached[link] = set()
                    for target, _ in out:
                        reached.add(target)
            elif kind is Upd:
                self._on_upd(link, msg, out)
                if out:  # most changes stay local: no call to find nothing forwarded
                    self.acks.note_forwarded(link, out)
            elif kind is Sub:
                self._on_sub(link, msg, out)
                if out:
                    self.acks.note_forwarded(link, out)
            elif kind is Unsub:
                self._on_unsub(link, msg, out)
                if out:
                    self.acks.note_forwarded(link, out)
            elif kind is Adv:
                self._on_adv(link, msg, out)
            elif kind is Unadv:
                self._on_unadv(link, msg, out)
            elif kind is Refused:
                self._on_refused(link, msg, out)
            elif kind is Flush:
                self.flushes.on_flush(link, msg, out)
            elif kind is FlushAck:
                self.flushes.on_flush_ack(link, msg, out)
            elif kind is AckReq:
                self.acks.on_request(link, msg, out)
            elif kind is Ack:
                self.acks.on_ack(link, msg, out)
            elif kind in (Hello, Bye):
                pass
            else:
                raise MessageError(f"unknown message kind {kind.__name__}")
        except MessageError as e:
            self._stats["refused"] += 1
            say, note = self._refusals_logged.allow(link)
            if say:
                log.warning("%s: refused %s from %r: %s%s", self.name, type(msg).__name__, link, e, note)
            if type(e) is LimitRefusal and link in self.links:  # the client says so to its program
                out.append((link, e.reply))
            elif type(msg) is Adv and link in self.links:  # its events would go nowhere: a client
                # raises at its next publish; a broker passes it on to the type's publishers
                out.append((link, Refused(msg.etype, f"broker {self.name}: {e}")))
        except Exception:  # a bug of ours, not the peer's: keep serving every link, say where
            self._stats["refused"] += 1
            self._stats["internal_errors"] += 1
            log.exception("%s: internal error on %s from %r (refused; please report)", self.name,
                          type(msg).__name__, link)
        if out and type(msg) not in _NOTED:  # where this link's messages went: its next FLUSH asks there
            self.flushes.note(link, out)
        self.n_sent += len(out)
        return out

    def tick(self, now: float | None = None) -> Sends:
        """Timers: acknowledgements (000 §9.3) and flushes not answered within their budget are
        answered as failed, naming the brokers (or clients) that stayed silent."""
        now = self.clock() if now is None else now
        out = self.acks.expire(now)
        out += self.flushes.expire(now)
        if self.evolving.stale():
            self._refresh_versions(out)
        return out

    def next_deadline(self) -> float | None:
        """When `tick` next has something to do (None: nothing pending)."""
        due = [d for d in (self.next_barrier_deadline(), self.next_evolution()) if d is not None]
        return min(due, default=None)

    def next_barrier_deadline(self) -> float | None:
        """When a confirm's or a drain's budget next runs out (`tick` then answers it as failed)."""
        due = [d for d in (self.acks.next_deadline(), self.flushes.next_deadline()) if d is not None]
        return min(due, default=None)

    def next_evolution(self) -> float | None:
        """When the summaries of evolving subscriptions are next recomputed (on `clock`)."""
        evolve = self.evolving.next_due()
        if evolve is None:
            return None
        return self.clock() + (evolve - self.evolving.overlay_clock())  # from the overlay clock

    # -- subscriptions (Fig. 6 lines 10-28, 33-38) ------------------------------------------------------
    def _on_sub(self, link: Link, msg: Sub, out: Sends) -> None:
        ts = self._type(msg.etype)
        key = (link, msg.sid)
        # validated before the subscription it replaces (a SUB of a sid in use) goes: a refused
        # SUB changes nothing (before, the old subscription was lost with it)
        state = SubState(link, msg.sid, ts.etype, msg.spec, msg.values)
        if self._limited:
            self._admit_sub(link, msg, key in ts.subs, state)
        if key in ts.subs:
            self._remove_sub(ts, ts.subs.pop(key))
        ts.subs[key] = state
        if self._limited:
            self._counted(link, 1)
        if any(state.moves):
            self.evolving.track(msg.etype, key, state)
            if ts.cache is not None:
                ts.cache.add(state)
            self._track_moving(ts, link, msg.sid, self.evolving.horizon)
        elif msg.moving and link in self.broker_links:  # a neighbor's summary of evolving ones
            self._track_moving(ts, link, msg.sid, msg.moving)
        for ci in state.switched_on:
            flt = self._version(ts, state, ci)
            ts.matcher.add((link, msg.sid, ci), self._indexed(state, ci, flt))
            ts.summary.set_entry(link, (link, msg.sid, ci), flt)
        self._propagate(ts, out)

    def _on_unsub(self, link: Link, msg: Unsub, out: Sends) -> None:
        ts = self._type(msg.etype)
        state = ts.subs.pop((link, msg.sid), None)
        if state is None:
            raise MessageError(f"UNSUB of unknown subscription {msg.sid} of {msg.etype!r}")
        self._remove_sub(ts, state)
        self._propagate(ts, out)
        self._forget_unused(ts)

    def _remove_sub(self, ts: _TypeState, state: SubState) -> None:
        if self._limited:
            self._counted(state.link, -1)
        self.evolving.forget(ts.etype.name, (state.link, state.sid))
        if ts.moving:
            self._untrack_moving(ts, state.link, state.sid)
        if ts.cache is not None:
            ts.cache.drop(state)
        for ci in state.switched_on:
            key = (state.link, state.sid, ci)
            ts.matcher.remove(key)
            ts.summary.set_entry(state.link, key, None)

    def _on_upd(self, link: Link, msg: Upd, out: Sends) -> None:
        ts = self.types.get(msg.etype)
        if ts is None:
            ts = self._type(msg.etype)  # raises: never advertised here
        sid = msg.sid
        state = ts.subs.get((link, sid))  # lookup[τ][x] of Fig. 6 line 35: O(1)
        if state is None:
            raise MessageError(f"UPD of unknown subscription {sid} of {msg.etype!r}")
        # every change is checked before any is stored: a refused UPD changes nothing (before,
        # the changes ahead of a bad one stayed, in the subscription but not in the index)
        checked = []
        check = state.check
        for var, (value, seq) in msg.changes.items():
            value = check(var, value, seq)
            if value is STALE:
                self._stats["stale_upd"] += 1
            else:
                checked.append((var, value, seq))
        if self._limited and checked:
            self._admit_upd(link, msg, state, checked)
        changed = False
        switched: set[int] | None = None  # conjunctions switched on or off
        on = state.switched_on
        store = state.store
        for var, value, seq in checked:
            what, ci, attr = store(var, value, seq)
            if what == "constraint":
                if ci in on:
                    # one constraint moves in place: the index and the summary get that attribute
                    # only (a bound inside its leaf, a bound inside the summary: no structure moves)
                    c = None if value.is_wildcard() else value  # what `store` stored
                    if state.evolving[ci]:  # its version: an evolving bound on attr narrows it
                        self._revise(ts, state, ci, (attr,))
                    else:
                        key = (link, sid, ci)
                        ts.matcher.update(key, attr, c)
                        ts.summary.update_entry(link, key, attr, c)
                    changed = True
            elif what == "param" and any(state.evolving):  # an evolving bound may read it
                for ci in on:
                    if state.evolving[ci]:
                        if state.moves[ci]:
                            self._revise(ts, state, ci)
                            changed = True
                        elif self._revise_bounds(ts, state, ci, var):  # only the bounds reading it
                            changed = True
            elif what == "switch":
                key = (link, sid, ci)
                was = ci in on
                now = state.active(ci)
                if now and not was:
                    ts.matcher.add(key, self._indexed(state, ci, self._version(ts, state, ci)))
                    on.add(ci)
                elif was and not now:
                    ts.matcher.remove(key)
                    on.discard(ci)
                    ts.summary.set_entry(link, key, None)
                if switched is None:
                    switched = set()
                switched.add(ci)
        if switched:
            for ci in switched:
                if ci in on:
                    ts.summary.set_entry(link, (link, sid, ci), self._version(ts, state, ci))
            changed = True
        if checked and ts.cache is not None:
            ts.cache.invalidate(state)  # its CLEES versions were built from the old values
        if changed:
            self._propagate(ts, out)

    # -- events (Fig. 6 lines 29-32; 001 Algorithm 3) ----------------------------------------------
    def _note_unknown_pub(self, link: Link, etype: Any) -> None:
        """An event of a type never advertised here is dropped (no subscription can want it); an
        operator whose events vanish learns it from the log, once per link and type (a bounded
        number of pairs: a peer sending random names cannot grow the set)."""
        pair = (link, etype if isinstance(etype, str) else repr(etype)[:80])
        if pair in self._unknown_pubs or len(self._unknown_pubs) >= MAX_UNKNOWN_PUB_NOTES:
            return
        self._unknown_pubs.add(pair)
        log.warning("%s: dropped a PUB of %r from %r: the type was never advertised here (the "
                    "publisher advertises before it publishes; further ones are only counted, "
                    "stats pub_unknown_type)", self.name, pair[1], link)

    def _on_pub(self, link: Link, msg: Pub, out: Sends) -> None:
        ts = self.types.get(msg.etype)
        if ts is None:
            self._stats["pub_unknown_type"] += 1
            self._note_unknown_pub(link, msg.etype)
            return
        self.n_pub_received += 1
        values = msg.values
        accepts = ts.accepts
        if len(values) != len(accepts):
            raise MessageError(f"PUB of {msg.etype!r} with {len(values)} values, "
                               f"schema has {len(accepts)}")
        i = 0
        for v in values:  # a value of the wrong type would reach the indexes (an index loop: zip
            if type(v) not in accepts[i]:  # cost twice as much on this path)
                raise MessageError(f"PUB of {msg.etype!r}: a {type(v).__name__} value where the schema "
                                   f"has {ts.etype.describe()}")
            i += 1
        evolving = self.evolving
        if evolving.members and msg.etype in evolving.members:
            if evolving.stale():
                self._refresh_versions(out)
            keys = self._evolving_keys(ts, values, msg.time)
        else:
            keys = ts.matcher.match(values)
        late = self._late_targets(ts, link, msg.time) if ts.late_links else None
        if not keys and not late:
            return
        broker_links = self.broker_links
        from_broker = link in broker_links
        brokers: list | None = None  # in the order matched, each once
        clients: dict[Link, tuple] | None = None  # client link -> the sids it gets
        subs = ts.subs
        for key in keys:
            target, sid, ci = key
            if target == link and from_broker:
                continue
            state = subs[(target, sid)]
            if state.residual[ci] and not state.residual_holds(ci, values, msg.time):
                continue
            if target in broker_links:
                if brokers is None:
                    brokers = [target]
                elif target not in brokers:
                    brokers.append(target)
            elif clients is None:
                clients = {target: (sid,)}
            else:
                sids = clients.get(target)
                if sids is None:
                    clients[target] = (sid,)
                elif sid not in sids:
                    clients[target] = sids + (sid,)
        if late:
            if brokers is None:
                brokers = late
            else:
                brokers.extend(t for t in late if t not in brokers)
        if brokers is not None:
            fwd = msg if not msg.sids else Pub(msg.etype, values, msg.origin, msg.seq, msg.time)
            for target in brokers:
                out.append((target, fwd))
            self.n_pub_forwarded += len(brokers)
        if clients is not None:
            for target, sids in clients.items():
                out.append((target, Pub(msg.etype, values, msg.origin, msg.seq, msg.time, sids)))
            self.n_pub_forwarded += len(clients)

    # -- introspection --------------------------------------------------------------------------------
    def subscription_count(self) -> int:
        return sum(len(ts.subs) for ts in self.types.values())

    def describe(self) -> dict:
        return {
            "name": self.name, "mode": self.mode, "matcher": self.matcher_name,
            "links": dict(self.links),
            "evolving_engine": self.evolving_engine,
            "types": {n: {"subscriptions": len(ts.subs), "entries": len(ts.matcher),
                          "evolving": len(self.evolving.members.get(n, ())),
                          **({} if ts.cache is None else {"cached_versions": ts.cache.versions()}),
                          "advertised_by": sorted(map(str, ts.pubs)),
                          # this broker's own clients, which `eventpy overlay status` sums up
                          # per type (a type subscribed to and published nowhere: a misspelt name)
                          "client_subscriptions": sum(1 for link, _ in ts.subs if self.links.get(link) == "client"),
                          "client_publishers": sorted(str(p) for p in ts.pubs if self.links.get(p) == "client")}
                      for n, ts in self.types.items()},
            "stats": dict(self.stats),
            **self.describe_limits(),
        }
