"""What a game's stores of a position send, in both forms: `self.x, self.y = ...` (one statement,
one `assigning`) reaches each subscription as one update of both fields; a store of values held
already reaches nothing; a refused store leaves the object and its subscriptions as they were and
says why at the store's line. (The store path checks and sends one list of updates since the
field-store benchmark, tools/bench/field_stores.py: these pin what it must keep.)"""

from __future__ import annotations

import traceback

import pytest

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime.lang import subscriptions_of

SRC = '''
class Player:
    def __init__(self, x: float, y: float):
        self.view = 10.0
        self.x = x
        self.y = y

    event def seen(self, px: float, py: float) when abs(px - self.x) < self.view and abs(py - self.y) < self.view:
        pass

    event def near_x(self, px: float) when abs(px - self.x) < self.view:
        pass

    def move(self, x, y):
        self.x, self.y = x, y

    def step(self, x):
        self.x = x
'''


@pytest.fixture
def player_and_updates():
    """A player, and the list of (event method, parameters) each ClientCore.update got."""
    eventpy.shutdown()
    ns: dict = {"__name__": "tuple_stores"}
    exec(compile(compile_source(SRC, "tuple_stores.epy"), "tuple_stores.epy", "exec"), ns)
    node = eventpy.default_node()
    try:
        p = ns["Player"](1.0, 2.0)
        eventpy.drain(timeout=10.0)
        core = node._local.core
        updates: list[tuple[str, dict]] = []
        real = core.update

        def recording(state, params):
            updates.append((state.etype.name.rsplit(".", 1)[-1], dict(params)))
            return real(state, params)

        core.update = recording
        yield p, updates
    finally:
        eventpy.shutdown()


def _in_order(updates: list) -> list:
    return sorted(updates, key=lambda u: (u[0], sorted(u[1].items())))


def _held(p) -> dict:
    return {sub.event_type.name.rsplit(".", 1)[-1]: sub.params for sub in subscriptions_of(p)}


def test_a_tuple_store_reaches_each_subscription_as_one_update(player_and_updates):
    p, updates = player_and_updates
    p.move(5.0, 6.0)
    assert _in_order(updates) == [("near_x", {"x": 5.0}), ("seen", {"x": 5.0, "y": 6.0})]
    held = _held(p)
    assert held["seen"]["x"] == 5.0 and held["seen"]["y"] == 6.0 and held["near_x"]["x"] == 5.0


def test_a_tuple_store_sends_only_to_the_subscriptions_whose_values_changed(player_and_updates):
    p, updates = player_and_updates
    p.move(1.0, 2.0)  # both held already: nothing
    assert updates == []
    p.move(1.0, 7.0)  # only y moved: near_x (reads x only) gets nothing
    assert updates == [("seen", {"x": 1.0, "y": 7.0})]


def test_separate_stores_each_send_the_field_they_store(player_and_updates):
    p, updates = player_and_updates
    p.x = 3.0
    p.y = 2.0  # held already
    p.y = 4.0
    assert _in_order(updates) == [("near_x", {"x": 3.0}), ("seen", {"x": 3.0}), ("seen", {"y": 4.0})]


def test_a_refused_store_leaves_the_object_as_it_was_and_names_its_line(player_and_updates):
    p, updates = player_and_updates
    with pytest.raises(TypeError) as info:
        p.x = "far"  # the line the message and the traceback must point at
    assert "Player.x = 'far' refused" in str(info.value)
    last = traceback.extract_tb(info.tb)[-1]
    assert last.filename == __file__ and last.line == 'p.x = "far"  # the line the message and the traceback must point at'
    assert p.x == 1.0 and _held(p)["seen"]["x"] == 1.0 and updates == []
    p.move(9.0, 9.0)  # the object still works
    assert _held(p)["seen"]["x"] == 9.0


def test_a_store_in_a_method_sends_what_its_store_listed_once_the_statement_ends(player_and_updates):
    p, updates = player_and_updates
    p.step(1.0)  # held already
    assert updates == []
    p.step(8.0)
    assert _in_order(updates) == [("near_x", {"x": 8.0}), ("seen", {"x": 8.0})]
    with pytest.raises(TypeError, match="refused"):
        p.step("far")
    assert p.x == 8.0 and _held(p)["near_x"]["x"] == 8.0 and len(updates) == 2
