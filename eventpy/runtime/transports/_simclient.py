"""A client node of the simulator (eventpy.runtime.transports.inproc): the same ClientCore as
everywhere else, its outbox drained by the simulated broker, its callbacks run inline on the
virtual clock, and the update delays and spurious events of 000 §8.1 measured as they happen."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...guards import SUBSCRIBED_AT, GuardPlan
from .._async_callbacks import returned_awaitable
from .._boundary import callers_mistake
from .._sub_args import checked_subscription, checked_update, event_type_of, param_kinds
from ..client import ClientCore, SubscriptionState, UpdateMonitor
from ..messages import Flush, FlushAck
from ..model import Event, EventType

if TYPE_CHECKING:
    from .inproc import Simulation

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
        """`rum`: an UpdateMonitor (or True / a dict of its knobs) for this subscription. The
        arguments are checked as `eventpy.Node.subscribe` checks them; `guard` may also be a
        GuardPlan already compiled (the replay compiles each distinct guard once)."""
        try:
            etype = event_type_of(etype, "subscribe")
            env, plan = checked_subscription(etype, guard, params, on_event, self.sim._plans)
            monitor = UpdateMonitor.of(rum)
        except (TypeError, ValueError) as e:  # GuardError is a ValueError
            callers_mistake(e)
            raise  # from the caller's line (runtime/_boundary.py)
        state = self._do(lambda core: core.subscribe(etype, plan, env, on_event, rum=monitor))
        return SimSubscription(self, state)

    def publish(self, etype: EventType, /, **attrs: Any) -> tuple[str, int]:
        """Publish now; returns the event's identity (origin, sequence number)."""
        try:
            etype = event_type_of(etype, "publish")
            values = etype.values_from(attrs)
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise  # from the caller's line (runtime/_boundary.py)
        return self.name, self._do(lambda core: core.publish(etype, values))

    def advertise(self, etype: EventType) -> None:
        etype = event_type_of(etype, "advertise")
        self._do(lambda core: core.advertise(etype))

    def unadvertise(self, etype: EventType) -> None:
        """No more events of this type from here (a publisher leaving); `publish` advertises again."""
        name = event_type_of(etype, "unadvertise").name
        self._do(lambda core: core.unadvertise(name))

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
                result = state.on_event(ev)
                if result is not None:  # a coroutine nothing awaits: logged, not a silent loss
                    returned_awaitable(state.on_event, ev, result)

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
        self._kinds = param_kinds(state.env)  # a parameter keeps its kind (as in eventpy.Subscription)

    @property
    def params(self) -> dict:
        return {k: v for k, v in self.state.env.items() if k != SUBSCRIBED_AT}

    def update(self, **params: Any) -> None:
        """Change parameters, checked as `eventpy.Subscription.update` checks them."""
        try:
            if self.state.closed:
                raise RuntimeError("the subscription is closed: it takes no more updates")
            params = checked_update(self.state.plan, self._kinds, params)
        except (TypeError, ValueError, RuntimeError) as e:
            callers_mistake(e)
            raise  # from the caller's line (runtime/_boundary.py)
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
        sim._at(at, lambda: self._settle(at))

    def _settle(self, at: float) -> None:
        """Back to exact values once the updates calm down (000 Fig. 10 lines 37-44)."""
        if at != self._settle_at:  # superseded by an earlier check
            return
        self._settle_at = None
        self.client._do(lambda core: core.settle(self.state))
        self._settle_later()

    def close(self) -> None:
        self.client._do(lambda core: core.unsubscribe(self.state))
