"""Brokers' state converges, and nothing is left behind (paper 000 Fig. 6, §5).

A stateful hypothesis test drives the deterministic simulator (line, star, tree and random
acyclic topologies; parametric and resub; every matcher and summary) with random advertisements,
subscriptions, updates (static, parametric, sets, generated expressions, attribute expressions,
switches), publications, client disconnects and reconnects, broker link failures and broker
restarts. After every step, once the simulation is quiescent, each broker's state must be what a
broker built from scratch from the live subscriptions holds (_tables.check_converged); at the end,
once every client has closed, unadvertised or gone, every broker's tables must be empty
(_tables.leftovers). A bad peer sends control messages again or out of order (stale UPDs, a second
UNSUB, ADV or UNADV, a broker's SUB or UPD repeated): each is refused or ignored, and the state
still converges.
"""

from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker, _adverts
from eventpy.runtime.matching import AdaptiveMatcher, make_matcher
from eventpy.runtime.broker._upstream import _spec_of
from eventpy.runtime.messages import Adv, Sub, Unadv, Unsub, Upd
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line, random_tree, star, tree
from eventpy.runtime.transports.inproc import Simulation

from _tables import check_converged, leftovers, random_event

Q = EventType("cv.Quote", firm=str, price=float, vol=int)
F = EventType("cv.Flag", on=bool, n=int)
FIRMS = ["IBM", "HP", "ORCL"]
PRICES = [-2.0, -0.5, 0.0, 0.5, 1.0, 2.5, 3.0, 7.0]
# (type, guard, parameter -> its possible values): static, parametric, sets, generated
# expressions over parameters, attribute expressions and switches
GUARDS = [
    (Q, "firm == f and price < limit", {"f": FIRMS, "limit": PRICES}),
    (Q, "price >= lo and price <= hi or vol > v", {"lo": PRICES, "hi": PRICES, "v": [0, 2, 5]}),
    (Q, "firm in watch and vol < cap", {"watch": [frozenset(), frozenset({"IBM"}), frozenset({"HP", "ORCL"}),
                                                  frozenset(FIRMS)], "cap": [0, 3, 9]}),
    (Q, "price < limit * 2 + k and firm != 'HP'", {"limit": PRICES, "k": PRICES}),
    (Q, "price * 2 > vol + k", {"k": PRICES}),
    (Q, "on and price < limit or firm != f", {"on": [True, False], "limit": PRICES, "f": FIRMS}),
    (Q, "vol > 2 and price < 3.0", {}),
    (F, "on == b and n >= lo", {"b": [True, False], "lo": [0, 1, 4]}),
    (F, "s and n < hi", {"s": [True, False], "hi": [-1, 2, 9]}),
    # attribute expressions that bound one attribute over parameters (areas of interest): indexed
    # and summarized through versions, a parameter's UPD moving only the bounds that read it
    (Q, "abs(price - c) < w and firm == f", {"c": PRICES, "w": [0.5, 1.0, 3.0], "f": FIRMS}),
    (Q, "price - k <= limit or abs(n - vol) <= w", {"k": PRICES, "limit": PRICES, "n": [0, 2, 5], "w": [0, 1, 3]}),
]
PLANS = [compile_guard(text, etype, {k: type(vs[0]) for k, vs in params.items()})
         for etype, text, params in GUARDS]
TOPOLOGIES = {"line": lambda: line(3), "star": lambda: star(4), "tree": lambda: tree(5),
              "random": lambda: random_tree(5, seed=3)}

