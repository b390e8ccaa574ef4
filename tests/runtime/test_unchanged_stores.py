"""A store that does not change a guard field (a game loop storing every player's position each
tick, whether the player moved or not) reaches nothing: no check, no node lock, no wake of the
overlay. Before, each such store went to the node once per subscription reading the field and
cost about what a change cost (2x the CPU of the whole store in a 200-player loop).

What a store that changes something sends, and what the guards admit, is unchanged."""

from __future__ import annotations

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime.lang import subscriptions_of

SRC = '''
class Player:
    def __init__(self, x: float, view: float):
        self.x = x
        self.view = view
        self.zones = {"a"}
        self.seen = []

    event def moved(self, px: float) when abs(px - self.x) < self.view:
        self.seen.append(px)

    event def boom(self, px: float, zone: str) when zone in self.zones and px > self.x - self.view:
        self.seen.append(zone)
'''


def _player_class(module: str):
    ns: dict = {"__name__": module}
    exec(compile(compile_source(SRC, f"{module}.epy"), f"{module}.epy", "exec"), ns)
    return ns["Player"]


def _count_sends(node):
    local = node._local
    calls = [0]
    send = local.send

    def counting(action):
        calls[0] += 1
        return send(action)

    local.send = counting
    return calls


def test_a_store_of_the_value_a_field_holds_does_not_go_to_the_node():
    eventpy.shutdown()
    Player = _player_class("unchanged_stores")
    node = eventpy.default_node()
    try:
        players = [Player(float(i), 2.0) for i in range(20)]
        eventpy.drain(timeout=10.0)
        sends = _count_sends(node)
        for tick in range(5):  # the loop stores every position; only the even players move
            for i, p in enumerate(players):
                p.x = p.x + 1.0 if i % 2 == 0 and tick == 0 else p.x
                p.zones = {"a"}  # the same set, stored again
                p.zones.add("a")  # and a member it has
        # the 10 movers, once each (both subscriptions reading x in one visit); nothing else
        assert sends[0] == 10
        del node._local.send
        eventpy.drain(timeout=10.0)
        upd = eventpy.stats()["upd_sent"]
        Player.moved(10.0)
        Player.boom(0.0, "a")
        eventpy.drain(timeout=10.0)
        for i, p in enumerate(players):
            x = float(i) + (1.0 if i % 2 == 0 else 0.0)
            assert p.x == x and subscriptions_of(p)[0].params["x"] == x
            assert p.seen == ([10.0] if abs(10.0 - x) < 2.0 else []) + (["a"] if 0.0 > x - 2.0 else [])
        assert eventpy.stats()["upd_sent"] == upd
    finally:
        eventpy.shutdown()


def test_an_equal_value_of_another_type_is_still_checked_and_sent():
    eventpy.shutdown()
    Player = _player_class("unchanged_types")
    try:
        p = Player(1.0, 2.0)
        try:
            p.x = True  # == 1.0, but a bool: refused as before
        except TypeError as e:
            assert "Player.x = True refused" in str(e)
        else:
            raise AssertionError("a bool stored in a number field was accepted")
        p.x = 1  # an int where a float was: accepted and sent, as before
        assert subscriptions_of(p)[0].params["x"] == 1 and type(subscriptions_of(p)[0].params["x"]) is int
        vars(p)["x"] = 5.0  # past the field (refused by eventpyc inside the class): the guard kept 1
        p.x = 5.0  # the store brings the guard to the value the object holds
        assert subscriptions_of(p)[0].params["x"] == 5.0
        Player.moved(5.5)
        eventpy.drain(timeout=10.0)
        assert p.seen == [5.5]
    finally:
        eventpy.shutdown()


def test_a_store_read_by_several_event_methods_visits_the_node_once():
    """x is read by the guards of moved and boom: one store, one visit of the node (one lock,
    one wake) for both subscriptions. Before, one visit per subscription: a game loop moving
    200 players paid twice the node's lock and the transport's wake per store."""
    eventpy.shutdown()
    Player = _player_class("one_visit_stores")
    node = eventpy.default_node()
    try:
        players = [Player(float(i), 2.0) for i in range(10)]
        eventpy.drain(timeout=10.0)
        sends = _count_sends(node)
        for p in players:
            p.x += 1.0
        assert sends[0] == 10
        del node._local.send
        for p in players:
            assert [s.params["x"] for s in subscriptions_of(p)] == [p.x, p.x]
        Player.moved(5.5)
        Player.boom(0.0, "a")
        eventpy.drain(timeout=10.0)
        for p in players:
            assert p.seen == ([5.5] if abs(5.5 - p.x) < 2.0 else []) + (["a"] if 0.0 > p.x - 2.0 else [])
    finally:
        eventpy.shutdown()
