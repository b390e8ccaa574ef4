"""A small parametric-vs-resub workload for the simulator (000 §8): one publisher at one edge of
the overlay, subscribers at another edge that keep moving a price window (`lo`, `hi`) at a given
rate per subscriber. Used by `eventpy demo` and by the tests."""

from __future__ import annotations

import random
from typing import Any

from .model import EventType
from .overlay import Topology
from .transports.inproc import Simulation

QUOTE = EventType("market.Quote", firm=str, price=float)
GUARD = "firm == f and price > lo and price < hi"


def moving_windows(mode: str, topology: Topology, *, subscribers: int = 200, rate: float = 50.0,
                   publish_rate: float = 2000.0, span: float = 0.4, seed: int = 7,
                   matcher: str = "fastint") -> dict[str, Any]:
    """Run the workload to quiescence; return `Simulation.metrics()` plus the run's settings."""
    rng = random.Random(seed)
    sim = Simulation(topology, mode=mode, matcher=matcher)
    edges = topology.edge_brokers()
    pub = sim.client("pub", edges[0])
    pub.advertise(QUOTE)
    subs = []
    for i in range(subscribers):
        lo = rng.uniform(0, 90)
        client = sim.client(f"s{i}", edges[-1])
        subs.append(client.subscribe(QUOTE, GUARD, {"f": rng.choice("ABCD"), "lo": lo, "hi": lo + 10}))
    sim.run()
    t0 = t = sim.now
    while (t := t + rng.expovariate(publish_rate)) < t0 + span:
        firm, price = rng.choice("ABCD"), rng.uniform(0, 100)
        sim.at(t, lambda f=firm, p=price: pub.publish(QUOTE, firm=f, price=p))
    for s in subs:
        t = t0
        while (t := t + rng.expovariate(rate)) < t0 + span:
            lo = rng.uniform(0, 90)
            sim.at(t, lambda s=s, lo=lo: s.update(lo=lo, hi=lo + 10))
    sim.run()
    return {"mode": mode, "topology": topology.name, "subscribers": subscribers, "rate": rate,
            **sim.metrics()}
