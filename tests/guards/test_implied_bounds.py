"""The bounds a distance puts on each coordinate (_hull.implied_bounds) never leave out an event
the exact check admits: the matcher and the summaries narrow by them, so an event outside them
would be lost, at the circle's very edge included, where the float rounding of the exact check
and of the bound's ends differ."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.guards import compile_guard
from eventpy.guards._exprs import compile_predicate
from eventpy.guards._hull import hull, implied_bounds
from eventpy.runtime.model import EventType

Spot = EventType("geo.Spot", x=float, y=float)
PARAMS = {"px": float, "py": float, "r": float}
SHAPES = ["math.hypot(x - px, y - py) <= r", "r > math.hypot(py - y, x - px)",
          "math.hypot((x - px) * 3.0, (y - py) / 0.25) < r", "math.hypot(0.5 * (x - px), y - py) <= r",
          "max(abs(x - px), abs(py - y)) <= r", "math.hypot(x - px, y - py, x - py) < r"]
coords = st.floats(-1e6, 1e6, allow_nan=False)


@pytest.mark.parametrize("guard", SHAPES)
def test_each_distance_shape_bounds_both_coordinates(guard):
    (conj,) = compile_guard(guard, Spot, PARAMS).spec
    (tree,) = conj[2]
    assert {a for a, _, _ in implied_bounds(tree, Spot.attrs)} == {"x", "y"}


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SHAPES), coords, coords, st.floats(0, 1e5, allow_nan=False), st.floats(0, 2 * math.pi),
       st.floats(0.5, 1.5), st.integers(-3, 3))
def test_an_event_the_distance_admits_lies_within_its_bounds(guard, px, py, r, angle, reach, ulps):
    plan = compile_guard(guard, Spot, PARAMS)
    (conj,) = plan.spec
    (tree,) = conj[2]
    vs = plan.evaluate({"px": px, "py": py, "r": r})
    holds = compile_predicate(tree, 2, len(vs))
    for scale in (1.0, 3.0, 0.25, 0.5):  # the shapes' units: events at and around each edge
        x = px + math.cos(angle) * r * reach / scale
        y = py + math.sin(angle) * r * reach / scale
        for _ in range(abs(ulps)):
            x, y = math.nextafter(x, math.copysign(math.inf, ulps)), math.nextafter(y, -math.copysign(math.inf, ulps))
        if not holds((x, y), vs):
            continue
        for attr, op, expr in implied_bounds(tree, Spot.attrs):
            interval = hull(op, expr, vs, 0.0, 0.0)
            assert interval is None or interval.contains({"x": x, "y": y}[attr]), (guard, attr, interval, x, y)
