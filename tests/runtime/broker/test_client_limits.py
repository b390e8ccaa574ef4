"""The broker's per-client limits, sans I/O (broker/_caps.py): what a client link holds is counted
through every way a subscription comes and goes, so a client is refused exactly past its limit."""

from __future__ import annotations

from eventpy.guards import compile_guard
from eventpy.runtime._client_caps import ClientCaps
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Refused, Sub, Unsub
from eventpy.runtime.model import EventType

Q = EventType("limits.Quote", sym=str, price=float)
PLAN = compile_guard("price < limit", Q, {"limit": float})


def _sub(sid: int, limit: float = 1.0) -> Sub:
    return Sub(Q.name, sid, PLAN.spec, PLAN.evaluate({"limit": limit}))


def _refused(out) -> list[int]:
    return [m.sid for _, m in out if type(m) is Refused]


def test_a_client_is_refused_exactly_past_its_limit_however_its_subscriptions_went():
    b = Broker("b0", caps=ClientCaps(max_subscriptions=2))
    b.connect("c", "client")
    b.handle("c", Adv(Q.name, Q.to_wire(), False))
    assert _refused(b.handle("c", _sub(1)) + b.handle("c", _sub(2))) == []
    assert _refused(b.handle("c", _sub(3))) == [3]
    assert _refused(b.handle("c", _sub(2, 5.0))) == []  # a SUB of a sid it holds replaces it: no more held
    b.handle("c", Unsub(Q.name, 1))
    assert _refused(b.handle("c", _sub(3))) == []  # the UNSUB made room
    assert _refused(b.handle("c", _sub(4))) == [4]
    b.disconnect("c")
    assert not b._held  # its count goes with it
    b.connect("c", "client")  # the same name again starts from nothing
    b.handle("c", Adv(Q.name, Q.to_wire(), False))
    assert _refused(b.handle("c", _sub(1)) + b.handle("c", _sub(2))) == []
    assert b.stats["limit_max_subscriptions"] == 2 and b.stats["refused"] == 2


def test_neighbor_brokers_and_brokers_without_limits_are_not_limited():
    b = Broker("b0", caps=ClientCaps(max_subscriptions=1))
    b.connect("b1", "broker")
    b.handle("b1", Adv(Q.name, Q.to_wire()))
    assert _refused(b.handle("b1", _sub(1)) + b.handle("b1", _sub(2))) == []  # summaries, not a client's
    free = Broker("b2")
    free.connect("c", "client")
    free.handle("c", Adv(Q.name, Q.to_wire(), False))
    assert _refused([x for i in range(50) for x in free.handle("c", _sub(i))]) == []
    assert free.describe()["limits"] == {} and not free._limited
