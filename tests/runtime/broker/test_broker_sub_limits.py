"""A SUB within the frame limit but extreme (runtime._sub_limits): one whose attribute
expressions hold hundreds of thousands of nodes held the broker 5 s to compile and made every
later event cost tens of milliseconds; it is refused with a logged reason, before most of it is
compiled, and the broker serves the others as before."""

from __future__ import annotations

import logging

from eventpy.guards import compile_guard
from eventpy.runtime._sub_limits import MAX_EXPRESSION_NODES
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Pub, Sub
from eventpy.runtime.model import EventType
from eventpy.runtime.wire import FrameDecoder, encode

Q = EventType("limits.Quote", firm=str, price=float)


def _sum_tree(terms: int, const: float) -> tuple:
    """`price + price + ... < const`: 2 * terms + 1 nodes, nested `terms` deep."""
    left: tuple = ("a", 1)
    for _ in range(terms - 1):
        left = ("+", left, ("a", 1))
    return ("<", left, ("c", const))


def _broker() -> Broker:
    b = Broker("b")
    b.connect("pub", "client")
    b.connect("hostile", "client")
    b.connect("c", "client")
    b.handle("pub", Adv(Q.name, Q.to_wire()))
    return b


def test_a_sub_with_too_many_expression_nodes_is_refused_and_the_broker_serves_the_others(caplog):
    b = _broker()
    # 1,024 conjunctions of 4 distinct trees of 61 nodes: 250,000 nodes in a frame under 1 MiB
    spec = tuple(((), -1, tuple(_sum_tree(30, float(4 * i + k)) for k in range(4))) for i in range(1024))
    frame = encode(Sub(Q.name, 1, spec, []))
    assert len(frame) < 1 << 20
    (msg,) = FrameDecoder().feed(frame)
    with caplog.at_level(logging.WARNING, logger="eventpy.broker"):
        assert b.handle("hostile", msg) == []
    assert b.stats["refused"] == 1 and b.subscription_count() == 0
    assert f"more than {MAX_EXPRESSION_NODES} nodes" in caplog.text

    plan = compile_guard("price * 2 < 10", Q)
    b.handle("c", Sub(Q.name, 1, plan.spec, plan.evaluate({})))
    sends = b.handle("pub", Pub(Q.name, ("IBM", 1.0), "pub", 1, 0.0))
    assert [(link, m.sids) for link, m in sends] == [("c", (1,))]


def test_a_sub_at_the_expression_limit_is_accepted():
    b = _broker()
    per_tree = 2 * 30 + 1
    n = MAX_EXPRESSION_NODES // per_tree
    spec = tuple(((), -1, (_sum_tree(30, float(i)),)) for i in range(n))
    b.handle("hostile", Sub(Q.name, 1, spec, []))
    assert b.stats["refused"] == 0 and b.subscription_count() == 1
    sends = b.handle("pub", Pub(Q.name, ("IBM", 0.1), "pub", 1, 0.0))
    assert [(link, m.sids) for link, m in sends] == [("hostile", (1,))]
