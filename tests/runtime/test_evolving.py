"""Evolving subscriptions (paper 003): guards over elapsed(), the seconds from the subscription's
issue to the event's publication. Brokers evaluate them with the publication time the event
carries (003 §V-D's snapshot at the entry point), so every broker and the subscriber agree with a
centralized evaluation at publication time (003 §VI-A's ground truth) without a message per
evolution step: checked here in the simulator, on several topologies and in both modes."""

from __future__ import annotations

import math
import random

import pytest

import eventpy
from eventpy.guards import SUBSCRIBED_AT, compile_guard
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line, random_tree, star
from eventpy.runtime.transports.inproc import Simulation

Q = EventType("game.Move", firm=str, price=float, vol=int, hot=bool)
FIRMS = ["IBM", "AMZN", "MSFT"]

GUARDS = [  # a window moving at speed v, a rising threshold, a subscription that expires, mixed
    ("price >= x0 + v * elapsed() - w and price <= x0 + v * elapsed() + w",
     lambda r: {"x0": r.uniform(0, 60), "v": r.uniform(-200, 200), "w": r.uniform(2, 20)}),
    ("firm == f and price < limit + k * elapsed()",
     lambda r: {"f": r.choice(FIRMS), "limit": r.uniform(0, 50), "k": r.uniform(0, 500)}),
    ("elapsed() < ttl and hot", lambda r: {"ttl": r.uniform(0.0, 0.2)}),
    ("abs(price - (x0 - v * elapsed())) < w or vol == n",
     lambda r: {"x0": r.uniform(40, 100), "v": r.uniform(0, 300), "w": r.uniform(1, 15), "n": r.randrange(6)}),
]


def oracle(guard: str, values: tuple, params: dict, elapsed: float) -> bool:
    env = dict(zip(Q.attrs, values))
    env.update(params)
    scope = {"abs": abs, "math": math, "elapsed": lambda: elapsed, "__builtins__": {}}
    return bool(eval(guard, scope, env))  # test-only oracle


def random_event(rng: random.Random) -> dict:
    return {"firm": rng.choice(FIRMS), "price": round(rng.uniform(0, 100), 1),
            "vol": rng.randrange(6), "hot": rng.random() < 0.5}


def test_elapsed_compiles_to_an_evolving_predicate_on_the_publication_time():
    plan = compile_guard("price < limit + 2 * elapsed()", Q, {"limit": float})
    assert plan.timed and plan.param_names == {"limit"}
    assert [k for _, k, _ in plan.predicates] == ["evolving"]
    (conj,) = plan.spec
    assert conj[0] == () and "('time',)" in repr(conj[2])  # no indexed bound: the broker evaluates it
    values = plan.evaluate({"limit": 1.0, SUBSCRIBED_AT: 100.0})
    event = ("IBM", 2.9, 1, True)
    assert plan.holds(event, values, 101.0) and not plan.holds(event, values, 100.5)
    assert not plan.holds(event, values)  # no publication time: it cannot be said to hold
    assert not compile_guard("price < limit", Q, {"limit": float}).timed


@pytest.mark.parametrize("text, words", [
    ("price < elapsed(1)", "elapsed() takes no arguments"),
    ("firm == elapsed()", "cannot be compared"),
])
def test_elapsed_mistakes_say_what_is_wrong(text, words):
    with pytest.raises(eventpy.GuardError, match=words.replace("(", r"\(").replace(")", r"\)")):
        compile_guard(text, Q, {})


@pytest.mark.parametrize("mode", ["parametric", "resub"])
@pytest.mark.parametrize("topology", [line(4), star(5), random_tree(7, seed=2)], ids=["line", "star", "random"])
def test_evolving_guards_deliver_exactly_the_centralized_evaluation(mode, topology):
    rng = random.Random(7)
    sim = Simulation(topology, mode=mode, link_delay=0.002)
    pubs = [sim.client(f"pub{i}", rng.choice(topology.edge_brokers())) for i in range(2)]
    for p in pubs:
        p.advertise(Q)
    sim.run()
    records = []
    for i in range(8):
        guard, gen = GUARDS[i % len(GUARDS)]
        rec = {"guard": guard, "params": gen(rng), "got": [], "violations": []}

        def subscribe(rec=rec, client=sim.client(f"sub{i}", rng.choice(list(topology.brokers)))):
            rec["since"] = sim.now

            def on_event(ev):
                _, _, t_pub = ev._meta
                if not oracle(rec["guard"], ev.values, rec["sub"].params, t_pub - rec["since"]):
                    rec["violations"].append(ev.values)  # strictness, at delivery
                rec["got"].append(ev._meta[:2])

            rec["sub"] = client.subscribe(Q, rec["guard"], rec["params"], on_event=on_event)

        sim.at(sim.now + i * 0.01, subscribe)  # issued at different times: elapsed() differs
        records.append(rec)
    sim.run()
    published = []
    t = sim.now
    for k in range(400):
        t += rng.expovariate(2000.0)
        ev = random_event(rng)
        p = rng.choice(pubs)
        sim.at(t, lambda p=p, ev=ev: published.append((p.publish(Q, **ev), ev, sim.now)))
    sim.run()
    for rec in records:
        assert not rec["violations"], rec["violations"][:3]
        want = {ident for ident, ev, t_pub in published
                if oracle(rec["guard"], tuple(ev[a] for a in Q.attrs), rec["params"], t_pub - rec["since"])}
        assert sorted(rec["got"]) == sorted(want), (rec["guard"], len(want), len(rec["got"]))
    assert sum(len(r["got"]) for r in records) > 50  # the workload exercises the guards
    assert sim.metrics()["spurious"] == 0  # brokers filtered on the same time as the oracle


def test_an_expiring_subscription_reaches_the_subscriber_no_more_and_costs_no_message():
    sim = Simulation(line(3), link_delay=0.001)
    pub = sim.client("p", "b0")
    pub.advertise(Q)
    got = []
    sub_client = sim.client("s", "b2")
    sub_client.subscribe(Q, "elapsed() < ttl", {"ttl": 0.5}, on_event=got.append)
    sim.run()
    sent = sim.subscription_messages()
    for k in range(10):
        sim.at(sim.now + 0.1 * k, lambda: pub.publish(Q, firm="IBM", price=1.0, vol=1, hot=True))
    sim.run()
    assert 4 <= len(got) <= 5  # those published within half a second of the subscription
    assert sim.subscription_messages() == sent  # the subscription expired without a message


def test_the_subscription_time_is_not_one_of_the_programs_parameters():
    node = eventpy.connect()
    sub = node.subscribe(Q, "price < limit + elapsed()", params={"limit": 1.0})
    assert sub.params == {"limit": 1.0}
    with pytest.raises(TypeError, match=r"unknown parameter 'x'; this subscription has limit$"):
        sub.update(x=1.0)
    eventpy.shutdown()

