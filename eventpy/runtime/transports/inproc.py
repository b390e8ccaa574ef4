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
import itertools
import math
import time
from collections import Counter, deque
from typing import Any, Callable, Mapping

from .._boundary import callers_mistake
from ..broker import DEFAULT_TTL, Broker
from ..messages import Sub, Unsub, Upd
from ..overlay import Topology
from ..wire import encode
from ._service import CostModel, Recorder, Service, measured, nearest_rank
from ._sim_config import (ServiceTimeError, check_connected, check_delay, checked_service_time, known_brokers,
                          link_delay_table, service_table)
from ._simclient import SimClient, SimSubscription

SUBSCRIPTION_MESSAGES = (Sub, Unsub, Upd)
__all__ = ["CostModel", "Recorder", "SimClient", "SimSubscription", "Simulation", "measured", "nearest_rank"]


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


class Simulation:
    def __init__(self, topology: Topology, *, mode: str = "parametric", matcher: str = "fastint",
                 summary: str = "attribute", link_delay: float = 1e-3,
                 service: Service | Mapping[str, Service] | None = None,
                 count_bytes: bool = False, evolve_horizon: float = 1.0, evolving_engine: str = "ves",
                 cache_ttl: float = DEFAULT_TTL,
                 link_delays: Mapping[tuple[str, str], float] | None = None) -> None:
        """`link_delay`: seconds a message takes over a link (broker-broker, and broker-client
        unless `client(delay=...)` says otherwise); `link_delays`: {(a, b): seconds} for the
        broker links that differ (either order names the link). `service`: the time a broker
        spends on a message, `service(msg, sends, cpu) -> seconds` (CostModel() by default,
        `measured`, a Recorder), or {broker: such a callable} for brokers that differ (the others
        get CostModel()). The brokers must form one tree: a part not linked to the rest would be
        an overlay of its own, and no event could cross to it."""
        try:
            check_connected(topology)
            self.link_delay = check_delay("link_delay", link_delay)
            self._delays = link_delay_table(topology, link_delays)  # (from, to) -> seconds, where not link_delay
            # the service of brokers `service` does not name, and broker -> its own
            self.service, self._service = service_table(topology, service)
            self.brokers: dict[str, Broker] = {
                b: Broker(b, mode=mode, matcher=matcher, summary=summary, clock=lambda: self.now,
                          overlay_clock=lambda: self.now, evolve_horizon=evolve_horizon,
                          evolving_engine=evolving_engine, cache_ttl=cache_ttl)
                for b in topology.brokers}
        except (TypeError, ValueError) as e:  # the researcher's configuration: said at their line
            callers_mistake(e)
            raise
        self.topology = topology
        self.mode = mode
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[[], None], bool]] = []  # (t, seq, action, background)
        self._background = 0  # how many of them are background actions
        self._seq = itertools.count()
        self.silenced: set[str] = set()  # brokers whose output is lost (a hung process)
        self._ticks: dict[tuple[str, str], float] = {}  # (broker, "acks"|"evolve") -> next timer check
        self._inbound: dict[str, _Inbound] = {b: _Inbound() for b in topology.brokers}
        self.clients: dict[str, SimClient] = {}
        self._plans: dict = {}  # compiled guards by (text, type, parameter types): one compile each
        # (sender, kind) -> messages: the sender is a broker, or a client (what its broker took from
        # it); `messages` sums the brokers' only
        self.sent: Counter = Counter()
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
        """Attach a client named `name` (unique among clients and brokers) to `broker`; `delay`:
        seconds over its link, `link_delay` if None."""
        try:
            if name in self.clients:
                raise ValueError(f"a client named {name!r} is already attached (to broker "
                                 f"{self.clients[name].broker!r}); each client needs a name of its own")
            if name in self.brokers:
                raise ValueError(f"{name!r} names a broker; a client needs a name of its own")
            if broker not in self.brokers:
                raise ValueError(f"unknown broker {broker!r}; the brokers are {known_brokers(self.topology)}")
            delay = self.link_delay if delay is None else check_delay("the client's delay", delay)
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise
        c = SimClient(self, name, broker, delay, self.mode)
        self.clients[name] = c
        self._emit(broker, self.brokers[broker].connect(name, "client"))
        return c

    # -- the clock ---------------------------------------------------------------------------------------
    def at(self, t: float, action: Callable[[], None], background: bool = False) -> None:
        """Run `action()` at virtual time t (a time already past: now). A background action (a
        periodic timer: the evolving subscriptions' summaries) runs in time order with the rest but
        keeps nothing alive: the simulation is quiescent when only background actions are left."""
        try:
            if not callable(action):  # `sim.at(t, pub.publish(...))` publishes now and schedules None
                raise TypeError(f"at() runs a callable at time t, such as lambda: pub.publish(...), "
                                f"not {type(action).__name__} {action!r}")
            if isinstance(t, bool) or not isinstance(t, (int, float)):
                raise TypeError(f"at() takes a time in seconds, not {type(t).__name__} {t!r}")
            if not t < math.inf:  # (also NaN) the heap would never reach it, or lose its order
                raise ValueError(f"an action must be scheduled at a finite time, not {t!r}")
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise
        self._at(t, action, background)

    def _at(self, t: float, action: Callable[[], None], background: bool = False) -> None:
        """`at` for the simulator's own actions, whose times are finite by construction."""
        heapq.heappush(self._events, (max(t, self.now), next(self._seq), action, background))
        self._background += background

    def run(self, until: float | None = None, max_events: int = 50_000_000) -> float:
        """Process events in time order until none but background ones is left (quiescence) or
        `until`."""
        n = 0
        try:
            while len(self._events) > (0 if until is not None else self._background):
                t, _, action, background = self._events[0]
                if until is not None and t > until:
                    self.now = max(self.now, until)  # the clock never runs backwards
                    break
                heapq.heappop(self._events)
                self._background -= background
                self.now = t
                action()
                n += 1
                if n >= max_events:
                    raise RuntimeError("simulation did not settle (event budget exhausted)")
        except ServiceTimeError as e:  # the caller's service model: said at the run() it called
            callers_mistake(e)
            raise
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
        self._at(when, lambda: self._serve(broker))

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
        spent = self._service.get(broker, self.service)(msg, sends, cpu)
        if not (type(spent) is float or type(spent) is int) or not 0 <= spent < math.inf:
            spent = checked_service_time(broker, msg, spent)
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

        self._at(done, finish)

    def silence(self, broker: str) -> None:
        """From now on `broker` keeps working but nothing it sends arrives (a hung process, as
        seen by its neighbours); used to test acknowledgement timeouts."""
        if broker not in self.brokers:
            raise ValueError(f"unknown broker {broker!r}; the brokers are {known_brokers(self.topology)}")
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

            self._at(due, tick, background=kind == "evolve")

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
                when = self.now + self._delays.get((src, target), self.link_delay)
                self._inbound[target].queues.setdefault(src, deque()).append((when, msg))
                self._at(when, lambda t=target: self._serve(t))
            else:
                client = self.clients[target]
                self._at(self.now + client.delay, lambda c=client, m=msg: c._receive(m))

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
