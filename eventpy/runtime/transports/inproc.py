"""A deterministic discrete-event simulation of an overlay: many brokers and clients in one
thread, a virtual clock, per-link delays, per-broker service time.

Each broker is a single server: it takes the next available message among its inbound links
(the oldest first), spends its service time on it (a deterministic cost model, or the CPU time
`Broker.handle` really took), then its output travels with the link's delay. Messages of a client
wait in the client's outbox until the broker takes them, so UPDs coalesce there while the broker
lags (a coalesced UPD keeps its place, and its arrival time, in the queue). Callbacks run inline
at the virtual time of delivery. The same `Broker` and `ClientCore` objects as everywhere else.
"""

from __future__ import annotations

import heapq
import math
import itertools
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...guards import SUBSCRIBED_AT, GuardPlan, compile_guard
from .._boundary import callers_mistake
from ..broker import DEFAULT_TTL, Broker
from ..client import ClientCore, SubscriptionState, UpdateMonitor
from ..messages import Flush, FlushAck, Pub, Sub, Unsub, Upd
from ..model import Event, EventType
from ..overlay import Topology
from ..wire import encode

SUBSCRIPTION_MESSAGES = (Sub, Unsub, Upd)


@dataclass
class CostModel:
    """Service time of a broker per message, in seconds (deterministic)."""

    pub: float = 20e-6
    per_forward: float = 2e-6
    sub: float = 60e-6
    unsub: float = 50e-6
    upd: float = 10e-6
    other: float = 5e-6

    def __call__(self, msg: Any, sends: list, cpu: float) -> float:
        kind = type(msg)
        if kind is Pub:
            return self.pub + self.per_forward * len(sends)
        if kind is Sub:
            return self.sub
        if kind is Unsub:
            return self.unsub
        if kind is Upd:
            return self.upd
        return self.other


def measured(msg: Any, sends: list, cpu: float) -> float:
    """Service time = the CPU time the broker really spent (not reproducible run to run)."""
    return cpu


class Recorder:
    """Measured service times, kept per message kind, to fit a CostModel to (`calibrate`)."""

    def __init__(self) -> None:
        self.samples: dict[str, list[tuple[int, float]]] = {}

    def __call__(self, msg: Any, sends: list, cpu: float) -> float:
        self.samples.setdefault(type(msg).__name__, []).append((len(sends), cpu))
        return cpu

    def calibrate(self) -> CostModel:
        """A deterministic cost model with this run's costs: PUB as a base plus a cost per
        message sent (least squares), every other kind its median."""
        import numpy as np

        def median(kind: str, default: float) -> float:
            xs = [c for _, c in self.samples.get(kind, ())]
            return float(np.median(xs)) if xs else default

        base = CostModel()
        pub, per = base.pub, base.per_forward
        pubs = self.samples.get("Pub", [])
        if len({n for n, _ in pubs}) > 1:
            a = np.array([[1.0, n] for n, _ in pubs])
            (pub, per), *_ = np.linalg.lstsq(a, np.array([c for _, c in pubs]), rcond=None)
            pub, per = max(float(pub), 0.0), max(float(per), 0.0)
        elif pubs:
            pub = median("Pub", pub)
            per = 0.0
        others = [c for kind, xs in self.samples.items() if kind not in ("Pub", "Sub", "Unsub", "Upd")
                  for _, c in xs]
        return CostModel(pub=pub, per_forward=per, sub=median("Sub", base.sub), unsub=median("Unsub", base.unsub),
                         upd=median("Upd", base.upd),
                         other=float(np.median(others)) if others else base.other)


class _Inbound:
    """A broker's inbound side: per-link FIFO queues and a heap of their heads."""

    def __init__(self) -> None:
        self.queues: dict[Any, deque] = {}
        self.heads: list[tuple[float, int, Any]] = []
        # clients with something in their outbox, in the order they got it (a dict, not a set:
        # iteration order must not depend on string hashing, or ties would break differently)
        self.ready: dict[str, "SimClient"] = {}
        self.busy_until = 0.0
        self.busy = False
        # a timer came due while the broker served a message: it runs when that service ends
        # (one thread: a broker process's event loop runs timers between messages), so that what
        # it sends follows what the message sent on every link (a recomputed summary overtaking
        # the SUB it replaces left the upstream broker refusing an UNSUB and keeping that SUB)
        self.tick_due = False


