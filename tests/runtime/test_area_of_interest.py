"""A game's area of interest, `abs(x - px) < view and abs(y - py) < view` over parameters: the
brokers index and summarize it as the box it is (before, an attribute expression left x and y
open, so every event of the type reached every broker with a player, and was filtered only by
the exact check there). Deliveries stay exactly the guard's, in every engine, as the player moves."""

from __future__ import annotations

import math
import random

import pytest

from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line
from eventpy.runtime.transports.inproc import Simulation

Move = EventType("game.Move", x=float, y=float)
AOI = "abs(x - px) < view and abs(py - y) <= view"


# the poset summary keeps each box; the attribute summary (the default) sends their bounding box,
# which five boxes spread over the map make most of it
@pytest.mark.parametrize("summary, share", [("poset", 0.15), ("attribute", 0.7)])
@pytest.mark.parametrize("engine", ["ves", "lees", "clees"])
@pytest.mark.parametrize("mode", ["parametric", "resub"])
def test_an_area_of_interest_reaches_only_the_events_near_it_and_follows_the_player(engine, mode, summary, share):
    rng = random.Random(5)
    sim = Simulation(line(3), mode=mode, link_delay=0.005, evolving_engine=engine, summary=summary)
    pub = sim.client("world", "b0")
    pub.advertise(Move)
    sim.run()
    players = {f"p{i}": {"px": rng.uniform(0, 100), "py": rng.uniform(0, 100), "view": 5.0} for i in range(5)}
    got: dict[str, list] = {name: [] for name in players}
    subs = {}
    client = sim.client("host", "b2")
    for name, params in players.items():
        subs[name] = client.subscribe(Move, AOI, dict(params), on_event=lambda e, name=name: got[name].append(e._meta[:2]))
    sim.run()
    published = []
    for step in range(4):
        for _ in range(300):
            x, y = rng.uniform(0, 100), rng.uniform(0, 100)
            published.append((pub.publish(Move, x=x, y=y), x, y, {n: dict(p) for n, p in players.items()}))
        sim.run()
        for name, params in players.items():  # every player moves, and the broker follows
            params["px"], params["py"] = rng.uniform(0, 100), rng.uniform(0, 100)
            subs[name].update(px=params["px"], py=params["py"])
        sim.run()
    for name in players:
        want = [ident for ident, x, y, at in published
                if abs(x - at[name]["px"]) < at[name]["view"] and abs(at[name]["py"] - y) <= at[name]["view"]]
        assert sorted(got[name]) == sorted(want), name
    forwarded = sim.brokers["b0"].stats["pub_forwarded"]
    # five boxes of 10 x 10 on a 100 x 100 map: about 5% of the events are near a player
    assert forwarded < share * len(published), (forwarded, len(published))
    assert client.core.stats["spurious"] == 0


# `math.hypot(x - px, y - py) < view`: the circle a location service writes for "near me". Each
# coordinate lies within view of the centre, so the brokers index and summarize the circle's
# bounding box, and the exact check keeps the circle (before, a distance left x and y open and
# every event reached every broker with a subscriber: b0 forwarded all of them).
CIRCLES = {
    "circle": ("math.hypot(x - px, y - py) < view", lambda x, y, p, t: math.hypot(x - p["px"], y - p["py"]) < p["view"]),
    "flipped": ("view >= math.hypot(py - y, x - px)", lambda x, y, p, t: p["view"] >= math.hypot(p["py"] - y, x - p["px"])),
    "moving": ("math.hypot(x - (px + 2.0 * elapsed()), y - py) <= view",
               lambda x, y, p, t: math.hypot(x - (p["px"] + 2.0 * t), y - p["py"]) <= p["view"]),
    # the box as the larger of two distances, and a distance in other units on each axis
    "chebyshev": ("max(abs(x - px), abs(py - y)) < view",
                  lambda x, y, p, t: max(abs(x - p["px"]), abs(p["py"] - y)) < p["view"]),
    "units": ("math.hypot((x - px) * 2.0, (y - py) / 0.5) < view",
              lambda x, y, p, t: math.hypot((x - p["px"]) * 2.0, (y - p["py"]) / 0.5) < p["view"]),
}


@pytest.mark.parametrize("shape", sorted(CIRCLES))
@pytest.mark.parametrize("engine", ["ves", "clees"])
@pytest.mark.parametrize("mode", ["parametric", "resub"])
def test_a_circle_around_a_user_reaches_only_the_events_near_it(shape, engine, mode):
    guard, holds = CIRCLES[shape]
    rng = random.Random(7)
    sim = Simulation(line(3), mode=mode, link_delay=0.005, evolving_engine=engine, summary="poset")
    pub = sim.client("shops", "b0")
    pub.advertise(Move)
    sim.run()
    users = {f"u{i}": {"px": rng.uniform(0, 100), "py": rng.uniform(0, 100), "view": 5.0} for i in range(5)}
    got: dict[str, list] = {name: [] for name in users}
    client = sim.client("fleet", "b2")
    subs, since = {}, {}
    for name, params in users.items():
        since[name] = sim.now
        subs[name] = client.subscribe(Move, guard, dict(params), on_event=lambda e, name=name: got[name].append(e._meta[:2]))
    sim.run()
    published = []
    for _ in range(4):
        for _ in range(300):
            x, y = rng.uniform(0, 100), rng.uniform(0, 100)
            published.append((pub.publish(Move, x=x, y=y), x, y, sim.now, {n: dict(p) for n, p in users.items()}))
        sim.run()
        for name, params in users.items():  # every user moves
            params["px"], params["py"] = rng.uniform(0, 100), rng.uniform(0, 100)
            subs[name].update(px=params["px"], py=params["py"])
        sim.run()
    for name in users:
        want = [ident for ident, x, y, t, at in published if holds(x, y, at[name], t - since[name])]
        assert sorted(got[name]) == sorted(want), name
    forwarded = sim.brokers["b0"].stats["pub_forwarded"]
    # five boxes of 10 x 10 (or moving ones) on a 100 x 100 map: a few percent of the events
    assert forwarded < 0.15 * len(published), (forwarded, len(published))
    assert client.core.stats["spurious"] == 0
