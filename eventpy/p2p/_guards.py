"""EventPy guards as subscriptions of the broker-less overlay.

A guard is compiled as for the brokers (eventpy.guards); its one conjunction's normalized
intervals (001 §4) are the user-level box (004 §2: a subscription is a hyper-rectangle), and the
whole guard, evaluated by the compiled plan, is the rest of the local filter, so a predicate the
box cannot hold (`price * volume > x`) still decides delivery exactly: events in the box that
fail it count as false positives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..guards import compile_guard
from ..runtime._params import check_value_range
from ..runtime.model import EventType, Interval
from ._space import Box, Dimension, Space


def space_of(etype: EventType, **domains: tuple[float, float]) -> Space:
    """The event space of an event type whose attributes are all int or float, with the domain
    of each given as (lo, hi), both ends included."""
    missing = [a for a in etype.attrs if a not in domains]
    extra = sorted(set(domains) - set(etype.attrs))
    if missing or extra:
        raise ValueError(f"{etype.name}: give a domain for every attribute"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; {', '.join(extra)} is not an attribute" if extra else ""))
    dims = []
    for a in etype.attrs:
        t = etype.schema[a]
        if t not in (int, float):
            raise TypeError(f"{etype.name}.{a} is {t.__name__}: the event space of 004 has ordered, "
                            "bounded attributes only (int or float)")
        lo, hi = _bounds(etype, a, domains[a])
        dims.append(Dimension.ints(a, lo, hi) if t is int else Dimension.floats(a, lo, hi))
    return Space(dims)


# Integer values travel as floats in the space (Space.point), and an int domain [L, U] is the
# half-open [L, U + 1): U + 1 must be exact, so |U| < 2**53 (beyond, neighbours merge and the
# domain's top value was refused as outside it)
EXACT_INT = (1 << 53) - 1


def _bounds(etype: EventType, attr: str, given: Any) -> tuple[Any, Any]:
    """A domain (lo, hi) of numbers, whole ones for an int attribute: anything else named, with
    what to give instead (a float bound of an int domain was truncated without a word)."""
    where = f"{etype.name}.{attr}"
    try:
        lo, hi = given
    except (TypeError, ValueError):
        raise TypeError(f"{where}: a domain is (lo, hi), both ends included, not {given!r}") from None
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{where}: the domain's ends must be numbers, not {v!r}")
    if etype.schema[attr] is int:
        for v in (lo, hi):
            if isinstance(v, float) and not v.is_integer():
                raise ValueError(f"{where} is an int attribute: its domain's ends must be whole "
                                 f"numbers, not {v!r}")
            if abs(v) > EXACT_INT:
                raise ValueError(f"{where}: an int domain must lie within ±(2**53 - 1) (the values "
                                 f"are kept exactly up to there), not reach {v!r}")
        if lo > hi:
            raise ValueError(f"{where}: a domain (lo, hi) needs lo <= hi, not ({lo!r}, {hi!r})")
        return int(lo), int(hi)
    if not (lo < hi and math.isfinite(float(hi) - float(lo))):
        raise ValueError(f"{where}: a real domain (lo, hi) needs lo < hi and a finite width "
                         f"hi - lo, not ({lo!r}, {hi!r})")
    return float(lo), float(hi)


def guard_box(space: Space, etype: EventType, guard: str, params: Mapping[str, Any] | None = None
              ) -> tuple[Box, Callable[[tuple], bool]]:
    """(user-level box, local filter) of a guard over `etype`, whose attributes must be the
    space's dimensions. A guard with `or` is several boxes: subscribe once per alternative."""
    if tuple(d.name for d in space.dims) != tuple(etype.attrs):
        raise ValueError(f"{etype.name} has attributes {', '.join(etype.attrs)}, the space "
                         f"{', '.join(d.name for d in space.dims)}: build the space with space_of()")
    params = dict(params or {})
    for name, v in params.items():  # NaN admits nothing: refused when given, as by the brokers
        check_value_range(name, v)
    plan = compile_guard(guard, etype, {k: type(v) for k, v in params.items()})
    if plan.timed:
        raise ValueError("elapsed() guards (evolving subscriptions) are not supported on the "
                         "broker-less overlay")
    values = plan.evaluate(params)
    if len(plan.spec) > 1:  # named, since `!=` and `in` make alternatives the text does not show
        alts = "; ".join(_describe(constraints, values) for constraints, _, _ in plan.spec)
        raise ValueError(f"the guard {guard!r} has {len(plan.spec)} alternatives ({alts}); a "
                         "subscription of the broker-less overlay is one hyper-rectangle: subscribe "
                         "once per alternative")
    # no alternative at all (`0 <= x < 0`): a guard that never holds, an empty box, as a box
    # outside the domain is (the brokers take such a guard too)
    constraints, switch, _ = plan.spec[0] if plan.spec else ((), -1, None)
    ranges: dict[str, Interval] = {}
    empty = not plan.spec or switch >= 0 and not values[switch]
    for attr, var in constraints:
        ranges[attr] = values[var]
    box = space.box(ranges)
    if empty:
        box = tuple((lo, lo) for lo, _ in box)
    names = etype.attrs
    ints = [etype.schema[a] is int for a in names]

    def accept(point: tuple) -> bool:
        vals = tuple(int(v) if i else v for v, i in zip(point, ints))
        return plan.holds(vals, values)

    return box, accept


def _describe(constraints, values) -> str:
    """One alternative's intervals as guard text (`temp >= 6 and wind <= 2`)."""
    parts = []
    for attr, var in constraints:
        iv = values[var]
        if iv.lo == iv.hi and iv.lo_closed and iv.hi_closed:
            parts.append(f"{attr} == {iv.lo!r}")
            continue
        if math.isfinite(iv.lo):
            parts.append(f"{attr} {'>=' if iv.lo_closed else '>'} {iv.lo!r}")
        if math.isfinite(iv.hi):
            parts.append(f"{attr} {'<=' if iv.hi_closed else '<'} {iv.hi!r}")
    return " and ".join(parts) or "any event"


def subscribe(net, etype: EventType, guard: str, params: Mapping[str, Any] | None = None, **kw: Any) -> int:
    """`net.add_subscriber` for a guard: the box and the local filter from `guard_box`; other
    keywords (delay, out_degree, r, fp_budget, on_event) as there."""
    box, accept = guard_box(net.space, etype, guard, params)
    return net.add_subscriber(box, accept=accept, **kw)