def nearest_rank(sorted_values: list[float], q: float) -> float:
    """The q-quantile of sorted values by nearest rank: the smallest value that at least a share q
    of them do not exceed; nan for none. Index int(n * q) was one rank high: the p99 of 100
    latencies was their maximum."""
    if not sorted_values:
        return float("nan")
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


_VERSIONS = 128  # earlier values kept per subscription for 000 §8.1 (c)'s spurious events


class SimClient:
    """A client node in the simulation; its API mirrors `eventpy.Node`."""

    def __init__(self, sim: "Simulation", name: str, broker: str, delay: float, mode: str) -> None:
        self.sim = sim
        self.name = name
        self.broker = broker
        self.delay = delay
        self.core = ClientCore(name, mode=mode, clock=lambda: sim.now)
        self.times: deque[float] = deque()  # enqueue time of each outbox entry
        self.delays: list[float] = []  # update delays (000 §8.1 (a)) observed here
        self.latencies: list[float] = []
        self._open: dict[int, list[tuple[float, list]]] = {}  # id(state) -> pending delay probes
        # 000 §8.1 (c): "if a subscriber changes its subscription Φ to Φ' at t0, spurious events
        # are those matching Φ but not Φ' and received by the client after t0 and filtered out
        # locally". Each subscription's earlier values (the last _VERSIONS of them) are kept; an
        # event the local filter drops counts if one of them admits it. The core's `spurious`
        # counts every event the filter drops, also those only an update monitor's approximation
        # (wider than any value the subscription had) let through.
        self._before: dict[int, deque] = {}  # id(state) -> its values before each update, newest last
        self.spurious_updates = 0

    # -- API -----------------------------------------------------------------------------------------
    def subscribe(self, etype: EventType, guard: str | GuardPlan, params: Mapping[str, Any] | None = None,
                  on_event: Callable[[Event], Any] | None = None, rum: Any = None) -> "SimSubscription":
        """`rum`: an UpdateMonitor (or True / a dict of its knobs) for this subscription."""
        params = dict(params or {})
        plan = guard if isinstance(guard, GuardPlan) else compile_guard(
            guard, etype, {k: type(v) for k, v in params.items()})
        monitor = UpdateMonitor.of(rum)
        state = self._do(lambda core: core.subscribe(etype, plan, params, on_event, rum=monitor))
        return SimSubscription(self, state)

    def publish(self, etype: EventType, /, **attrs: Any) -> tuple[str, int]:
        """Publish now; returns the event's identity (origin, sequence number)."""
        try:
            values = etype.values_from(attrs)
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise  # from the caller's line (runtime/_boundary.py)
        return self.name, self._do(lambda core: core.publish(etype, values))

    def advertise(self, etype: EventType) -> None:
        self._do(lambda core: core.advertise(etype))

    def unadvertise(self, etype: EventType) -> None:
        """No more events of this type from here (a publisher leaving); `publish` advertises again."""
        self._do(lambda core: core.unadvertise(etype.name))

    def request_ack(self, budget: float) -> tuple:
        """Ask for a cascading acknowledgement of the changes sent so far; after `run()`,
        `core.acked[token]` is "" (every broker applied them) or the brokers that did not answer."""
        return self._do(lambda core: core.request_ack(budget))

    # -- plumbing --------------------------------------------------------------------------------------
    def _do(self, action: Callable[[ClientCore], Any]) -> Any:
        before = len(self.core.outbox)
        result = action(self.core)
        now = self.sim.now
        for _ in range(len(self.core.outbox) - before):
            self.times.append(now)
        if len(self.core.outbox) > before:
            self.sim._inbound[self.broker].ready[self.name] = self
            self.sim._offer(self.broker, self.name, now + self.delay)
        return result

    def _take(self) -> tuple[float, Any] | None:
        if not self.core.outbox:
            return None
        t = self.times.popleft()
        return t + self.delay, self.core.take(1)[0]

    def _head_time(self) -> float | None:
        return self.times[0] + self.delay if self.times else None

    def _receive(self, msg: Any) -> None:
        kind = type(msg)
        if kind is Flush:  # callbacks run inline: everything before the flush is delivered
            self._do(lambda core: core.flush_ack(msg.token))
            return
        if kind is FlushAck:
            self.sim._acked.add(msg.token)
            return
        now = self.sim.now
        for state, ev in self.core.receive(msg):
            if not self.core.deliver(state, ev):
                before = self._before.get(id(state))
                if before and not state.closed and any(state.plan.holds(ev.values, old, ev._meta[2])
                                                       for old in reversed(before)):
                    self.spurious_updates += 1
                continue
            origin, seq, t_pub = ev._meta
            self.latencies.append(now - t_pub)
            probes = self._open.get(id(state))
            if probes:
                keep = []
                for t0, old in probes:
                    if t_pub >= t0 and not state.plan.holds(ev.values, old, t_pub):
                        self.delays.append(now - t0)
                    else:
                        keep.append((t0, old))
                self._open[id(state)] = keep
            if state.on_event is not None:
                state.on_event(ev)

    def _updated(self, state: SubscriptionState, old: list) -> None:
        # Delay (000 §8.1 (a)): from this update to the first event that matches the new
        # subscription but not the old one. A later update supersedes the probe.
        self._open[id(state)] = [(self.sim.now, old)]
        self._before.setdefault(id(state), deque(maxlen=_VERSIONS)).append(old)


