"""The sans-I/O broker on its own: routing along advertisements, propagation of summaries
(Fig. 6 lines 39-47), stale updates, and refusal of malformed messages."""

from __future__ import annotations

import logging

import pytest

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Flush, FlushAck, Pub, Refused, Sub, Unadv, Unsub, Upd
from eventpy.runtime.model import EventType, Interval, ValueSet

Q = EventType("Quote", firm=str, price=float)
ADV = Adv("Quote", Q.to_wire())


def sub_msg(guard: str, sid: int = 1, **params):
    plan = compile_guard(guard, Q, {k: type(v) for k, v in params.items()})
    return Sub("Quote", sid, plan.spec, plan.evaluate(params)), plan


def edge(mode="parametric", matcher="fastint", summary="attribute") -> Broker:
    b = Broker("edge", mode=mode, matcher=matcher, summary=summary)
    b.connect("up", "broker")
    b.connect("c1", "client")
    b.connect("c2", "client")
    b.handle("up", ADV)  # a publisher lives upstream
    return b


def kinds(sends):
    return [(link, type(m).__name__) for link, m in sends]


@pytest.mark.parametrize("matcher", ["naive", "poset", "fastint"])
def test_subscription_goes_upstream_and_events_come_down(matcher):
    b = edge(matcher=matcher)
    msg, _ = sub_msg("firm == 'IBM' and price < limit", limit=10.0)
    out = b.handle("c1", msg)
    assert kinds(out) == [("up", "Sub")]
    up = out[0][1]
    assert up.values == [ValueSet(frozenset({"IBM"})), Interval(float("-inf"), True, 10.0, False)]
    out = b.handle("up", Pub("Quote", ("IBM", 9.0), "p", 1, 0.0))
    assert kinds(out) == [("c1", "Pub")] and out[0][1].sids == (1,)
    assert b.handle("up", Pub("Quote", ("IBM", 11.0), "p", 2, 0.0)) == []


def test_upd_changes_the_summary_by_broker_variable_updates():
    b = edge()
    msg, plan = sub_msg("firm == 'IBM' and price < limit", limit=10.0)
    b.handle("c1", msg)
    values = plan.evaluate({"limit": 10.0})
    changed = plan.recompute({"limit": 20.0}, values, ["limit"])
    out = b.handle("c1", Upd("Quote", 1, {var: (v, 1) for var, v in changed}))
    assert kinds(out) == [("up", "Upd")]  # structure unchanged: an UPD, not SUB + UNSUB
    (var, (value, seq)), = out[0][1].changes.items()
    assert value == Interval(float("-inf"), True, 20.0, False) and seq == 1


def test_resub_mode_resubscribes_upstream():
    b = edge(mode="resub")
    b.handle("c1", sub_msg("price < limit", limit=10.0)[0])
    out = b.handle("c1", sub_msg("price < limit", sid=2, limit=20.0)[0])
    assert kinds(out) == [("up", "Sub"), ("up", "Unsub")]
    out = b.handle("c1", Unsub("Quote", 1))
    assert out == []  # the summary (price < 20) did not change


def test_covered_subscription_does_not_travel():
    b = edge()
    b.handle("c1", sub_msg("price < 10")[0])
    assert b.handle("c2", sub_msg("price < 5")[0]) == []  # covered: summary unchanged (Fig. 4)


def test_stale_update_is_dropped():
    b = edge()
    msg, plan = sub_msg("price < limit", limit=10.0)
    b.handle("c1", msg)
    b.handle("c1", Upd("Quote", 1, {0: (Interval(float("-inf"), True, 30.0, False), 2)}))
    b.handle("c1", Upd("Quote", 1, {0: (Interval(float("-inf"), True, 5.0, False), 1)}))  # older
    assert b.stats["stale_upd"] == 1
    assert b.handle("up", Pub("Quote", ("X", 20.0), "p", 1, 0.0))  # the newer value (30) holds


def test_subscriptions_only_travel_toward_advertisers():
    b = Broker("b")
    b.connect("left", "broker")
    b.connect("right", "broker")
    b.connect("c", "client")
    assert kinds(b.handle("right", ADV)) == [("left", "Adv")]
    out = b.handle("c", sub_msg("price < 1")[0])
    assert kinds(out) == [("right", "Sub")]  # not to "left", which has no publisher
    out = b.handle("right", Unadv("Quote"))
    assert ("left", "Unadv") in kinds(out) and ("right", "Unsub") in kinds(out)


