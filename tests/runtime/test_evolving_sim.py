"""The simulator's periodic timers (the summaries of evolving subscriptions, recomputed every
horizon) against the broker as a single server: a timer fires between two messages, as the event
loop of a broker process runs it, so what it sends follows what the message being served sent."""

from __future__ import annotations

import pytest

from eventpy.runtime.model import EventType
from eventpy.runtime.model._schema import INT_MAX
from eventpy.runtime.overlay import line
from eventpy.runtime.transports.inproc import Simulation

Q = EventType("evo.Pos", x=float)


def test_a_timer_firing_while_a_broker_serves_a_message_sends_after_that_message():
    # resub mode: every recomputation of the summary is a SUB of a fresh sid and an UNSUB of the
    # old one. The edge broker b2 starts serving the subscriber's resubscription at t = 1.0, and
    # the evolution timer is due while it is busy with it: had the timer's SUB 3 / UNSUB 2 left
    # before the served message's SUB 2 / UNSUB 1, b1 would refuse UNSUB 2 and keep SUB 2 forever
    sim = Simulation(line(3), mode="resub", link_delay=0.01)
    pub = sim.client("pub", "b0")
    pub.advertise(Q)
    sim.run()
    sub_client = sim.client("sub", "b2", delay=0.0)
    start = sim.now
    sub = sub_client.subscribe(Q, "x < elapsed() and x >= low", {"low": 0.0})
    sim.run(until=start + 1.0 - 1e-5)  # b2's timer is due at start + 1.0, in the next service
    sub.update(low=1.0)
    sim.run(until=start + 5.0)
    for name, broker in sim.brokers.items():
        assert broker.stats["refused"] == 0, name
    assert sim.brokers["b1"].subscription_count() == 1  # b2's summary, once
    assert sim.brokers["b0"].subscription_count() == 1


N = EventType("evo.Count", n=int)


@pytest.mark.parametrize("guard", ["n <= k * elapsed()", "n >= -k * elapsed()", "n < k + elapsed()",
                                   "abs(n - k * elapsed()) < 5 or n == 3", "n <= k"])
def test_an_int_bound_beyond_what_an_event_can_carry_still_travels(guard):
    # an int attribute's bounds are made integral (n <= 1e30 * t is n <= 10**30 * t, exactly):
    # beyond the 64 bits of the wire, the edge broker could not send the summary of an evolving
    # bound upstream, nor the client a parametric one, and the subscription never reached the
    # publisher. Every event's int is within [INT_MIN, INT_MAX] (checked at publication), so such
    # a bound is as good as infinite (or admits nothing); count_bytes encodes every message
    sim = Simulation(line(3), link_delay=0.01, count_bytes=True)
    pub = sim.client("pub", "b0")
    pub.advertise(N)
    sim.run()
    got = []
    sim.client("sub", "b2").subscribe(N, guard, {"k": 1e30}, on_event=lambda ev: got.append(ev.n))
    sim.run()
    for k in range(1, 4):
        sim.at(sim.now + 0.5 * k, lambda: pub.publish(N, n=3))
        sim.at(sim.now + 0.5 * k, lambda: pub.publish(N, n=INT_MAX))
    sim.run()
    want = {"n <= k * elapsed()": [3, INT_MAX] * 3, "n >= -k * elapsed()": [3, INT_MAX] * 3,
            "n < k + elapsed()": [3, INT_MAX] * 3, "abs(n - k * elapsed()) < 5 or n == 3": [3] * 3,
            "n <= k": [3, INT_MAX] * 3}[guard]
    assert got == want