class SimSubscription:
    def __init__(self, client: SimClient, state: SubscriptionState) -> None:
        self.client = client
        self.state = state
        self._settle_at: float | None = None  # a pending check of the update monitor

    @property
    def params(self) -> dict:
        return {k: v for k, v in self.state.env.items() if k != SUBSCRIBED_AT}

    def update(self, **params: Any) -> None:
        old = self.state.values  # an update replaces the list, so this stays the old values
        changed = self.client._do(lambda core: core.update(self.state, params))
        if changed:
            self.client._updated(self.state, old)
        if self.state.monitor is not None:
            self._settle_later()

    def _settle_later(self) -> None:
        """Check again when the monitor's rate can have fallen below freq_approx (its `due`), or
        sooner if a check is already pending for an earlier time."""
        sim = self.client.sim
        due = self.client.core.settle_due(self.state)
        if due is None or (self._settle_at is not None and self._settle_at <= due):
            return
        at = self._settle_at = max(due, sim.now)
        sim.at(at, lambda: self._settle(at))

    def _settle(self, at: float) -> None:
        """Back to exact values once the updates calm down (000 Fig. 10 lines 37-44)."""
        if at != self._settle_at:  # superseded by an earlier check
            return
        self._settle_at = None
        self.client._do(lambda core: core.settle(self.state))
        self._settle_later()

    def close(self) -> None:
        self.client._do(lambda core: core.unsubscribe(self.state))


