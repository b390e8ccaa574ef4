"""A set-valued guard field mutated from two threads (`self.zones.add(z)` in a game's threads).
Before, a mutation ran outside the field's lock, so it could land while another thread's
mutation iterated the set to send it: "RuntimeError: Set changed size during iteration" in that
thread (seen with four threads adding and discarding zones over TCP)."""

from __future__ import annotations

import threading

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime import _lang_fields
from eventpy.runtime.lang import ObservedSet, subscriptions_of

SRC = '''
class Watcher:
    def __init__(self):
        self.zones = {"z0", "z1", "z2"}

    event def enter(self, zone: str) when zone in self.zones:
        pass
'''


def test_a_set_mutated_while_another_thread_sends_it():
    eventpy.shutdown()
    freeze = _lang_fields.freeze
    try:
        ns: dict = {"__name__": "set_watchers"}
        exec(compile(compile_source(SRC, "set_watchers.epy"), "set_watchers.epy", "exec"), ns)
        w = ns["Watcher"]()
        other: list[threading.Thread] = []

        def freezing_with_a_mutation_halfway(value):
            if not isinstance(value, ObservedSet) or other:
                return freeze(value)

            def members():  # the other thread adds a zone while this one reads the set
                for i, member in enumerate(value):
                    if i == 1:
                        t = threading.Thread(target=lambda: w.zones.add("z9"), daemon=True)
                        other.append(t)
                        t.start()
                        t.join(timeout=1.0)  # after the fix it waits for this thread's lock
                    yield member
            return frozenset(members())

        _lang_fields.freeze = freezing_with_a_mutation_halfway
        w.zones.add("z3")  # before: RuntimeError: Set changed size during iteration
        _lang_fields.freeze = freeze
        other[0].join(timeout=30)
        assert set(w.zones) == {"z0", "z1", "z2", "z3", "z9"}
        assert set(subscriptions_of(w)[0].params["zones"]) == set(w.zones)
    finally:
        _lang_fields.freeze = freeze
        eventpy.shutdown()
