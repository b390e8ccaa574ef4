"""The client algorithm as a sans-I/O state machine (paper 000 Fig. 5, §7.1; 001 Algorithm 1).

A `ClientCore` turns API calls into messages for its edge broker and broker messages into
deliveries. It owns no thread and no socket: a transport calls `take()` when its link can carry
more, and `receive()` with what arrived. Messages wait in the outbox until taken; a pending UPD
for a subscription absorbs later changes of the same variables (coalescing: while the edge broker
lags, only the newest value of a variable is sent).

Locking: one `ClientCore` is used under the lock of its owner (the node); it is not thread-safe
by itself.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections import Counter, deque
from typing import Any, Callable, Mapping

from ...guards import SUBSCRIBED_AT, GuardPlan
from ..messages import Ack, AckReq, Adv, Flush, FlushAck, Pub, Refused, Sub, Unadv, Unsub, Upd
from ..model import Event, EventType, ValueSet, exact_types, received_event, set_delta
from .._client_caps import (NO_CAPS, ClientCaps, LimitExceeded, set_members, too_many_members, too_many_subscriptions,
                            too_many_types)
from .._params import check_value_range
from ._monitor import SubscriptionMonitor, UpdateMonitor

log = logging.getLogger("eventpy.client")

MODES = ("parametric", "resub")
# A resubscription (resub mode) gives the subscription a fresh sid, and events the edge broker
# matched against an older one may still be on their way. Every sid of a subscription keeps its
# first sid in the low bits, so such an event still finds the subscription and goes through its
# local filter (delivered if the guard holds now, counted spurious if not), however many
# resubscriptions happened in between; the client keeps no list of old sids.
_GENERATION = 1 << 32
_BASE_MASK = _GENERATION - 1


class SchemaRefused(TypeError):
    """An event type this node cannot publish: the overlay knows its name with another schema (a
    publisher built from an older version of the program), or this node used the name with
    another. The program's mistake: raised from its publish or advertise line (_boundary)."""

    __module__ = "eventpy"  # as a traceback's last line names it: eventpy.SchemaRefused (its public name)


class SubscriptionState:
    """The client's record of one subscription: its plan, parameter values and variables."""

    __slots__ = ("sid", "etype", "exact", "plan", "env", "values", "seqs", "on_event", "closed",
                 "handle", "group", "sent", "wire", "monitor", "refused")

    def __init__(self, sid: int, etype: EventType, plan: GuardPlan, env: dict, on_event: Callable) -> None:
        self.sid = sid
        self.etype = etype
        self.exact = exact_types(etype.types)  # are received values exactly its types (ClientCore.targets)
        self.plan = plan
        self.env = env
        self.values = plan.evaluate(env)
        self.seqs = [0] * len(self.values)
        self.sent = list(self.values)  # what the edge broker holds once it has what was taken
        # what the broker is told: the exact values, or the update monitor's over-approximations
        # (the local filter always uses `values`)
        self.wire = list(self.values)
        self.monitor: SubscriptionMonitor | None = None
        self.on_event = on_event
        self.closed = False
        self.handle: Any = None  # the public Subscription object, set by the API layer
        self.group: Any = self  # subscriptions of one group are delivered one at a time
        # why the broker refused this subscription's SUB or an UPD of it (a per-client limit,
        # _client_caps), once it said so: its updates raise it ("" while none was refused)
        self.refused = ""


