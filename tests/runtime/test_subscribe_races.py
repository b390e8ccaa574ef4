"""An object stored to by another thread while its constructor subscribes it.

An `.epy` object whose constructor hands `self` to another thread (a mover started in
`__init__`, a registry a game loop walks) can get a store of a guard field between the moment
its subscriptions read the field and the moment they are listed on the object. Before, that
store found no subscription to update: the field held the new value and the subscription kept
the old one for good, so events the field admitted were never delivered (coverage lost) and
events it rejected were filtered against the old value."""

from __future__ import annotations

import threading
import time

import pytest

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime import _fifo_lock
from eventpy.runtime.api import Node
from eventpy.runtime.lang import subscriptions_of

SRC = '''
MOVERS = []  # what another thread walks to move them

class Mover:
    def __init__(self, limit: float, zones):
        self.limit = limit
        self.zones = set(zones)
        self.got = []
        MOVERS.append(self)

    event def quote(self, zone: str, price: float) when zone in self.zones and price < self.limit:
        self.got.append((zone, price))
'''


def _mover_class(module: str):
    ns: dict = {"__name__": module}
    exec(compile(compile_source(SRC, f"{module}.epy"), f"{module}.epy", "exec"), ns)
    return ns["Mover"], ns["MOVERS"]


def _store_while_subscribing(monkeypatch, store, movers: list) -> list[threading.Thread]:
    """Run `store(obj)` in another thread just as the constructor makes the object's first
    subscription (after the guard's fields were read), and let the constructor go on once the
    store is done or is waiting for the field's lock."""
    threads: list[threading.Thread] = []
    real = Node._subscribe_plan

    def subscribe_plan(self, etype, plan, env, on_event, group=None, rum=None, since=None):
        if not threads:
            t = threading.Thread(target=store, args=(movers[-1],), daemon=True)
            threads.append(t)
            t.start()
            deadline = time.monotonic() + 30.0
            while t.is_alive() and t.ident not in _fifo_lock._waits and time.monotonic() < deadline:
                time.sleep(0.001)
        return real(self, etype, plan, env, on_event, group, rum, since)

    monkeypatch.setattr(Node, "_subscribe_plan", subscribe_plan)
    return threads


@pytest.mark.parametrize("how", ["assign", "set-add"])
def test_a_store_made_while_the_constructor_subscribes_reaches_the_subscription(monkeypatch, fresh_overlay, how):
    Mover, movers = _mover_class(f"mover_{how.replace('-', '_')}")

    def store(obj):
        if how == "assign":
            obj.limit = 20.0
        else:
            obj.zones.add("b")

    threads = _store_while_subscribing(monkeypatch, store, movers)
    m = Mover(10.0, {"a"})
    monkeypatch.undo()
    threads[0].join(timeout=30.0)
    assert not threads[0].is_alive()
    eventpy.drain(timeout=10.0)
    params = subscriptions_of(m)[0].params
    assert params["limit"] == m.limit and set(params["zones"]) == set(m.zones)  # before: 10.0 or {'a'}
    owed = ("a", 15.0) if how == "assign" else ("b", 5.0)
    Mover.quote(*owed)
    Mover.quote("c", 1.0)  # admitted by neither value
    eventpy.drain(timeout=10.0)
    assert m.got == [owed]  # before: [] (the subscription kept the old value)