def test_a_subscribers_schema_makes_no_route_for_subscriptions():
    """Every subscriber advertised the type (to tell its broker the schema), so brokers forwarded
    that ADV and then routed summaries towards brokers where only subscribers were."""
    b = Broker("b")
    b.connect("left", "broker")
    b.connect("right", "broker")
    b.connect("c", "client")
    b.connect("d", "client")
    assert b.handle("c", Adv("Quote", Q.to_wire(), publishes=False)) == []  # goes no further
    assert b.handle("c", sub_msg("price < 1")[0]) == []  # no publisher anywhere: stays here
    # a publisher behind "right": the subscription goes there, and only there
    assert sorted(kinds(b.handle("right", ADV))) == [("left", "Adv"), ("right", "Sub")]
    assert kinds(b.handle("d", Adv("Quote", Q.to_wire(), publishes=False))) == []
    assert {t for t, _ in kinds(b.handle("d", sub_msg("price > 5", sid=2)[0]))} == {"right"}
    refused = b.handle("d", Adv("Quote", (("firm", "int"),), publishes=False))
    assert kinds(refused) == [("d", "Refused")]  # a schema other than the type's is refused all the same


@pytest.mark.parametrize("mode", ["parametric", "resub"])
def test_a_publisher_that_comes_back_gets_the_subscriptions_again(mode):
    # a publisher process leaves (UNADV) and another starts on the same broker (ADV): the
    # subscription must travel again, or every later event stays on the other side
    b = Broker("b", mode=mode)
    b.connect("up", "broker")
    b.connect("c", "client")
    b.handle("up", ADV)
    assert kinds(b.handle("c", sub_msg("price < 1")[0])) == [("up", "Sub")]
    assert ("up", "Unsub") in kinds(b.handle("up", Unadv("Quote")))
    assert kinds(b.handle("up", ADV)) == [("up", "Sub")]
    assert kinds(b.handle("up", Pub("Quote", ("X", 0.5), "p", 1, 0.0))) == [("c", "Pub")]


def test_no_event_goes_back_to_the_broker_it_came_from():
    b = Broker("b")
    b.connect("left", "broker")
    b.connect("right", "broker")
    b.handle("left", ADV)
    b.handle("right", ADV)
    b.handle("left", sub_msg("price < 10")[0])
    assert b.handle("left", Pub("Quote", ("X", 1.0), "p", 1, 0.0)) == []
    assert kinds(b.handle("right", Pub("Quote", ("X", 1.0), "p", 2, 0.0))) == [("left", "Pub")]


def test_flush_waits_for_the_links_the_senders_messages_went_to():
    # (test_flushes.py has the rest: links it did not reach, budgets, silent peers named)
    b = edge()
    b.handle("c2", sub_msg("price < 10")[0])  # to "up"
    out = b.handle("c2", Flush(("c2", 1)))
    assert sorted(link for link, _ in out) == ["up"]
    assert kinds(b.handle("up", FlushAck(("c2", 1)))) == [("c2", "FlushAck")]


def test_disconnect_forgets_the_link_and_updates_upstream():
    b = edge()
    b.handle("c1", sub_msg("price < 10")[0])
    out = b.disconnect("c1")
    assert kinds(out) == [("up", "Unsub")]
    assert b.subscription_count() == 0


@pytest.mark.parametrize("bad", [
    Sub("Quote", 1, (((("nope", 0),), -1, ()),), [Interval(0, True, 1, True)]),
    Sub("Quote", 1, (((("price", 5),), -1, ()),), [Interval(0, True, 1, True)]),
    Sub("Quote", 1, (((("price", 0),), -1, ()),), [ValueSet(frozenset({1}))]),
    Sub("Quote", 1, (((), -1, (("f", "open", ("c", 1)),)),), []),
    Sub("Quote", 1, (((), -1, (("<", ("a", 9), ("c", 1)),)),), []),
    Sub("Quote", "x", (), []),
    Sub("Quote", 1, "garbage", []),
    Sub("Nope", 1, (), []),
    Upd("Quote", 99, {0: (1, 1)}),
    Unsub("Quote", 99),
    Pub("Quote", ("IBM",), "p", 1, 0.0),
    Pub("Quote", ("IBM", "cheap"), "p", 1, 0.0),  # a str where the schema has a float (fuzzing found it)
    Pub("Quote", (1, 2.0), "p", 1, 0.0),
    Pub("Quote", ("IBM", True), "p", 1, 0.0),
    Adv("Bad", (("x", "complex"),)),
    "not a message",
])
def test_malformed_messages_are_refused_not_fatal(bad, caplog):
    b = edge()
    b.handle("c1", sub_msg("price < 10")[0])
    with caplog.at_level(logging.WARNING, logger="eventpy.broker"):
        out = b.handle("c2", bad)
    # a client's refused advertisement is answered (its events would go nowhere), nothing else is
    assert kinds(out) == ([("c2", "Refused")] if isinstance(bad, Adv) else [])
    assert b.stats["refused"] == 1
    assert "refused" in caplog.text
    assert kinds(b.handle("up", Pub("Quote", ("IBM", 1.0), "p", 1, 0.0))) == [("c1", "Pub")]


