"""EventPy guards as subscriptions of the broker-less overlay (eventpy.p2p._guards)."""

from __future__ import annotations

import random

import pytest

from eventpy import EventType, GuardError, p2p
from eventpy.runtime.model import Interval

Reading = EventType("weather.Reading", temp=int, wind=int)


def space():
    return p2p.space_of(Reading, temp=(-40, 50), wind=(0, 200))


def test_the_box_holds_the_intervals_and_the_filter_the_whole_guard():
    s = space()
    box, accept = p2p.guard_box(s, Reading, "temp > t and wind >= 60 and wind < 70", {"t": 30})
    assert box == ((31.0, 51.0), (60.0, 70.0))  # whole values 31..50 and 60..69, half-open
    assert accept((31.0, 65.0)) and not accept((30.0, 65.0))
    box, accept = p2p.guard_box(s, Reading, "temp * wind > 1000")
    assert box == s.whole  # no interval: the box is everything, the filter decides
    assert accept((20.0, 60.0)) and not accept((5.0, 80.0))


def test_a_switched_off_guard_has_an_empty_box():
    box, _ = p2p.guard_box(space(), Reading, "temp > 0 and on", {"on": False})
    assert all(lo >= hi for lo, hi in box)
    assert space().coarse(box, 4) == []


def test_delivery_matches_a_centralized_evaluation_of_the_guards():
    """Every notified subscriber whose guard holds gets the event exactly once, and no subscriber
    gets one its guard rejects: the oracle evaluates each guard (as Python) on each event."""
    rng = random.Random(3)
    net = p2p.Network(space(), seed=3)
    pubs = [net.add_publisher(out_degree=6) for _ in range(2)]
    subs = []
    got: dict[int, list] = {}
    for i in range(30):
        if i % 5 == 0:
            k = rng.randint(0, 200)
            text, params, oracle = "temp + wind > k", {"k": k}, lambda e, k=k: e["temp"] + e["wind"] > k
        else:
            lo = rng.randint(-40, 40)
            hi, w = lo + rng.randint(1, 20), rng.randint(0, 150)
            text, params = "temp >= lo and temp <= hi and wind > w", {"lo": lo, "hi": hi, "w": w}
            oracle = lambda e, lo=lo, hi=hi, w=w: lo <= e["temp"] <= hi and e["wind"] > w
        sid = p2p.subscribe(net, Reading, text, params, delay=rng.randint(2, 5), out_degree=6,
                            fp_budget=1.0, on_event=lambda ev, i=i: got.setdefault(i, []).append(ev))
        subs.append((sid, oracle))
    for _ in range(150):
        net.step()
    assert net.notified() >= 0.75  # measured: 0.87 (26 of 30) on this seed
    # a notified subscriber (asked just before each event: a peer that finds its parent late
    # leaves it, §4, and the peers below lose it until they find another) whose guard holds gets
    # the event exactly once; nobody gets an event its guard rejects
    got.clear()
    checked = 0
    for _ in range(100):
        ev = {"temp": rng.randint(-40, 50), "wind": rng.randint(0, 200)}
        notified = {i for i, (sid, _) in enumerate(subs) if net.is_notified(sid)}
        net.publish(rng.choice(pubs), ev)
        for i, (sid, oracle) in enumerate(subs):
            mine = got.pop(i, [])
            if oracle(ev) and i in notified:
                assert mine == [ev], (i, ev)
                checked += 1
            else:
                assert mine in ([], [ev]) and (not mine or oracle(ev)), (i, ev)
    assert checked >= 200  # measured: 399 deliveries checked; the check is not vacuous


def test_mistakes_are_clear_errors():
    s = space()
    with pytest.raises(ValueError, match="alternatives"):
        p2p.guard_box(s, Reading, "temp > 1 or wind > 1")
    with pytest.raises(ValueError, match="elapsed"):
        p2p.guard_box(s, Reading, "temp > elapsed()")
    with pytest.raises(GuardError):
        p2p.guard_box(s, Reading, "pressure > 1")
    with pytest.raises(ValueError, match="missing wind"):
        p2p.space_of(Reading, temp=(0, 1))
    Quote = EventType("Quote", firm=str, price=float)
    with pytest.raises(TypeError, match="firm is str"):
        p2p.space_of(Quote, firm=(0, 1), price=(0, 1))
    with pytest.raises(ValueError, match="space_of"):
        p2p.guard_box(s, Quote, "price > 1")
    net = p2p.Network(s)
    with pytest.raises(KeyError, match="not an online publisher"):
        net.publish(7, {"temp": 1, "wind": 1})


def test_interval_ends_on_integer_dimensions():
    s = space()
    assert s.box(temp=Interval(2, False, 5, True))[0] == (3.0, 6.0)
    assert s.box(temp=Interval(2.5, True, 5.5, False))[0] == (3.0, 6.0)


def test_bad_points_and_boxes_are_clear_errors():
    net = p2p.Network(space())
    pub = net.add_publisher(out_degree=4)
    with pytest.raises(ValueError, match="has 2 values, not 3"):
        net.publish(pub, (1, 2, 3))
    with pytest.raises(TypeError, match="temp must be a number, not 'hot'"):
        net.publish(pub, {"temp": "hot", "wind": 1})
    with pytest.raises(ValueError, match="integer attribute; 3.5"):
        net.publish(pub, {"temp": 3.5, "wind": 1})
    with pytest.raises(ValueError, match="outside its domain"):
        net.publish(pub, {"temp": 500, "wind": 1})
    with pytest.raises(ValueError, match="2 \\(lo, hi\\) ranges"):
        net.add_subscriber(((1, 2),), delay=2, out_degree=3)
    with pytest.raises(KeyError, match="not an online subscriber"):
        net.is_notified(pub)
    assert net.publish(pub, (1, 2)) == {pub: 0}
