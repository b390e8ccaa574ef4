"""The simulator's clients check `subscribe` and `update` arguments as the Python API does: a
mistake is refused at the call, from the caller's line, instead of making a subscription that
silently never matches."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line
from eventpy.runtime.transports.inproc import Simulation

Q = EventType("lab.Quote", firm=str, price=float)


def setup():
    sim = Simulation(line(2))
    pub = sim.client("pub", "b0")
    pub.advertise(Q)
    return sim, pub, sim.client("sub", "b1")


def test_a_numpy_parameter_matches_as_the_float_it_is():
    sim, pub, client = setup()
    got = []
    sub = client.subscribe(Q, "price < limit", {"limit": np.float64(10.0)}, on_event=got.append)
    sim.run()
    pub.publish(Q, firm="IBM", price=5.0)
    sim.run()
    sub.update(limit=np.float32(20.0))
    sim.run()
    pub.publish(Q, firm="IBM", price=15.0)
    sim.run()
    assert [ev.values for ev in got] == [("IBM", 5.0), ("IBM", 15.0)]
    assert type(sub.params["limit"]) is float


def test_a_set_parameter_is_frozen_so_later_changes_of_the_callers_set_do_not_reach_it_unsent():
    sim, pub, client = setup()
    firms = {"IBM"}
    got = []
    sub = client.subscribe(Q, "firm in watch", {"watch": firms}, on_event=got.append)
    sim.run()
    firms.add("AMZN")  # not an update: nothing is sent, so the guard must not change either
    pub.publish(Q, firm="AMZN", price=1.0)
    sim.run()
    assert got == [] and sub.params["watch"] == frozenset({"IBM"})


@pytest.mark.parametrize("change, message", [
    ({"limt": 5.0}, "unknown parameter 'limt'; this subscription has limit"),
    ({"limit": "5"}, "parameter 'limit' must stay a number, got str '5'"),
    ({"limit": float("nan")}, "parameter 'limit' is NaN"),
])
def test_an_update_the_api_refuses_is_refused_from_the_callers_line_and_sends_nothing(change, message):
    sim, pub, client = setup()
    sub = client.subscribe(Q, "price < limit", {"limit": 10.0})
    sim.run()
    with pytest.raises((TypeError, ValueError), match=message) as info:
        sub.update(**change)
    assert traceback.extract_tb(info.value.__traceback__)[-1].filename == __file__
    assert sub.params == {"limit": 10.0}
    assert client.core.stats["upd_sent"] == 0 and not client.core.outbox


def test_a_set_member_of_the_wrong_type_is_refused_at_subscribe():
    sim, pub, client = setup()
    with pytest.raises(TypeError, match="member 1 \\(int\\) can never equal attribute 'firm'"):
        client.subscribe(Q, "firm in watch", {"watch": {1}})


def test_a_guard_that_is_not_text_is_refused_with_a_type_error():
    sim, pub, client = setup()
    with pytest.raises(TypeError, match="the guard is the text of a condition") as info:
        client.subscribe(Q, 5)
    assert traceback.extract_tb(info.value.__traceback__)[-1].filename == __file__


def test_one_guard_text_is_compiled_once_per_simulation():
    sim, pub, client = setup()
    subs = [client.subscribe(Q, "price < limit", {"limit": float(i)}) for i in range(3)]
    other = client.subscribe(Q, "price < limit", {"limit": 1})  # an int: a number too, the same plan
    assert subs[0].state.plan is subs[1].state.plan is subs[2].state.plan is other.state.plan
    assert client.subscribe(Q, "price > limit", {"limit": 1.0}).state.plan is not subs[0].state.plan


def test_the_simulator_takes_an_event_method_of_an_epy_class_as_the_api_does():
    """`node.subscribe(Watch.quote, ...)` worked on a Node; a SimClient took an EventType only
    (an AttributeError from inside `publish`, for instance), so an experiment could not reuse
    a program's event types."""
    import textwrap

    from eventpy.compiler import compile_source

    text = textwrap.dedent('''
        class Watch:
            event def quote(self, firm: str, price: float) when price < 10.0:
                pass
    ''')
    ns: dict = {"__name__": "sim_watch"}
    exec(compile(compile_source(text, "sim_watch.epy", "sim_watch"), "sim_watch.epy", "exec"), ns)
    quote = ns["Watch"].quote
    sim = Simulation(line(2))
    pub, client = sim.client("pub", "b0"), sim.client("sub", "b1")
    pub.advertise(quote)
    got = []
    client.subscribe(quote, "price > 5", on_event=lambda ev: got.append((ev.firm, ev.price)))
    sim.run()
    pub.publish(quote, firm="IBM", price=7.0)
    pub.publish(quote, firm="IBM", price=3.0)
    sim.run()
    assert got == [("IBM", 7.0)]
    pub.unadvertise(quote)
    for call in (lambda: pub.publish(print, x=1), lambda: client.subscribe("Watch.quote", "price > 5")):
        with pytest.raises(TypeError, match="needs an EventType or an event method of an .epy class, got") as info:
            call()
        assert traceback.extract_tb(info.tb)[-1].name == "<lambda>"  # from the caller's line