def test_a_pub_of_a_type_never_advertised_is_logged_once_per_link_and_type(caplog, monkeypatch):
    b = edge()
    with caplog.at_level(logging.WARNING, logger="eventpy.broker"):
        for seq in range(1, 4):
            assert b.handle("up", Pub("Trade", ("IBM", 1.0), "p", seq, 0.0)) == []
        b.handle("c1", Pub("Trade", ("IBM", 1.0), "q", 1, 0.0))
        b.handle("up", Pub("Bond", (1,), "p", 4, 0.0))
    notes = [r.getMessage() for r in caplog.records if "never advertised" in r.getMessage()]
    assert len(notes) == 3  # (up, Trade), (c1, Trade), (up, Bond): not one per event
    assert "dropped a PUB of 'Trade' from 'up'" in notes[0]
    assert b.stats["pub_unknown_type"] == 5 and b.stats["refused"] == 0
    # a peer sending ever new names cannot grow what the broker remembers
    monkeypatch.setattr("eventpy.runtime.broker._broker.MAX_UNKNOWN_PUB_NOTES", 4)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="eventpy.broker"):
        for i in range(10):
            b.handle("up", Pub(f"T{i}", (1,), "p", 10 + i, 0.0))
    assert len(b._unknown_pubs) == 4 and len(caplog.records) == 1


def test_bad_update_values_are_refused():
    b = edge()
    b.handle("c1", sub_msg("price < limit", limit=1.0)[0])
    assert b.handle("c1", Upd("Quote", 1, {0: ("ten", 1)})) == []
    assert b.handle("c1", Upd("Quote", 1, {7: (Interval(0, True, 1, True), 1)})) == []
    assert b.stats["refused"] == 2


def test_unknown_mode_matcher_summary():
    with pytest.raises(ValueError, match="unknown mode"):
        Broker(mode="magic")
    with pytest.raises(ValueError, match="unknown matcher"):
        Broker(matcher="magic")
    with pytest.raises(ValueError, match="unknown summary"):
        Broker(summary="magic")


def test_attribute_expressions_are_evaluated_at_the_broker():
    b = edge()
    b.handle("c1", sub_msg("abs(price - x) < 2", x=10.0)[0])
    assert b.handle("up", Pub("Quote", ("A", 11.0), "p", 1, 0.0))
    assert b.handle("up", Pub("Quote", ("A", 13.0), "p", 2, 0.0)) == []


def test_an_internal_error_is_logged_and_the_broker_keeps_serving(caplog, monkeypatch):
    b = edge()
    b.handle("c1", sub_msg("price < 10")[0])
    ts = b.types["Quote"]
    real = ts.matcher.match
    monkeypatch.setattr(ts.matcher, "match", lambda values: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="eventpy.broker"):
        assert b.handle("up", Pub("Quote", ("IBM", 1.0), "p", 1, 0.0)) == []
    assert b.stats["internal_errors"] == 1 and "ZeroDivisionError" in caplog.text
    monkeypatch.setattr(ts.matcher, "match", real)
    assert kinds(b.handle("up", Pub("Quote", ("IBM", 1.0), "p", 2, 0.0))) == [("c1", "Pub")]


def test_a_schema_refused_by_a_broker_further_on_reaches_the_publishers():
    """A publisher's ADV refused by a broker beyond its own (a subscriber there told another
    schema first) was only logged in that broker's log: the publisher's events went nowhere and
    its program saw nothing. The refusal now travels back along the type's publishers."""
    far = Broker("far")
    far.connect("mid", "broker")
    far.connect("s", "client")
    far.handle("s", Adv("Quote", Q.to_wire(), publishes=False))  # the subscriber's schema
    other = Adv("Quote", (("firm", "str"), ("price", "int")))
    refused = far.handle("mid", other)
    assert kinds(refused) == [("mid", "Refused")]
    assert "broker far" in refused[0][1].reason and "known as" in refused[0][1].reason
    mid = Broker("mid")
    mid.connect("far", "broker")
    mid.connect("p", "client")  # the publisher
    mid.connect("q", "client")  # a subscriber of the publisher's schema: not told
    mid.handle("q", Adv("Quote", other.schema, publishes=False))
    assert kinds(mid.handle("p", other)) == [("far", "Adv")]
    assert kinds(mid.handle("far", refused[0][1])) == [("p", "Refused")]
    assert mid.handle("far", Refused("Nope", "broker far: unknown here")) == []  # a type it forgot
