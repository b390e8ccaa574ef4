"""A Simulation's configuration: per-link delays and per-broker service times do what they say,
and a mistake in a topology, a delay or a service model is refused in one line, from the
researcher's own line, before anything runs."""

from __future__ import annotations

import math
import traceback

import pytest

from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import Topology, TopologyError, line, make_topology, star, tree
from eventpy.runtime.transports.inproc import CostModel, Simulation

Q = EventType("lab.Quote", price=float)
FREE = CostModel(pub=0.0, per_forward=0.0, sub=0.0, unsub=0.0, upd=0.0, other=0.0)  # no service time


def latency_over(sim: Simulation, pub_at: str, sub_at: str) -> float:
    pub = sim.client("pub", pub_at, delay=0.0)
    pub.advertise(Q)
    seen = []
    sim.client("sub", sub_at, delay=0.0).subscribe(Q, "price > 0", on_event=lambda ev: seen.append(sim.now - ev._meta[2]))
    sim.run()
    pub.publish(Q, price=1.0)
    sim.run()
    assert len(seen) == 1
    return seen[0]


def test_each_broker_link_takes_its_own_delay_in_either_order():
    sim = Simulation(line(3), link_delay=0.001, service=FREE, link_delays={("b1", "b0"): 0.010})
    assert latency_over(sim, "b0", "b2") == pytest.approx(0.011)


def test_each_broker_spends_its_own_service_time():
    slow = CostModel(pub=0.005, per_forward=0.0)
    sim = Simulation(line(3), link_delay=0.001, service={"b0": FREE, "b1": slow, "b2": FREE})
    assert latency_over(sim, "b0", "b2") == pytest.approx(0.002 + 0.005)
    # the PUB, the SUB b2 forwards and the publisher's ADV (the subscriber's schema stays at b2)
    assert sim.busy["b1"] == pytest.approx(0.005 + slow.sub + slow.other)
    assert sim.busy["b0"] == 0.0


def test_brokers_a_service_mapping_does_not_name_get_the_default_cost_model():
    sim = Simulation(line(2), link_delay=0.001, service={"b0": FREE})
    latency_over(sim, "b0", "b1")
    assert sim.busy["b0"] == 0.0 and sim.busy["b1"] > 0.0


def raised_here(info: pytest.ExceptionInfo) -> bool:
    return traceback.extract_tb(info.value.__traceback__)[-1].filename == __file__


@pytest.mark.parametrize("make, error, message", [
    (lambda: Simulation(Topology(("a", "b", "c"), (("a", "b"),))), TopologyError, "broker 'c' is not linked to 'a'"),
    (lambda: Simulation(line), TypeError, "a Simulation runs on a Topology"),
    (lambda: Simulation(line(2), link_delay=-0.001), ValueError, "link_delay must be a finite number of seconds >= 0"),
    (lambda: Simulation(line(2), link_delay=math.nan), ValueError, "link_delay must be a finite number"),
    (lambda: Simulation(line(2), link_delay="1ms"), TypeError, "link_delay is a number of seconds, not str"),
    (lambda: Simulation(line(3), link_delays={("b0", "b2"): 0.1}), ValueError, "not a link of the topology"),
    (lambda: Simulation(line(2), link_delays={("b0", "b1"): -1}), ValueError, "must be a finite number"),
    (lambda: Simulation(line(2), service=0.001), TypeError, "service is a callable service\\(msg, sends, cpu\\)"),
    (lambda: Simulation(line(2), service={"b9": CostModel()}), ValueError, "service names unknown broker 'b9'"),
    (lambda: Simulation(line(2), service={"b0": "fast"}), TypeError, "service\\['b0'\\] is a callable"),
    (lambda: Simulation(line(2)).client("c", "b7"), ValueError, "unknown broker 'b7'; the brokers are b0, b1"),
    (lambda: Simulation(line(2)).client("c", "b0", delay=-1.0), ValueError, "the client's delay must be"),
    (lambda: Simulation(line(2)).client("b1", "b0"), ValueError, "'b1' names a broker"),
    (lambda: Simulation(line(2), evolve_horizon="1"), ValueError, "the evolution horizon must be above 0 s, not '1'"),
    (lambda: Topology("ab", ()), TopologyError, "brokers is a sequence of broker names"),
    (lambda: Topology((), ()), TopologyError, "at least one broker"),
    (lambda: Topology(("a", "b"), (("a", "b", "c"),)), TopologyError, "a link names two brokers"),
    (lambda: tree(5, fanout=0), TopologyError, "fanout .* at least 1, not 0"),
    (lambda: make_topology("ring", 3), TopologyError, "unknown topology 'ring'"),
    (lambda: star(0), TopologyError, "at least one broker"),
    (lambda: Topology(("a", "b"), (("a", "b"), ("b", "a"))), TopologyError, "the overlay has a cycle: a - b - a"),
])
def test_a_mistake_is_refused_in_one_line_before_anything_runs(make, error, message):
    with pytest.raises(error, match=message) as info:
        make()
    assert raised_here(info) or info.traceback[-1].frame.code.path == "<string>", info.traceback  # dataclass __init__


def test_a_client_attached_twice_is_refused_naming_where_it_is():
    sim = Simulation(line(2))
    sim.client("c", "b0")
    with pytest.raises(ValueError, match="a client named 'c' is already attached \\(to broker 'b0'\\)") as info:
        sim.client("c", "b1")
    assert raised_here(info)


@pytest.mark.parametrize("returns, message", [(-1.0, "returned -1.0 s for a message of kind"),
                                              (None, "returned NoneType None"), (math.inf, "returned inf s")])
def test_a_service_model_that_returns_no_duration_is_named_at_run(returns, message):
    sim = Simulation(line(2), service={"b1": lambda msg, sends, cpu: returns})
    sim.client("pub", "b0").advertise(Q)  # b0 forwards the ADV to b1
    with pytest.raises(ValueError, match=f"the service model of broker 'b1' {message}") as info:
        sim.run()
    assert raised_here(info)


def test_the_clock_never_runs_backwards_and_refuses_times_it_cannot_reach():
    sim = Simulation(line(2))
    sim.run()
    sim.at(sim.now + 1.0, lambda: None)
    sim.run(until=sim.now + 0.5)
    now = sim.now
    sim.run(until=now - 0.25)  # earlier than now: nothing happens, the clock stays
    assert sim.now == now
    for t in (math.nan, math.inf):
        with pytest.raises(ValueError, match="finite time"):
            sim.at(t, lambda: None)


def test_scheduling_a_call_instead_of_a_callable_is_refused_at_the_call():
    sim = Simulation(line(2))
    pub = sim.client("pub", "b0")
    with pytest.raises(TypeError, match="at\\(\\) runs a callable at time t, such as lambda") as info:
        sim.at(1.0, pub.advertise(Q))  # advertise() ran now and returned None
    assert raised_here(info)
    with pytest.raises(TypeError, match="at\\(\\) takes a time in seconds, not str"):
        sim.at("1s", lambda: None)


def test_silencing_an_unknown_broker_is_refused():
    with pytest.raises(ValueError, match="unknown broker 'b9'; the brokers are b0, b1"):
        Simulation(line(2)).silence("b9")


def test_a_topology_given_as_lists_runs_and_is_hashable():
    topology = Topology(["a", "b"], [["a", "b"]])
    assert hash(topology) == hash(Topology(("a", "b"), (("a", "b"),)))
    assert latency_over(Simulation(topology, link_delay=0.001, service=FREE), "a", "b") == pytest.approx(0.001)
