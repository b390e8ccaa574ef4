"""Compiled `.epy` objects against a sequential oracle: what each object's event method runs on.

Objects of a class and of a subclass that overrides its event method are made, mutated from the
main thread (a float field assigned, a set field changed with add/discard or assigned whole) and
closed, then the overlay is drained, then events are published from the main thread (on the
class and on the subclass). The event methods narrow their own guards (the set loses the zone
just seen; the base class also lowers its limit), so the brokers, whose values lag, let through
a superset of what the guard admits, and the local filter must drop the rest at delivery. That
makes what each object receives exact: the events of its types, in publication order, whose
guard held on the object's fields as the earlier deliveries left them (000 Fig. 5 line 11, DESIGN
§1: one at a time per object). Closed objects receive nothing more; new ones what is published
after they were made and drained.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

import eventpy
from eventpy.compiler import compile_source

SRC = '''
class Zone:
    def __init__(self, zones, limit: float):
        self.zones = set(zones)
        self.limit = limit
        self.got = []

    event def enter(self, zone: str, v: float) when zone in self.zones and v < self.limit:
        self.got.append((zone, v))
        self.zones.discard(zone)
        self.limit = v + 0.5


class Gate(Zone):
    event def enter(self, zone: str, v: float) when zone in self.zones and v < self.limit:
        self.got.append((zone, v))
        self.zones.discard(zone)
'''
ZONES = ("a", "b", "c", "d")
_modules = itertools.count()

values = st.integers(0, 9).map(float)
zone_sets = st.frozensets(st.sampled_from(ZONES))
changes = st.one_of(
    st.tuples(st.just("make"), st.booleans(), zone_sets, values),
    st.tuples(st.just("close"), st.integers(0, 7)),
    st.tuples(st.sampled_from(["add", "discard"]), st.integers(0, 7), st.sampled_from(ZONES)),
    st.tuples(st.just("zones"), st.integers(0, 7), zone_sets),
    st.tuples(st.just("limit"), st.integers(0, 7), values),
)
events = st.tuples(st.booleans(), st.sampled_from(ZONES), values)  # (on the subclass, zone, v)
phases = st.lists(st.tuples(st.lists(changes, max_size=5), st.lists(events, max_size=12)), min_size=1, max_size=4)


@settings(max_examples=30)
@given(st.sampled_from(["parametric", "resub"]), st.sampled_from(["fastint", "poset", "naive"]), st.booleans(), phases)
def test_event_methods_run_on_what_their_guards_admit_in_order(mode, matcher, rum, script):
    eventpy.shutdown()
    try:
        eventpy.connect(mode=mode, matcher=matcher, rum=rum)  # the overlay the objects' node joins
        module = f"zone_oracle_{next(_modules)}"
        ns: dict = {"__name__": module}
        exec(compile(compile_source(SRC, f"{module}.epy"), f"{module}.epy", "exec"), ns)
        Zone, Gate = ns["Zone"], ns["Gate"]
        objects: list = []  # [object, its model (zones, limit) or None once closed, is a Gate]
        for n, (mutations, published) in enumerate(script):
            for change in mutations:
                kind = change[0]
                if kind == "make":
                    _, gate, zones, limit = change
                    objects.append([(Gate if gate else Zone)(zones, limit), [set(zones), limit], gate])
                    continue
                live = [o for o in objects if o[1] is not None]
                if not live:
                    continue
                obj, model, _ = live[change[1] % len(live)]
                if kind == "close":
                    obj.close()
                    live[change[1] % len(live)][1] = None
                elif kind in ("add", "discard"):
                    getattr(obj.zones, kind)(change[2])
                    getattr(model[0], kind)(change[2])
                elif kind == "zones":
                    obj.zones = set(change[2])
                    model[0] = set(change[2])
                else:
                    obj.limit = model[1] = change[2]
            eventpy.drain(timeout=10.0)
            want = {id(o): list(o.got) for o, _, _ in objects}
            for on_gate, zone, v in published:
                (Gate if on_gate else Zone).enter(zone, v)
                for obj, model, gate in objects:
                    if model is None or (on_gate and not gate):  # Gate.enter reaches Gates only
                        continue
                    if zone in model[0] and v < model[1]:
                        want[id(obj)].append((zone, v))
                        model[0].discard(zone)
                        if not gate:
                            model[1] = v + 0.5
            eventpy.drain(timeout=10.0)
            for i, (obj, model, gate) in enumerate(objects):
                assert obj.got == want[id(obj)], (f"phase {n}, object {i} ({'Gate' if gate else 'Zone'}, "
                                                  f"{'closed' if model is None else 'live'})")
    finally:
        eventpy.shutdown()
