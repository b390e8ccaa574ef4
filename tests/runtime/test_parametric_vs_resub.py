"""000 §8 in the simulator: with subscribers updating at high rates, parametric subscriptions send
at most 55% of the subscription messages of re-subscription, and their update delay (000 §8.1 (a))
is lower. Deterministic: virtual time, the default cost model, fixed seeds."""

from __future__ import annotations

import random

import pytest

from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line, tree
from eventpy.runtime.transports.inproc import Simulation

Q = EventType("market.Quote", firm=str, price=float)


def run(mode: str, topology, subscribers: int, rate: float, seed: int = 7, span: float = 0.4) -> dict:
    rng = random.Random(seed)
    sim = Simulation(topology, mode=mode)
    edges = topology.edge_brokers()
    pub = sim.client("pub", edges[0])
    pub.advertise(Q)
    subs = []
    for i in range(subscribers):
        lo = rng.uniform(0, 90)
        client = sim.client(f"s{i}", edges[-1])
        subs.append(client.subscribe(Q, "firm == f and price > lo and price < hi",
                                     {"f": rng.choice("ABCD"), "lo": lo, "hi": lo + 10}))
    sim.run()
    t0 = sim.now
    t = t0
    while t < t0 + span:
        t += rng.expovariate(2000.0)
        firm, price = rng.choice("ABCD"), rng.uniform(0, 100)
        sim.at(t, lambda f=firm, p=price: pub.publish(Q, firm=f, price=p))
    for s in subs:
        t = t0
        while (t := t + rng.expovariate(rate)) < t0 + span:
            lo = rng.uniform(0, 90)
            sim.at(t, lambda s=s, lo=lo: s.update(lo=lo, hi=lo + 10))
    sim.run()
    return sim.metrics()


@pytest.mark.parametrize("topology", [line(3), tree(7)], ids=["line", "tree"])
def test_parametric_halves_messages_and_lowers_delay(topology):
    p = run("parametric", topology, subscribers=200, rate=50.0)
    r = run("resub", topology, subscribers=200, rate=50.0)
    assert p["sub_messages"] <= 0.55 * r["sub_messages"], (p["sub_messages"], r["sub_messages"])
    assert p["delay_samples"] > 100 and r["delay_samples"] > 100
    assert p["delay_mean"] < r["delay_mean"], (p["delay_mean"], r["delay_mean"])


def test_light_load_still_halves_messages():
    p = run("parametric", line(3), subscribers=40, rate=10.0)
    r = run("resub", line(3), subscribers=40, rate=10.0)
    assert p["sub_messages"] <= 0.55 * r["sub_messages"]
    assert p["delay_mean"] <= r["delay_mean"]