class ClientCore:
    def __init__(self, name: str, *, mode: str = "parametric", clock: Callable[[], float] = time.time) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose parametric or resub")
        self.name = name
        self.mode = mode
        self.clock = clock
        self.outbox: deque[Any] = deque()
        self._pending: dict[int, Upd] = {}  # sid -> UPD still in the outbox
        self.advertised: dict[str, EventType] = {}  # the types this client publishes
        self.declared: dict[str, EventType] = {}  # the types it only subscribes to (schema told)
        self.subs: dict[int, SubscriptionState] = {}
        self._by_sid: dict[int, SubscriptionState] = {}  # first sid (sid & _BASE_MASK) -> state
        self._sids = itertools.count(1)
        self._seq = itertools.count(1)
        self._tokens = itertools.count(1)
        # in the barrier's tokens beside the name: two nodes given one name on different brokers
        # (a broker refuses only a second one of its own) must not look like one flush seen twice,
        # which a broker reports as a cycle; fixed width, so a message's size does not vary with it
        self._nonce = secrets.randbits(30) | (1 << 30)
        self._stats: Counter = Counter()
        self.n_published = self.n_received = 0  # per event: plain ints, folded into `stats`
        self.acked: dict[tuple, str] = {}  # AckReq token -> brokers that failed ("" if none)
        self.refused: dict[str, str] = {}  # event type -> why the overlay refused its advertisement
        self._refusing: set[int] = set()  # sids an event was refused for, already logged
        # the per-client limits of the edge broker (a TCP broker tells them at attach; none
        # embedded), checked at subscribe and update so that the program hears of them at its call
        self.caps: ClientCaps = NO_CAPS
        self.caps_broker = ""  # the broker that set them, for the errors
        self._told: set[str] = set()  # the types told to the edge broker on this connection (it keeps them)

    @property
    def stats(self) -> Counter:
        s = self._stats
        if self.n_published:
            s["published"] = self.n_published
        if self.n_received:
            s["received"] = self.n_received
        return s

    # -- API side ------------------------------------------------------------------------------------
    def advertise(self, etype: EventType) -> None:
        self._check_schema(etype)
        if etype.name not in self.advertised:
            self._tell(etype.name)
            self.advertised[etype.name] = etype
            self.outbox.append(Adv(etype.name, etype.to_wire()))

    def _declare(self, etype: EventType) -> None:
        """Tell the edge broker the schema of a type this client subscribes to, without becoming
        one of its publishers: subscriptions are routed towards publishers only (before, every
        subscriber advertised, and brokers sent summaries towards brokers with no publisher)."""
        self._check_schema(etype)
        if etype.name not in self.declared:  # kept while advertised too: resync after an UNADV
            self._tell(etype.name)
            self.declared[etype.name] = etype
            if etype.name not in self.advertised:
                self.outbox.append(Adv(etype.name, etype.to_wire(), publishes=False))

    def _tell(self, name: str) -> None:
        """A type is about to be told to the edge broker: LimitExceeded past its max_event_types."""
        if name in self._told:
            return
        if self.caps is not NO_CAPS:
            error = too_many_types(self.caps, len(self._told), f"node {self.name}", name, self.caps_broker)
            if error is not None:
                raise error
        self._told.add(name)

    def _check_schema(self, etype: EventType) -> None:
        if etype.name in self.refused:
            raise SchemaRefused(f"the overlay refused event type {etype.name!r}: {self.refused[etype.name]}")
        known = self.advertised.get(etype.name) or self.declared.get(etype.name)
        if known is not None and known != etype:
            raise SchemaRefused(f"event type {etype.name!r} is already used with schema "
                                f"({known.describe()}), not ({etype.describe()})")

    def unadvertise(self, name: str) -> None:
        if self.advertised.pop(name, None) is not None:
            self.outbox.append(Unadv(name))

    def publish(self, etype: EventType, values: tuple) -> int:
        """Queue an event; returns its sequence number ((self.name, seq) identifies it)."""
        if self.advertised.get(etype.name) is not etype:  # the same type object: nothing to check
            self.advertise(etype)
        seq = next(self._seq)
        # Queued as a plain tuple of scalars and made a Pub when taken: the garbage collector stops
        # tracking such a tuple at its first look, so a publisher that runs ahead of its socket
        # (tens of thousands of queued events) does not grow the heap that every collection walks
        # (queued Pub objects cost a TCP publisher ~0.4 us per event in collections)
        self.outbox.append((etype.name, values, seq, self.clock()))
        self.n_published += 1
        return seq

    def subscribe(self, etype: EventType, plan: GuardPlan, env: Mapping[str, Any],
                  on_event: Callable[[Event], Any], group: Any = None,
                  rum: UpdateMonitor | None = None, since: float | None = None) -> SubscriptionState:
        """`since`: the moment elapsed() counts from (on the overlay's clock), when the subscription
        belongs with others made at that moment (an object's, one per class it listens as); else now."""
        _no_nan(env)
        sid = next(self._sids)
        if sid > _BASE_MASK:
            raise RuntimeError("this client has made 2**32 subscriptions; no sid is left")
        env = dict(env)
        if plan.timed:  # elapsed() counts from now, on the overlay's clock (as Pub.time does)
            env[SUBSCRIBED_AT] = self.clock() if since is None else since
        state = SubscriptionState(sid, etype, plan, env, on_event)
        if self.caps is not NO_CAPS:  # before anything is queued: a refused subscribe sends nothing
            self._check_caps(state)
        # the edge broker checks the subscription against the schema: it must know it
        self._declare(etype)
        if group is not None:
            state.group = group
        if rum is not None:
            numeric = {v.id: etype.schema[v.attr] is int for v in plan.vars
                       if v.kind == "constraint" and etype.schema.get(v.attr) in (int, float)}
            state.monitor = SubscriptionMonitor(rum, numeric)
        self.subs[state.sid] = state
        self._by_sid[state.sid] = state
        self.outbox.append(Sub(etype.name, state.sid, plan.spec, list(state.values)))
        return state

    def _check_caps(self, state: SubscriptionState) -> None:
        """LimitExceeded if the edge broker would refuse `state`'s SUB for a per-client limit
        (under the node lock: two threads subscribing at once do not both take the last place)."""
        error = too_many_subscriptions(self.caps, len(self.subs), f"node {self.name}", self.caps_broker)
        if error is None:
            error = too_many_members(self.caps, set_members(state.values),
                                     f"a subscription to {state.etype.name} when {state.plan.source!r}",
                                     self.caps_broker)
        if error is not None:
            raise error

    def members_error(self, state: SubscriptionState, values: list) -> LimitExceeded | None:
        """The error if `values` (a subscription's variables after an update) hold more set
        members than the edge broker takes per subscription, else None."""
        return too_many_members(self.caps, set_members(values), f"the subscription to {state.etype.name} when "
                                f"{state.plan.source!r}", self.caps_broker)

    def update(self, state: SubscriptionState, params: Mapping[str, Any]) -> int:
        """Change parameters (Fig. 5 lines 16-17). Returns the number of variables that changed."""
        if state.closed:
            raise RuntimeError("the subscription is closed")
        if state.refused:
            raise LimitExceeded(state.refused)
        _no_nan(params)
        state.env.update(params)
        # Copy on write: a delivery thread reads `values` without the node lock (`passes`), so
        # it sees the variables before or after this update, never half of it.
        values = list(state.values)
        changed = state.plan.recompute(state.env, values, list(params))
        if not changed:
            return 0
        state.values = values
        self._send_changes(state, changed)
        return len(changed)

    def _send_changes(self, state: SubscriptionState, changed: list[tuple[int, Any]]) -> None:
        if state.monitor is not None:  # 000 Fig. 10: maybe an approximation, maybe nothing
            now = self.clock()
            kept = []
            for var, value in changed:
                out = state.monitor.on_change(var, value, now)
                if out is None:
                    self._stats["rum_suppressed"] += 1
                elif out != state.wire[var]:
                    if out is not value:
                        self._stats["rum_approximated"] += 1
                    kept.append((var, out))
            changed = kept
            if not changed:
                return
        self._push(state, changed)

    def _push(self, state: SubscriptionState, changed: list[tuple[int, Any]]) -> None:
        """Tell the broker new values of variables: one (coalescing) UPD, or a resubscription."""
        for var, value in changed:
            state.wire[var] = value
        if self.mode == "resub":
            self._resubscribe(state)
            return
        pending = self._pending.get(state.sid)
        if pending is None:
            pending = self._pending[state.sid] = Upd(state.etype.name, state.sid)
            self.outbox.append(pending)
        for var, value in changed:
            state.seqs[var] += 1
            if var in pending.changes:
                self._stats["upd_coalesced"] += 1
            pending.changes[var] = (value, state.seqs[var])

    def settle(self, state: SubscriptionState) -> bool:
        """Once the update rate of a monitored variable has fallen below freq_approx over the
        window, tell the broker its exact value again (Fig. 10 lines 37-44). True if that sent
        something."""
        if state.closed or state.monitor is None:
            return False
        changed = []
        for var in state.monitor.settle(self.clock()):
            if state.wire[var] != state.values[var]:
                changed.append((var, state.values[var]))
        if not changed:
            return False
        self._push(state, changed)
        self._stats["rum_settled"] += 1
        return True

    def settle_due(self, state: SubscriptionState) -> float | None:
        """When `settle` may next reinstate something of `state` (on this core's clock), if no
        variable changes before; None if nothing is approximated."""
        if state.closed or state.monitor is None:
            return None
        return state.monitor.due()

    def approximating(self, state: SubscriptionState) -> bool:
        """Does the broker still hold an update monitor's approximation for `state` (so that a
        later `settle` has something to reinstate)?"""
        return not state.closed and state.monitor is not None and state.monitor.approximating()

    def _resubscribe(self, state: SubscriptionState) -> None:
        """The baseline (000 Fig. 1): a fresh subscription, then the old one cancelled."""
        old = state.sid
        state.sid = old + _GENERATION  # same subscription (_by_sid), new sid for the broker
        self.subs.pop(old, None)
        self.subs[state.sid] = state
        state.sent = list(state.wire)
        self.outbox.append(Sub(state.etype.name, state.sid, state.plan.spec, list(state.wire)))
        self.outbox.append(Unsub(state.etype.name, old))

    def unsubscribe(self, state: SubscriptionState) -> None:
        if state.closed:
            return
        state.closed = True
        self.subs.pop(state.sid, None)
        self._by_sid.pop(state.sid & _BASE_MASK, None)
        self._pending.pop(state.sid, None)  # the UNSUB supersedes it; it stays queued, harmless
        self.outbox.append(Unsub(state.etype.name, state.sid))

    def resync(self) -> None:
        """After reconnecting to a broker that forgot this client: advertise again, subscribe
        again with the current values, then what was queued and not sent (events, flushes).
        Messages in flight when the connection dropped may be lost; none is sent twice."""
        kept = [m for m in self.outbox if type(m) in (tuple, Flush, FlushAck, Unadv, AckReq)]  # tuple: an event
        self.outbox.clear()
        self._pending.clear()
        self._told = set(self.advertised) | set(self.declared)  # a new connection knows only what it is told again
        for name, etype in self.advertised.items():
            self.outbox.append(Adv(name, etype.to_wire()))
        for name, etype in self.declared.items():
            if name not in self.advertised:
                self.outbox.append(Adv(name, etype.to_wire(), publishes=False))
        for state in self.subs.values():
            state.refused = ""  # sent again whole: a broker that refused it may take it now (or say so again)
            if state.monitor is not None:
                state.monitor.reset()
            state.wire = list(state.values)
            state.sent = list(state.values)
            # the broker starts this subscription over from the SUB (sequence numbers 0): counted
            # on from here, a long-lived variable would look like an implausible jump (MAX_SEQ_STEP)
            state.seqs = [0] * len(state.values)
            self.outbox.append(Sub(state.etype.name, state.sid, state.plan.spec, list(state.values)))
        self.outbox.extend(kept)
        self._stats["resyncs"] += 1

    def request_ack(self, budget: float) -> tuple:
        """Ask for a cascading acknowledgement (000 §9.3) of every subscription change sent so
        far; the Ack comes back through `receive` and lands in `acked`."""
        token = (self.name, self._nonce, "ack", next(self._tokens))
        self.outbox.append(AckReq(token, budget))
        return token

    def flush(self, budget: float | None = None) -> tuple:
        """The drain barrier; `budget`: how long the edge broker may wait for the peers it asks
        before it answers naming the silent ones (None: as long as it takes)."""
        token = (self.name, self._nonce, next(self._tokens))
        self.outbox.append(Flush(token, budget))
        return token

    # -- transport side ---------------------------------------------------------------------------
    def take(self, limit: int | None = None) -> list[Any]:
        """The next messages for the edge broker, oldest first."""
        out = []
        while self.outbox and (limit is None or len(out) < limit):
            msg = self.outbox.popleft()
            kind = type(msg)
            if kind is tuple:  # an event, queued by publish
                msg = Pub(msg[0], msg[1], self.name, msg[2], msg[3])
            elif kind is Upd:
                if self._pending.get(msg.sid) is msg:
                    del self._pending[msg.sid]
                self._as_deltas(msg)
                self._stats["upd_sent"] += 1
            elif kind is Sub:
                self._stats["sub_sent"] += 1
            elif kind is Unsub:
                self._stats["unsub_sent"] += 1
            out.append(msg)
        return out

    def _as_deltas(self, msg: Upd) -> None:
        """A set variable travels as the values it lost and gained when that is smaller."""
        state = self._by_sid.get(msg.sid & _BASE_MASK)
        if state is None:
            return
        for var, (value, seq) in list(msg.changes.items()):
            prev = state.sent[var]
            state.sent[var] = value
            if isinstance(value, ValueSet) and isinstance(prev, ValueSet):
                delta = set_delta(prev, value)
                if delta is not None:
                    msg.changes[var] = (delta, seq)

    def receive(self, msg: Any) -> list[tuple[SubscriptionState, Event]]:
        """A message from the edge broker. Returns (subscription, event) candidates to deliver
        through `deliver`; a FLUSH is answered by the owner once earlier deliveries are done."""
        kind = type(msg)
        if kind is Ack:
            self.acked[msg.ref] = msg.failed
            return []
        if kind is Pub:
            meta = (msg.origin, msg.seq, msg.time)
            return [(state, received_event(state.etype, msg.values, meta)) for state in self.targets(msg)]
        if kind is Refused and msg.sid != -1:  # a SUB or UPD past a per-client limit
            self._refused_sub(msg)
            return []
        if kind is Refused:  # the next publish or subscribe of the type raises with the reason
            self.advertised.pop(msg.etype, None)
            self.declared.pop(msg.etype, None)
            self.refused[msg.etype] = msg.reason
            log.error("node %s: the overlay refused event type %r: %s", self.name, msg.etype, msg.reason)
        return []

    def _refused_sub(self, msg: Refused) -> None:
        """The broker refused a SUB or UPD of a subscription (a client that checks its limits
        meets this only when they were lowered, e.g. at a broker restarted with others): said in
        the log at once and by the subscription's next update. The broker holds it as it was
        before the message (a refused SUB: not at all), so the rest of this node is unaffected."""
        state = self._by_sid.get(msg.sid & _BASE_MASK)
        self._stats["refused_by_broker"] += 1
        if state is None or state.closed:
            return
        if not state.refused:
            log.error("node %s: its subscription %d to %s when %r: %s", self.name, state.sid, state.etype.name,
                      state.plan.source, msg.reason)
        state.refused = msg.reason

    def targets(self, msg: Pub) -> list[SubscriptionState]:
        """The open subscriptions of this client that a PUB is addressed to, each once (whatever
        matched: disjuncts, aliases of one subscription)."""
        self.n_received += 1
        sids = msg.sids
        if len(sids) == 1:  # the common case: one subscription of this client matched
            state = self._by_sid.get(sids[0] & _BASE_MASK)
            if state is None or state.closed:
                return []
            # _fits, its common case first: exactly the schema's types, as Python publishers send
            if (msg.etype != state.etype.name or not state.exact(msg.values)) and not self._fits(state, msg):
                return []
            return [state]
        out: list[SubscriptionState] = []
        for sid in sids:
            state = self._by_sid.get(sid & _BASE_MASK)
            if state is None or state.closed or any(s is state for s in out) or not self._fits(state, msg):
                continue
            out.append(state)
        return out

    def _fits(self, state: SubscriptionState, msg: Pub) -> bool:
        """Is the event one of the subscription's type? Brokers check what publishers send, but
        what reaches the program (and its local filter, which indexes the values by the schema)
        must be, whatever a broker sends: before, a PUB of another type or of other values
        addressed to a subscription raised in the local filter, on a delivery thread, and the
        events queued with it were lost."""
        etype = state.etype
        if msg.etype == etype.name and etype.fits(msg.values):
            return True
        self._stats["refused"] += 1
        if state.sid not in self._refusing:  # said once a subscription (a schema the overlay knows
            self._refusing.add(state.sid)     # otherwise would say it for every event), counted always
            log.warning("node %s: refused an event addressed to its subscription %d of %s: %s%.200r is not "
                        "one (more are counted in stats()['refused'])", self.name, state.sid, etype.name,
                        msg.etype, msg.values)
        return False

    def deliver(self, state: SubscriptionState, event: Event) -> bool:
        """The local filter (Fig. 5 line 11), evaluated at the last moment before the callback:
        True if the callback must run now (strictness), False if the event is spurious."""
        ok = passes(state, event)
        if ok is not None:
            self._stats["delivered" if ok else "spurious"] += 1
        return bool(ok)

    def flush_ack(self, token: tuple) -> None:
        self.outbox.append(FlushAck(token))


def passes(state: SubscriptionState, event: Event) -> bool | None:
    """The local filter without touching the core: True (deliver), False (spurious), None (the
    subscription is closed). Safe without the node lock: `values` is replaced, never mutated."""
    if state.closed:
        return None
    meta = event_info(event)
    return state.plan.holds(event.values, state.values, meta[2] if meta else None)


def _no_nan(params: Mapping[str, Any]) -> None:
    """Refuse what no guard can use (NaN) and what the wire cannot carry: an int beyond 64 bits
    (a parameter a predicate reads travels as it is, e.g. into an evolving bound; before, over
    TCP the SUB or UPD was logged as unencodable and dropped after the call returned). On every
    overlay, as event attributes are (EventType.values_from); the API checks before, this is the
    core's own guard."""
    for k, v in params.items():
        check_value_range(k, v)


def event_info(event: Event) -> tuple[str, int, float] | None:
    """(origin node, sequence number, publication time) of a delivered event."""
    return getattr(event, "_meta", None)
