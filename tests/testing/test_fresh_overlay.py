"""eventpy.testing.fresh_overlay: each block starts from nothing and leaves nothing behind."""

import os
import warnings

import pytest

import eventpy
from eventpy.testing import CallbackErrors, LeftoverSubscriptions, fresh_overlay

Quote = eventpy.EventType("testing.Quote", firm=str, price=float)


def test_a_subscription_of_an_earlier_block_gets_nothing_and_counts_nothing():
    with fresh_overlay() as first:
        early = []
        first.node.subscribe(Quote, "price < 10", on_event=early.append)  # never closed
        first.node.publish(Quote, firm="IBM", price=1.0)
        eventpy.drain(5)
        assert len(early) == 1
    with fresh_overlay() as second:
        late = []
        second.node.subscribe(Quote, "price < 10", on_event=late.append)
        second.node.publish(Quote, firm="IBM", price=2.0)
        eventpy.drain(5)
        assert len(late) == 1 and len(early) == 1
        counts = eventpy.stats()
        assert counts["published"] == 1 and counts["delivered"] == 1 and counts["sub_sent"] == 1


def test_another_schema_under_the_same_name_in_the_next_block():
    with fresh_overlay() as first:
        first.node.publish(eventpy.EventType("testing.S", n=int), n=1)
        eventpy.drain(5)
    with fresh_overlay() as second:
        other = eventpy.EventType("testing.S", n=str, m=int)
        got = []
        second.node.subscribe(other, "m > 0", on_event=got.append)
        second.node.publish(other, n="a", m=1)
        eventpy.drain(5)
        assert [e["n"] for e in got] == ["a"]


def test_a_block_that_raises_leaves_no_node_open():
    with pytest.raises(ZeroDivisionError):
        with fresh_overlay() as overlay:
            overlay.node.subscribe(Quote, "price < 10", on_event=lambda e: None)
            1 / 0
    assert overlay.node._local.closed
    assert eventpy.stats()["sub_sent"] == 0  # the counters went with the overlay


def test_subscriptions_opened_before_are_warned_of_and_closed():
    eventpy.shutdown()
    outside = eventpy.connect().subscribe(Quote, "price < 10")
    with pytest.warns(LeftoverSubscriptions, match=r"closed 1 subscription\(s\) opened before it \(testing.Quote\)"):
        with fresh_overlay():
            assert outside.closed
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left open: no warning
        with fresh_overlay():
            pass


def test_the_default_node_of_epy_objects_is_the_blocks_node():
    with fresh_overlay(mode="resub") as overlay:
        assert eventpy.default_node() is overlay.node and overlay.node.mode == "resub"
    with fresh_overlay() as overlay:
        assert eventpy.default_node() is overlay.node and overlay.node.mode == "parametric"


def test_eventpy_broker_is_set_aside_and_given_back(monkeypatch):
    monkeypatch.setenv("EVENTPY_BROKER", "tcp://127.0.0.1:9")  # nothing listens there
    with fresh_overlay():
        assert "EVENTPY_BROKER" not in os.environ
        eventpy.connect().publish(Quote, firm="IBM", price=1.0)  # the embedded overlay, no ConnectionError
    assert os.environ["EVENTPY_BROKER"] == "tcp://127.0.0.1:9"


def _raise(event):
    raise RuntimeError(f"cannot take {event['firm']}")


def test_a_callback_that_raised_fails_the_block_with_its_traceback():
    with pytest.raises(CallbackErrors, match=r"(?s)1 event callback\(s\) raised.*RuntimeError: cannot take IBM"):
        with fresh_overlay() as overlay:
            overlay.node.subscribe(Quote, "price < 10", on_event=_raise)
            overlay.node.publish(Quote, firm="IBM", price=1.0)
            eventpy.drain(5)


def test_a_callback_error_the_block_expected_and_cleared_passes():
    with fresh_overlay() as overlay:
        overlay.node.subscribe(Quote, "price < 10", on_event=_raise)
        overlay.node.publish(Quote, firm="IBM", price=1.0)
        eventpy.drain(5)
        assert len(overlay.callback_errors) == 1
        overlay.callback_errors.clear()


def test_the_blocks_own_failure_is_raised_not_the_callbacks():
    with pytest.raises(AssertionError, match="the test's own"):
        with fresh_overlay() as overlay:
            overlay.node.subscribe(Quote, "price < 10", on_event=_raise)
            overlay.node.publish(Quote, firm="IBM", price=1.0)
            eventpy.drain(5)
            raise AssertionError("the test's own")


def test_wrong_options_are_refused_before_anything_is_shut_down():
    with pytest.raises(ValueError, match="mode"):
        with fresh_overlay(mode="fast"):
            pass
    with pytest.raises(TypeError, match="clock"):
        with fresh_overlay(clock=12.0):
            pass
