"""Bounds whose ends are ints past the floats (math.floor of a huge float, times 10, or summed):
the brokers' versions and their rounding slack are floats, and converting such an int raised
OverflowError out of the broker. A SUB was refused as an internal error (its subscriber got
nothing), and on the broker's timer the error stopped the simulator (a TCP broker's timers).
The brokers now leave such a bound open, or take the float nearest past it."""

from __future__ import annotations

import math

import pytest

from _evolving_guards import oracle
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line
from eventpy.runtime.transports.inproc import Simulation

E = EventType("evo.Ev", x=float, n=int, s=str, b=bool)
HUGE = {"p0": 1e308, "p1": 1.0, "p2": 1.0}
EVENTS = [{"x": 1e308, "n": 3, "s": "a", "b": True}, {"x": -5.0, "n": -3, "s": "a", "b": True},
          {"x": -1e308, "n": 0, "s": "a", "b": True}, {"x": 0.5, "n": 1, "s": "a", "b": False}]


@pytest.mark.parametrize("guard", [
    "abs(x - math.floor(p0)) < p2",                        # an area of interest (no time)
    "abs(x - math.floor(p0) * 10) < p2",
    "x - math.floor(p0) + math.floor(p0) < p2",
    "x - math.floor(p0) + math.floor(p0) < elapsed()",     # a sum, evolving
    "abs(x - math.floor(p0)) < elapsed()",
    "x < math.floor(p0) * math.floor(elapsed() + 10)",     # its version's end past the floats
    "x > -math.floor(p0) * math.floor(elapsed() + 10)",
    "n < math.floor(p0) * math.floor(elapsed() + 10)",
])
@pytest.mark.parametrize("engine", ["ves", "lees"])
def test_a_bound_past_the_floats_is_not_refused_and_delivers_the_centralized_evaluation(guard, engine):
    sim = Simulation(line(2), evolving_engine=engine)
    pub = sim.client("pub", "b0")
    pub.advertise(E)
    sim.run()
    got = []
    subscribed = sim.now  # elapsed() counts from the call (the client's clock is the simulator's)
    sim.client("sub", "b1").subscribe(E, guard, dict(HUGE), on_event=lambda ev: got.append(ev.values))
    sim.run()
    want = []
    for _ in range(3):  # across the versions' recomputations (one horizon apart)
        for ev in EVENTS:
            pub.publish(E, **ev)
            values = tuple(ev[a] for a in E.attrs)
            if oracle(guard, values, HUGE, sim.now - subscribed):
                want.append(values)
        sim.run(until=sim.now + 1.5)
    sim.run()
    assert not any(b.stats["refused"] for b in sim.brokers.values()), {n: dict(b.stats) for n, b in sim.brokers.items()}
    assert got == want


@pytest.mark.parametrize("summary", ["attribute", "poset"])
@pytest.mark.parametrize("window", ["abs(x - p0) < p2", "abs(x - (p0 + elapsed())) < p2"])
def test_an_infinite_window_around_an_infinite_centre_does_not_hide_another_subscription(window, summary):
    # p0 and p2 both inf: abs(x - inf) < inf admits nothing, but the version's ends were inf - inf,
    # NaN; the attribute summary's LUB with another subscription of the same client kept the NaN,
    # and the brokers upstream dropped that subscription's events (x = 5 did not reach `x > 0`)
    sim = Simulation(line(3), summary=summary, count_bytes=True)
    pub = sim.client("pub", "b0")
    pub.advertise(E)
    sim.run()
    client = sim.client("sub", "b2")
    client.subscribe(E, window, {"p0": math.inf, "p2": math.inf}, on_event=lambda ev: None)
    sim.run()
    got = []
    client.subscribe(E, "x > 0 and x < 10", {}, on_event=lambda ev: got.append(ev.x))
    sim.run()
    pub.publish(E, x=5.0, n=0, s="a", b=True)
    sim.run()
    assert got == [5.0]
    for b in sim.brokers.values():
        for ts in b.types.values():
            for sent in ts.sent.values():
                ends = [end for f in sent.filters for c in f.values() for end in (getattr(c, "lo", 0), getattr(c, "hi", 0))]
                assert not any(math.isnan(end) for end in ends), sent.filters
