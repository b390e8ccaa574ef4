"""A summary sent upstream is the union of the subscriptions below a broker, and can outgrow a
frame that each of them fits in (QA: two subscribers with 60,000 names each; the edge broker's
UPD of 1 MiB could not be encoded, it closed the subscriber's link for it, and the subscriber
reconnected and re-sent the same, for ever). Past `max_summary` a broker subscribes upstream to
every event of the type instead: coverage holds, its own index still filters exactly."""

from __future__ import annotations

import pytest

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Pub, Sub
from eventpy.runtime.model import EventType
from eventpy.runtime.transports.tcp import BrokerServer
from eventpy.runtime.wire import encode

Q = EventType("Named", s=str, n=int)


def sub_msg(sid: int, names: set[str]) -> Sub:
    plan = compile_guard("s in names", Q, {"names": frozenset})
    return Sub(Q.name, sid, plan.spec, plan.evaluate({"names": frozenset(names)}))


@pytest.mark.parametrize("summary", ["attribute", "poset"])
def test_a_summary_past_the_limit_goes_upstream_as_every_event_of_the_type(summary):
    b = Broker("edge", summary=summary)
    b.max_summary = 1_500  # one set of 60 names is ~1,000 bytes, two are not
    b.connect("up", "broker")
    b.connect("c1", "client")
    b.connect("c2", "client")
    b.handle("up", Adv(Q.name, Q.to_wire()))
    (first,) = [m for link, m in b.handle("c1", sub_msg(1, {f"a{i}" for i in range(60)})) if link == "up"]
    assert first.values  # small: the exact summary
    out = b.handle("c2", sub_msg(2, {f"b{i}" for i in range(60)}))
    widened = [m for link, m in out if link == "up" and type(m) is Sub]
    assert len(widened) == 1 and widened[0].values == [] and b.stats["summary_widened"] == 1
    assert len(encode(widened[0])) < 100
    # events still reach exactly the subscribers whose guard holds
    got = b.handle("up", Pub(Q.name, ("b7", 1), "p", 1, 0.0))
    assert [(link, m.sids) for link, m in got] == [("c2", (2,))]
    assert b.handle("up", Pub(Q.name, ("zz", 2), "p", 2, 0.0)) == []
    # the summary changes while it stays past the limit: nothing more goes upstream
    assert not [m for link, m in b.handle("c1", sub_msg(3, {"c1", "c2"})) if link == "up"]


def test_a_tcp_broker_keeps_its_summaries_within_a_frame():
    b = Broker("edge")
    BrokerServer(b, "127.0.0.1", 0, {}, max_frame=4096)
    assert b.max_summary == 2048