@pytest.mark.parametrize("engine", ["ves", "lees", "clees"])
@pytest.mark.parametrize("horizon, lag", [(1.0, 0.3), (1.0, 3.0), (4.0, 3.0), (0.5, 7.0)])
def test_events_that_reach_the_publishers_broker_late_are_still_delivered(horizon, lag, engine):
    # the brokers between a publisher and the broker holding a moving window filter with its
    # version, which covers publication times from about a horizon ago: an event that reaches them
    # later than that went nowhere for a subscriber elsewhere (before: `far` got none of the 40 at
    # a lag of 3 s and a horizon of 1 s). Their summary is marked moving, so such an event now
    # travels to the broker holding the window, which checks it exactly: each gets all 40, once
    sim = Simulation(line(3), link_delay=0.01, evolve_horizon=horizon, evolving_engine=engine)
    pub = sim.client("pub", "b0", delay=lag)
    pub.advertise(Q)
    sim.run()
    far, near, other = [], [], []
    start = sim.now
    guard = "abs(x - 10 * elapsed()) < 1"
    sim.client("far", "b2", delay=0.0).subscribe(Q, guard, {}, on_event=lambda e: far.append(e.x))
    sim.client("near", "b0", delay=0.0).subscribe(Q, guard, {}, on_event=lambda e: near.append(e.x))
    # a window 50 s ahead, which no event is in: late ones reach its broker and are dropped
    # there (its version is above the others, so the summary it shares with `far` stays narrow)
    sim.client("other", "b2", delay=0.0).subscribe(Q, "abs(x - (o + 10 * elapsed())) < 1", {"o": 500.0},
                                                   on_event=lambda e: other.append(e.x))
    sim.run(until=start + 2.0)
    for i in range(40):
        t = start + 2.0 + 0.1 * i
        sim.at(t, lambda t=t: pub.publish(Q, x=10 * (t - start)))
    sim.run(until=start + 20.0 + lag)
    want = [10 * (0.1 * i + 2.0) for i in range(40)]
    assert near == pytest.approx(want)
    assert far == pytest.approx(want)
    assert other == []
    late = sim.brokers["b0"].stats["pub_late_forwarded"]
    assert (late > 0) == (lag > horizon / 2)  # on time, the versions filter as before


def test_a_summary_is_marked_moving_only_while_it_holds_an_evolving_subscription():
    sim = Simulation(line(2), link_delay=0.01, evolve_horizon=2.0)
    sim.client("pub", "b0").advertise(Q)
    sim.run()
    sub_client = sim.client("sub", "b1")
    fixed = sub_client.subscribe(Q, "x > 5", {}, on_event=lambda e: None)
    sim.run()
    b0 = sim.brokers["b0"]
    ts = b0.types[Q.name]
    assert ts.late_links == {}
    moving = sub_client.subscribe(Q, "x > elapsed()", {}, on_event=lambda e: None)
    sim.run()
    assert ts.late_links == {"b1": 2.0}
    moving.close()
    sim.run()
    assert ts.late_links == {} and ts.moving == {}
    fixed.close()
    sim.run()
    assert ts.subs == {}


@pytest.mark.parametrize("engine", ["ves", "lees", "clees"])
@pytest.mark.parametrize("skew", [-2.5, 2.5, 6.0])
def test_a_publisher_whose_clock_is_off_is_heard_at_every_broker_as_at_its_own(skew, engine):
    # the client stamps Pub.time with its own clock. Ahead by more than the versions' window
    # reaches (two horizons after it last moved), its events were dropped by the brokers on the way
    # (0 of 40 at a skew of 2.5 s), while the subscriber's own broker checked them exactly and
    # delivered all 40 from a publisher attached there: who heard the publisher depended on where
    # it was. Both get all 40 now (behind, they already did: the late events' path)
    got = {}
    for home in ("b0", "b3"):
        sim = Simulation(line(4), link_delay=0.005, evolving_engine=engine)
        pub = sim.client("pub", home)
        pub.advertise(Q)
        sim.run()
        pub.core.clock = lambda sim=sim: sim.now + skew
        got[home] = []
        start = sim.now
        sim.client("sub", "b3").subscribe(Q, "abs(x - elapsed()) < 0.5", {}, on_event=lambda e, h=home: got[h].append(e.x))
        sim.run(until=start + 0.5)
        for i in range(40):
            sim.at(start + 0.5 + 0.25 * i, lambda: pub.publish(Q, x=sim.now + skew - start))  # where the window is then
        sim.run()
        assert not any(b.stats["refused"] for b in sim.brokers.values())
    assert len(got["b3"]) == 40
    assert got["b0"] == got["b3"]