class Simulation:
    def __init__(self, topology: Topology, *, mode: str = "parametric", matcher: str = "fastint",
                 summary: str = "attribute", link_delay: float = 1e-3,
                 service: Callable[[Any, list, float], float] | None = None,
                 count_bytes: bool = False, evolve_horizon: float = 1.0, evolving_engine: str = "ves",
                 cache_ttl: float = DEFAULT_TTL) -> None:
        self.topology = topology
        self.mode = mode
        self.link_delay = link_delay
        self.service = service or CostModel()
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[[], None], bool]] = []  # (t, seq, action, background)
        self._background = 0  # how many of them are background actions
        self._seq = itertools.count()
        self.brokers: dict[str, Broker] = {
            b: Broker(b, mode=mode, matcher=matcher, summary=summary, clock=lambda: self.now,
                      overlay_clock=lambda: self.now, evolve_horizon=evolve_horizon,
                      evolving_engine=evolving_engine, cache_ttl=cache_ttl)
            for b in topology.brokers}
        self.silenced: set[str] = set()  # brokers whose output is lost (a hung process)
        self._ticks: dict[tuple[str, str], float] = {}  # (broker, "acks"|"evolve") -> next timer check
        self._inbound: dict[str, _Inbound] = {b: _Inbound() for b in topology.brokers}
        self.clients: dict[str, SimClient] = {}
        self.sent: Counter = Counter()  # (sending broker, kind) -> messages
        self.busy: Counter = Counter()  # broker -> service time spent, seconds
        self.busy_kind: Counter = Counter()  # (broker, message kind) -> service time spent, seconds
        self.sent_bytes: Counter | None = Counter() if count_bytes else None  # same keys, wire bytes
        self.client_bytes: Counter = Counter()  # kind -> wire bytes from brokers to clients
        self._acked: set[tuple] = set()
        for a, b in topology.links:
            self._emit(a, self.brokers[a].connect(b, "broker"))
            self._emit(b, self.brokers[b].connect(a, "broker"))

    # -- building --------------------------------------------------------------------------------------
    def client(self, name: str, broker: str, delay: float | None = None) -> SimClient:
        if name in self.clients or name in self.brokers:
            raise ValueError(f"node name {name!r} is taken")
        if broker not in self.brokers:
            raise ValueError(f"unknown broker {broker!r}")
        c = SimClient(self, name, broker, self.link_delay if delay is None else delay, self.mode)
        self.clients[name] = c
        self._emit(broker, self.brokers[broker].connect(name, "client"))
        return c

    # -- the clock ---------------------------------------------------------------------------------------
    def at(self, t: float, action: Callable[[], None], background: bool = False) -> None:
        """Run `action` at virtual time t. A background action (a periodic timer: the evolving
        subscriptions' summaries) runs in time order with the rest but keeps nothing alive: the
        simulation is quiescent when only background actions are left."""
        heapq.heappush(self._events, (max(t, self.now), next(self._seq), action, background))
        self._background += background

    def run(self, until: float | None = None, max_events: int = 50_000_000) -> float:
        """Process events in time order until none but background ones is left (quiescence) or
        `until`."""
        n = 0
        while len(self._events) > (0 if until is not None else self._background):
            t, _, action, background = self._events[0]
            if until is not None and t > until:
                self.now = until
                break
            heapq.heappop(self._events)
            self._background -= background
            self.now = t
            action()
            n += 1
            if n >= max_events:
                raise RuntimeError("simulation did not settle (event budget exhausted)")
        return self.now

    def drain(self) -> float:
        """The flush barrier of `eventpy.drain`, in virtual time: every client flushes, and the
        simulation runs until every flush is acknowledged (and hence everything before it done)."""
        tokens = [c._do(lambda core: core.flush()) for c in self.clients.values()]
        self.run()
        missing = [t for t in tokens if t not in self._acked]
        if missing:
            raise TimeoutError(f"flushes not acknowledged: {missing}")
        return self.now

    # -- brokers as single servers -----------------------------------------------------------------------
    def _offer(self, broker: str, link: Any, when: float) -> None:
        self.at(when, lambda: self._serve(broker))

    def _serve(self, broker: str) -> None:
        ib = self._inbound[broker]
        if ib.busy:
            return
        best: tuple[float, Any] | None = None
        for link, q in ib.queues.items():  # broker links
            if q and q[0][0] <= self.now and (best is None or q[0][0] < best[0]):
                best = (q[0][0], link)
        for c in ib.ready.values():
            t = c._head_time()
            if t is not None and t <= self.now and (best is None or t < best[0]):
                best = (t, c.name)
        if best is None:
            return
        link = best[1]
        if link in self.clients:
            client = self.clients[link]
            _, msg = client._take()
            if not client.core.outbox:
                del ib.ready[link]
            kind = type(msg).__name__
            self.sent[link, kind] += 1
            if self.sent_bytes is not None:
                self.sent_bytes[link, kind] += len(encode(msg))
        else:
            _, msg = ib.queues[link].popleft()
        started = time.thread_time()  # CPU time of this thread: another process's load does not count
        sends = self.brokers[broker].handle(link, msg)
        cpu = time.thread_time() - started
        ib.busy = True
        spent = self.service(msg, sends, cpu)
        self.busy[broker] += spent
        self.busy_kind[broker, type(msg).__name__] += spent
        done = self.now + spent

        def finish() -> None:
            ib.busy = False
            self._emit(broker, sends)
            if ib.tick_due:
                ib.tick_due = False
                self._emit(broker, self.brokers[broker].tick(self.now))
            self._schedule_tick(broker)
            self._serve(broker)

        self.at(done, finish)

    def silence(self, broker: str) -> None:
        """From now on `broker` keeps working but nothing it sends arrives (a hung process, as
        seen by its neighbours); used to test acknowledgement timeouts."""
        self.silenced.add(broker)

    def _schedule_tick(self, broker: str) -> None:
        """The broker's timers: acknowledgement budgets keep the simulation going; the periodic
        recomputation of evolving subscriptions' summaries runs in the background."""
        b = self.brokers[broker]
        for kind, due in (("acks", b.next_barrier_deadline()), ("evolve", b.next_evolution())):
            if due is None or self._ticks.get((broker, kind), float("inf")) <= due:
                continue
            self._ticks[broker, kind] = due

            def tick(kind: str = kind, due: float = due) -> None:
                if self._ticks.get((broker, kind)) == due:
                    del self._ticks[broker, kind]
                ib = self._inbound[broker]
                if ib.busy:  # after the message in service (_Inbound.tick_due)
                    ib.tick_due = True
                    return
                self._emit(broker, self.brokers[broker].tick(self.now))
                self._schedule_tick(broker)

            self.at(due, tick, background=kind == "evolve")

    def _emit(self, src: str, sends: list) -> None:
        if src in self.silenced:
            return
        sizes: dict[int, int] = {}  # a message sent to several targets is one object
        for target, msg in sends:
            kind = type(msg).__name__
            self.sent[src, kind] += 1
            if self.sent_bytes is not None:
                size = sizes.get(id(msg))
                if size is None:
                    size = sizes[id(msg)] = len(encode(msg))
                self.sent_bytes[src, kind] += size
                if target in self.clients:
                    self.client_bytes[kind] += size
            if target in self.brokers:
                when = self.now + self.link_delay
                self._inbound[target].queues.setdefault(src, deque()).append((when, msg))
                self.at(when, lambda t=target: self._serve(t))
            else:
                client = self.clients[target]
                self.at(self.now + client.delay, lambda c=client, m=msg: c._receive(m))

    # -- measurements -----------------------------------------------------------------------------------
    def subscription_messages(self) -> int:
        """SUB, UNSUB and UPD messages over every link: clients' and brokers'."""
        from_clients = sum(c.core.stats[k] for c in self.clients.values()
                           for k in ("sub_sent", "unsub_sent", "upd_sent"))
        messages = self.messages
        return from_clients + sum(messages[k] for k in ("Sub", "Unsub", "Upd"))

    @property
    def messages(self) -> Counter:
        """Messages the brokers sent, by kind, over every link."""
        out: Counter = Counter()
        for (src, kind), n in self.sent.items():
            if src in self.brokers:
                out[kind] += n
        return out

    def metrics(self) -> dict[str, Any]:
        delays = [d for c in self.clients.values() for d in c.delays]
        lat = sorted(x for c in self.clients.values() for x in c.latencies)
        stats: Counter = Counter()
        for c in self.clients.values():
            stats.update(c.core.stats)
        return {
            "sub_messages": self.subscription_messages(),
            "delay_mean": sum(delays) / len(delays) if delays else float("nan"),
            "delay_samples": len(delays),
            "latency_p50": nearest_rank(lat, 0.5),
            "latency_p99": nearest_rank(lat, 0.99),
            "spurious_updates": sum(c.spurious_updates for c in self.clients.values()),
            **{k: stats[k] for k in ("published", "delivered", "spurious", "sub_sent", "unsub_sent",
                                     "upd_sent", "upd_coalesced")},
        }
