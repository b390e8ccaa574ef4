"""Bounds at the float limits: an int attribute's interval open at -inf and inf is indexed at
-1.8e308 and 1.8e308, and the leaves fastint rebuilds as quantiles of the endpoints were
interpolated between two such values,
which overflowed: numpy's RuntimeWarning on a broker's stderr for every rebuild (an internal
error, refusing the SUB, under -W error). The leaves are finite, and matching agrees with the
naive matcher."""

from __future__ import annotations

import math
import sys
import warnings

from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Pub, Sub
from eventpy.runtime.model import EventType, Interval

Q = EventType("extreme.Q", price=float, vol=int)
BIG = sys.float_info.max


def _deliveries(matcher: str) -> list:
    b = Broker("b", matcher=matcher)
    b.connect("p", "client")
    b.connect("c", "client")
    b.handle("p", Adv(Q.name, Q.to_wire()))
    for sid in range(1, 1100):  # past the 1,024 changes after which the leaves are rebuilt
        lo, hi = [(-math.inf, math.inf), (-BIG, 1.0), (0.0, BIG), (float(sid), sid + 1.0)][sid % 4]
        # (an int attribute's open bound at infinity is indexed at the float limit)
        # (half the endpoints at one limit and half at the other: a quantile between them)
        vol = Interval(-math.inf, False, math.inf, False)
        b.handle("c", Sub(Q.name, sid, (((("price", 0), ("vol", 1)), -1, ()),), [Interval(lo, False, hi, False), vol]))
    assert b.stats["refused"] == 0
    out = []
    for k, x in enumerate([-BIG, -1e308, -1.0, 0.5, 7.5, 500.5, 1e308, BIG, math.inf]):
        for vol in (7, 500, -2**63, 2**63 - 1):
            event = Pub(Q.name, (x, vol), "p", len(out) + 1, 0.0)
            out.append(sorted(s for _, m in b.handle("p", event) for s in m.sids))
    return out


def test_bounds_at_the_float_limits_rebuild_finite_leaves_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _deliveries("fastint")
    assert got == _deliveries("naive")
    assert all(got[:-4]) and got[-4:] == [[]] * 4  # every price bound is open: inf is in none
