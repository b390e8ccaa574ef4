"""FASTINT does not re-mark an index whose breakpoints would come out the same.

A game's guards test positions in attribute expressions (`abs(x - self.x) < self.view`), so the
ordered indexes of `x` and `y` hold no finite bound: every entry spans the whole line. Such an
index has one leaf, which `crowded` reports as too few for its population, so every 1024th change
of the type (the game loop's UPDs, players joining) re-marked every entry, one numpy slice per
entry and index, to arrive at the same single leaf: with 2,000 players a join cost 2.4 ms of the
broker's time instead of 0.9 ms, and the cost grew with the number of players. The same held for
an index whose bounds are all equal (one breakpoint, never more)."""

from __future__ import annotations

import random

from eventpy.runtime.matching import FastIntMatcher, NaiveMatcher
from eventpy.runtime.matching._fastint_ordered import OrderedIndex
from eventpy.runtime.model import INF, EventType, Interval

T = EventType("game.moved", x=float, y=float, r=float)


def _counting_marks(monkeypatch) -> dict:
    calls: dict = {}
    apply = OrderedIndex._apply

    def counting(self, slot, m, on):
        calls[self] = calls.get(self, 0) + 1
        return apply(self, slot, m, on)

    monkeypatch.setattr(OrderedIndex, "_apply", counting)
    return calls


def test_an_index_without_finite_bounds_is_not_re_marked_on_every_1024th_change(monkeypatch):
    m, oracle = FastIntMatcher(T), NaiveMatcher(T)
    rnd = random.Random(3)
    n = 300
    for k in range(n):  # x, y unconstrained (the guard's attribute expression), r bounded, or 2.0 for all
        flt = {"r": Interval(0.0, True, 2.0, False)} if k % 2 else {}
        m.add(k, flt)
        oracle.add(k, flt)
    engine = m._rest
    xs, rs = engine.index["x"], engine.index["r"]
    calls = _counting_marks(monkeypatch)
    for step in range(4096):  # the loop's updates; they move nothing in x or y
        k = rnd.randrange(n)
        c = Interval(0.0, True, 2.0, False) if k % 2 else None
        m.update(k, "r", c)
        oracle.update(k, "r", c)
    assert calls.get(xs, 0) == 0  # before: 4 re-markings of 300 entries
    assert calls.get(rs, 0) == 0  # nor of r, whose one bound gives one breakpoint (before: 1200 too)
    m.check()
    for values in [(0.0, 0.0, 1.0), (5.0, -1.0, 2.0), (1.0, 1.0, -INF), (0.0, 0.0, INF)]:
        assert sorted(m.match(values)) == sorted(oracle.match(values))


def test_a_rebuild_that_finds_new_breakpoints_still_re_marks():
    m, oracle = FastIntMatcher(T), NaiveMatcher(T)
    for k in range(200):  # all the same bound: one breakpoint
        m.add(k, {"r": Interval(1.0, True, 1.0, True)})
        oracle.add(k, {"r": Interval(1.0, True, 1.0, True)})
    for k in range(2048):  # the bounds spread out: a rebuild at a 1024th change finds more leaves
        c = Interval(float(k % 200), True, float(k % 200) + 1.0, True)
        m.update(k % 200, "r", c)
        oracle.update(k % 200, "r", c)
    assert len(m._rest.index["r"].bp) > 2
    m.check()
    for v in [0.0, 0.5, 1.0, 57.0, 199.5, 201.0]:
        assert sorted(m.match((0.0, 0.0, v))) == sorted(oracle.match((0.0, 0.0, v)))
