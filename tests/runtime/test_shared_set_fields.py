"""A set field given another object's set (`b.zones = a.zones`, `Watcher(a.zones)`).

A set stored into a guard field becomes a set the field observes: its mutations update the
object's subscriptions. A set that already was another field's (another object's, or another
field of the same object) was kept as it was, observed for its first owner only: a mutation
through the second object (`b.zones.add("x")`) changed its field and updated only the first
object's subscriptions. The second object then missed events its set admitted (coverage) and
received events its set no longer held (strictness). A set stored into a field is now that
field's own, as a plain set already was (a copy: `b.zones is a.zones` is False)."""

from __future__ import annotations

import pytest

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime.lang import subscriptions_of

SRC = '''
class Watcher:
    def __init__(self, zones):
        self.zones = zones
        self.other = set()
        self.got = []

    event def enter(self, zone: str) when zone in self.zones or zone in self.other:
        self.got.append(zone)
'''


def _watcher_class(module: str):
    ns: dict = {"__name__": module}
    exec(compile(compile_source(SRC, f"{module}.epy"), f"{module}.epy", "exec"), ns)
    return ns["Watcher"]


@pytest.mark.parametrize("how", ["store", "constructor", "other-field"])
def test_a_set_taken_from_another_field_is_observed_for_its_new_owner(fresh_overlay, how):
    Watcher = _watcher_class(f"shared_sets_{how.replace('-', '_')}")
    a = Watcher({"a"})
    if how == "store":
        b = Watcher({"b"})
        b.zones = a.zones
    elif how == "constructor":
        b = Watcher(a.zones)
    else:  # the same object's other field
        b = a
        b.other = a.zones
    mine = b.other if how == "other-field" else b.zones
    mine.add("x")
    mine.discard("a")
    eventpy.drain(timeout=10.0)
    for owner in {id(a): a, id(b): b}.values():  # every field agrees with its subscription
        params = subscriptions_of(owner)[0].params
        assert set(params["zones"]) == set(owner.zones) and set(params["other"]) == set(owner.other)
    Watcher.enter("x")
    Watcher.enter("a")
    eventpy.drain(timeout=10.0)
    want = [z for z in ("x", "a") if z in b.zones or z in b.other]
    assert b.got == want  # before: [] for 'store' and 'constructor' ('x' lost), or ['a'] as well


FROZEN = '''
class Board:
    names = frozenset({"a"})                    # a class default

    def __init__(self):
        self.got = []

    event def post(self, name: str) when name in self.names:
        self.got.append(name)
'''


def test_a_frozenset_field_stays_a_frozenset(fresh_overlay):
    """A frozenset stored into (or defaulted for) a guard field became an ObservedSet: mutable,
    and no longer hashable (`{board.names: ...}` raised TypeError: unhashable type)."""
    ns: dict = {"__name__": "frozen_fields"}
    exec(compile(compile_source(FROZEN, "frozen_fields.epy"), "frozen_fields.epy", "exec"), ns)
    Board = ns["Board"]
    b = Board()
    assert type(b.names) is frozenset and {b.names: 1}[frozenset({"a"})] == 1
    Board.post("a")
    Board.post("b")
    eventpy.drain(5)
    b.names = frozenset({"b"})  # a store is an update, as with any field
    assert type(b.names) is frozenset
    eventpy.drain(5)
    Board.post("a")
    Board.post("b")
    eventpy.drain(5)
    assert b.got == ["a", "b"]
