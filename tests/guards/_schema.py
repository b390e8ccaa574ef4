"""The schema, parameters and helpers the guard tests share."""

from __future__ import annotations

import math

import pytest

from eventpy.guards import GuardError, compile_guard
from eventpy.runtime.model import EventType

Q = EventType("stocks.Quote", firm=str, price=float, vol=int, hot=bool)
P = {"limit": float, "n": int, "name": str, "active": bool, "watch": frozenset}
ENV = {"limit": 100.0, "n": 2, "name": "IBM", "active": True, "watch": frozenset({"IBM", "HP"})}
NS_FUNCS = {"abs": abs, "min": min, "max": max, "round": round, "math": math}


def ev(firm="IBM", price=1.0, vol=1, hot=False) -> tuple:
    return Q.values_from({"firm": firm, "price": price, "vol": vol, "hot": hot})


def holds(plan, env, **event) -> bool:
    return plan.holds(ev(**event), plan.evaluate(env))


def err(text, params=P, mode="api", etype=Q) -> GuardError:
    with pytest.raises(GuardError) as e:
        compile_guard(text, etype, params, mode=mode)
    return e.value