# EVENTPY_FUZZ=N runs N random examples (a bug hunt); by default a fixed, derandomized few, fast
# and stable in CI
_RUNS = int(os.environ.get("EVENTPY_FUZZ", "0"))
CONVERGE = settings(max_examples=_RUNS or 20, stateful_step_count=30, deadline=None, derandomize=not _RUNS,
                    database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def params_of(g: int, draw_from: random.Random) -> dict:
    return {k: draw_from.choice(vs) for k, vs in GUARDS[g][2].items()}


class Overlay(RuleBasedStateMachine):
    """The simulator, its clients (live and gone) and their open subscriptions."""

    def __init__(self) -> None:
        super().__init__()
        self.sim: Simulation | None = None
        self.gone: dict[str, object] = {}  # disconnected clients (SimClient), to reconnect
        self.subs: list = []  # (client name, SimSubscription)
        self.failed: set[tuple[str, str]] = set()  # broker links down
        self.rng = random.Random(0)
        self.n = 0

    @initialize(topology=st.sampled_from(sorted(TOPOLOGIES)), mode=st.sampled_from(["parametric", "resub"]),
                matcher=st.sampled_from(["fastint", "fastint-index", "poset", "naive"]), summary=st.sampled_from(["attribute", "poset"]),
                seed=st.integers(0, 2**16))
    def start(self, topology, mode, matcher, summary, seed):
        if matcher == "fastint-index":  # the FASTINT index itself, not the scan it starts with
            _adverts.make_matcher = lambda name, etype: AdaptiveMatcher(etype, up=2, down=1)
            matcher = "fastint"
        self.sim = Simulation(TOPOLOGIES[topology](), mode=mode, matcher=matcher, summary=summary,
                              link_delay=0.001)
        self.rng.seed(seed)
        self.config = dict(mode=mode, matcher=matcher, summary=summary)
        # a publisher of each type and a few subscribers, spread over the brokers, so that from
        # the first steps on summaries travel and the updates move them
        brokers = sorted(self.sim.brokers)
        for etype in (Q, F):
            self.n += 1
            self.sim.client(f"c{self.n}", self.rng.choice(brokers)).advertise(etype)
        for _ in range(3):
            self.n += 1
            c = self.sim.client(f"c{self.n}", self.rng.choice(brokers))
            for _ in range(2):
                g = self.rng.randrange(len(GUARDS))
                self.subs.append((c.name, g, c.subscribe(GUARDS[g][0], PLANS[g], params_of(g, self.rng))))

    # -- clients -----------------------------------------------------------------------------------
    @rule(data=st.data())
    def attach(self, data):
        broker = data.draw(st.sampled_from(sorted(self.sim.brokers)))
        self.n += 1
        self.sim.client(f"c{self.n}", broker)

    def _live(self, data):
        return self.sim.clients[data.draw(st.sampled_from(sorted(self.sim.clients)))]

    @precondition(lambda self: self.sim.clients)
    @rule(data=st.data(), etype=st.sampled_from([Q, F]))
    def advertise(self, data, etype):
        self._live(data).advertise(etype)

    @precondition(lambda self: self.sim.clients)
    @rule(data=st.data(), etype=st.sampled_from([Q, F]))
    def unadvertise(self, data, etype):
        self._live(data).unadvertise(etype)

    @precondition(lambda self: self.sim.clients)
    @rule(data=st.data(), g=st.integers(0, len(GUARDS) - 1))
    def subscribe(self, data, g):
        c = self._live(data)
        sub = c.subscribe(GUARDS[g][0], PLANS[g], params_of(g, self.rng))
        self.subs.append((c.name, g, sub))

    def _open(self):
        return [(i, s) for i, s in enumerate(self.subs) if s[0] in self.sim.clients and not s[2].state.closed]

    @precondition(lambda self: self._open())
    @rule(data=st.data())
    def update(self, data):
        _, (_, g, sub) = data.draw(st.sampled_from(self._open()))
        changes = params_of(g, self.rng)
        if changes:
            some = dict(self.rng.sample(sorted(changes.items()), self.rng.randint(1, len(changes))))
            sub.update(**some)

    @precondition(lambda self: self._open())
    @rule(data=st.data())
    def close(self, data):
        _, (_, _, sub) = data.draw(st.sampled_from(self._open()))
        sub.close()

    @precondition(lambda self: self.sim.clients)
    @rule(data=st.data(), etype=st.sampled_from([Q, F]))
    def publish(self, data, etype):
        c = self._live(data)
        c.publish(etype, **dict(zip(etype.attrs, random_event(etype, self.rng))))

    # -- faults (at quiescence: the simulator keeps nothing in flight for a dropped link) ------------
    @precondition(lambda self: self.sim.clients)
    @rule(data=st.data())
    def disconnect(self, data):
        c = self._live(data)
        self.sim.run()
        del self.sim.clients[c.name]
        self.sim._inbound[c.broker].ready.pop(c.name, None)
        c.core.outbox.clear()
        c.times.clear()
        self.sim._emit(c.broker, self.sim.brokers[c.broker].disconnect(c.name))
        self.gone[c.name] = c

    @precondition(lambda self: self.gone)
    @rule(data=st.data())
    def reconnect(self, data):
        name = data.draw(st.sampled_from(sorted(self.gone)))
        c = self.gone.pop(name)
        self.sim.clients[name] = c
        self.sim._emit(c.broker, self.sim.brokers[c.broker].connect(name, "client"))
        c._do(lambda core: core.resync())

    @precondition(lambda self: self.sim.topology.links)
    @rule(data=st.data())
    def link_fails(self, data):
        a, b = data.draw(st.sampled_from(sorted(self.sim.topology.links)))
        if (a, b) in self.failed:
            return
        self.sim.run()
        self.failed.add((a, b))
        self.sim._emit(a, self.sim.brokers[a].disconnect(b))
        self.sim._emit(b, self.sim.brokers[b].disconnect(a))

    @precondition(lambda self: self.failed)
    @rule(data=st.data())
    def link_back(self, data):
        a, b = data.draw(st.sampled_from(sorted(self.failed)))
        self.sim.run()
        self.failed.discard((a, b))
        self.sim._emit(a, self.sim.brokers[a].connect(b, "broker"))
        self.sim._emit(b, self.sim.brokers[b].connect(a, "broker"))

    @rule(data=st.data())
    def restart(self, data):
        """A broker process dies and comes back empty: its neighbours lose and regain the link,
        its clients reconnect and resync."""
        sim = self.sim
        name = data.draw(st.sampled_from(sorted(sim.brokers)))
        sim.run()
        old = sim.brokers[name]
        sim.brokers[name] = Broker(name, clock=old.clock, overlay_clock=old.evolving.overlay_clock, **self.config)
        for peer in sim.topology.neighbors(name) if hasattr(sim.topology, "neighbors") else _neighbors(sim, name):
            if (name, peer) in self.failed or (peer, name) in self.failed:
                continue
            sim._emit(peer, sim.brokers[peer].disconnect(name))
            sim._emit(peer, sim.brokers[peer].connect(name, "broker"))
            sim._emit(name, sim.brokers[name].connect(peer, "broker"))
        for c in list(sim.clients.values()):
            if c.broker == name:
                sim._emit(name, sim.brokers[name].connect(c.name, "client"))
                c._do(lambda core: core.resync())

    # -- a bad peer: duplicated and reordered control messages (each refused or ignored) ------------
    def _inject(self, broker: str, link: str, msg) -> None:
        self.sim.run()
        self.sim._emit(broker, self.sim.brokers[broker].handle(link, msg))

    @precondition(lambda self: self._open())
    @rule(data=st.data(), back=st.integers(0, 2))
    def stale_update(self, data, back):
        """An UPD overtaken by a later one (or sent twice) arrives: dropped as stale."""
        _, (cname, g, sub) = data.draw(st.sampled_from(self._open()))
        c, state = self.sim.clients[cname], sub.state
        self.sim.run()
        held = self.sim.brokers[c.broker].types[state.etype.name].subs[(cname, state.sid)]
        if not held.values:
            return
        var = data.draw(st.integers(0, len(held.values) - 1))
        value = PLANS[g].evaluate(params_of(g, self.rng))[var]  # another value of the variable
        self._inject(c.broker, cname, Upd(state.etype.name, state.sid, {var: (value, max(held.seqs[var] - back, 0))}))

    @precondition(lambda self: any(s[0] in self.sim.clients and s[2].state.closed for s in self.subs))
    @rule(data=st.data())
    def unsubscribe_twice(self, data):
        cname, _, sub = data.draw(st.sampled_from(
            [s for s in self.subs if s[0] in self.sim.clients and s[2].state.closed]))
        self._inject(self.sim.clients[cname].broker, cname, Unsub(sub.state.etype.name, sub.state.sid))

    @precondition(lambda self: self.sim.clients)
    @rule(data=st.data(), etype=st.sampled_from([Q, F]))
    def advertisement_twice(self, data, etype):
        c = self._live(data)
        msg = Adv(etype.name, etype.to_wire()) if etype.name in c.core.advertised else Unadv(etype.name)
        self._inject(c.broker, c.name, msg)

    @rule(data=st.data(), sub_too=st.booleans())
    def broker_says_it_again(self, data, sub_too):
        """A broker's last SUB or UPD upstream arrives again, with what it holds now."""
        self.sim.run()
        sent = [(b, etype, link, s) for b, broker in self.sim.brokers.items() for etype, ts in broker.types.items()
                for link, s in ts.sent.items()]
        if not sent:
            return
        b, etype, link, s = data.draw(st.sampled_from(sorted(sent, key=lambda x: x[:3])))
        if sub_too:
            spec, values = _spec_of(s.filters)
            msg = Sub(etype, s.sid, spec, values)
        else:
            flat = [f[a] for f in s.filters for a in sorted(f)]
            msg = Upd(etype, s.sid, {var: (flat[var], s.seqs[var]) for var in range(len(flat))})
        self._inject(link, b, msg)

    # -- what must hold ----------------------------------------------------------------------------
    @invariant()
    def converged(self):
        if self.sim is None:
            return
        self.sim.run()
        check_converged(self.sim.brokers, self.sim.clients, self.rng)

    def teardown(self):
        _adverts.make_matcher = make_matcher
        if self.sim is None:
            return
        sim = self.sim
        for name in sorted(self.gone):  # some come back and leave properly, the rest stay gone
            if self.rng.random() < 0.5:
                self.reconnect_named(name)
        for c in list(sim.clients.values()):
            if self.rng.random() < 0.5:
                for etype in (Q, F):
                    c.unadvertise(etype)
                for _, _, sub in self.subs:
                    if sub.client is c:
                        sub.close()
            sim.run()
            del sim.clients[c.name]
            sim._inbound[c.broker].ready.pop(c.name, None)
            sim._emit(c.broker, sim.brokers[c.broker].disconnect(c.name))
        sim.run()
        for name, b in sim.brokers.items():
            assert leftovers(b, b.broker_links) == {}, name

    def reconnect_named(self, name):
        c = self.gone.pop(name)
        self.sim.clients[name] = c
        self.sim._emit(c.broker, self.sim.brokers[c.broker].connect(name, "client"))
        c._do(lambda core: core.resync())
        self.sim.run()


def _neighbors(sim, name):
    return sorted({b for a, b in sim.topology.links if a == name} | {a for a, b in sim.topology.links if b == name})


Overlay.TestCase.settings = CONVERGE
TestConvergence = Overlay.TestCase
