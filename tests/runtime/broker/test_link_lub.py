"""A link's LUB kept by counting its entries (_link_lub) against the pass of filter_lub it
replaces, and the cost that made it: a client with thousands of subscriptions (a location
service's fleet process) made its broker recompute the link's LUB over all of them for each one
that left or changed a one-sided bound (`price <= max_price`): quadratic, minutes for 10,000."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker
from eventpy.runtime.broker._link_lub import LinkLub
from eventpy.runtime.messages import Adv, Sub, Unsub, Upd
from eventpy.runtime.model import INF, EventType, Interval, ValueSet, filter_lub

T = EventType("T", x=float, n=int, s=str)
bounds = st.sampled_from([-INF, -2.0, -1.0, 0.0, 1.0, 2.0, INF])
intervals = st.builds(Interval, bounds, st.booleans(), bounds, st.booleans())
valuesets = st.builds(ValueSet, st.frozensets(st.sampled_from("abcd"), max_size=3), st.booleans())
constraints = {"x": intervals, "n": intervals, "s": valuesets}
filters = st.fixed_dictionaries({}, optional=constraints)
# (key, whole filter to set, or None to remove) or (key, attribute, its new constraint or None)
ops = st.lists(st.one_of(
    st.tuples(st.integers(0, 11), st.one_of(st.none(), filters)),
    st.tuples(st.integers(0, 11), st.sampled_from(sorted(constraints)),
              st.one_of(st.none(), intervals, valuesets))), min_size=1, max_size=60)


def reference(entries: dict) -> dict | None:
    acc = None
    for flt in entries.values():
        if any(c.is_empty() for c in flt.values()):
            continue
        acc = dict(flt) if acc is None else filter_lub(acc, flt)
    return None if acc is None else {a: c for a, c in acc.items() if not c.is_wildcard()}


@settings(max_examples=1500, deadline=None)
@given(ops)
def test_the_counted_lub_is_the_lub_of_the_entries_left(ops):
    lub, entries = LinkLub(T), {}
    for op in ops:
        if len(op) == 2:
            key, flt = op
            if key in entries:
                lub.remove(entries.pop(key))
            if flt is not None:
                entries[key] = dict(flt)
                lub.add(entries[key])
        else:
            key, attr, c = op
            if key not in entries or (c is not None and (type(c) is Interval) != (attr != "s")):
                continue  # an entry not held, or a constraint of the other kind
            lub.change(entries[key], attr, c)
        assert lub.value() == reference(entries), entries


Offer = EventType("geo.Offer", ox=float, oy=float, category=str, price=float)
GUARD = "math.hypot(ox - x, oy - y) <= r and category in cats and price <= maxp"


def test_a_fleet_leaving_and_changing_one_sided_bounds_costs_its_broker_no_pass_per_user(monkeypatch):
    rng = random.Random(3)
    plan = compile_guard(GUARD, Offer, {"x": float, "y": float, "r": float, "cats": set, "maxp": float})
    b = Broker("edge")
    b.connect("up", "broker")
    b.handle("up", Adv(Offer.name, Offer.to_wire()))
    b.connect("fleet", "client")
    b.handle("fleet", Adv(Offer.name, Offer.to_wire(), False))
    users = 1500
    for sid in range(1, users + 1):
        b.handle("fleet", Sub(Offer.name, sid, plan.spec, plan.evaluate(
            {"x": rng.uniform(0, 1e4), "y": rng.uniform(0, 1e4), "r": 50.0,
             "cats": set(rng.sample(["food", "shoes", "cars", "books"], 2)), "maxp": rng.uniform(20, 80)})))
    calls = [0]
    for cls in (Interval, ValueSet):
        real = cls.lub

        def counted(self, o, real=real):
            calls[0] += 1
            return real(self, o)
        monkeypatch.setattr(cls, "lub", counted)
    (maxp,) = plan.by_param["maxp"]
    for seq, sid in enumerate(range(1, users + 1, 3), 1):  # a third change their price...
        b.handle("fleet", Upd(Offer.name, sid, {maxp: (plan.evaluate(
            {"x": 0.0, "y": 0.0, "r": 50.0, "cats": set(), "maxp": 99.0 - seq % 7})[maxp], 1)}))
    for sid in range(2, users + 1, 3):  # ... and another third leave
        b.handle("fleet", Unsub(Offer.name, sid))
    # each of these 1,000 messages recomputed the fleet link's LUB with a pass over its 1,000 to
    # 1,500 entries (more than a million LUBs of two constraints); now the LUB is read off counts
    assert calls[0] < 10 * users, calls[0]
    ts = b.types[Offer.name]
    held = [ts.summary.entries["fleet"][k] for k in ts.summary.entries["fleet"]]
    assert ts.summary.summary_for("up") == [reference(dict(enumerate(held)))]
