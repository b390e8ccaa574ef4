"""Mistakes that made a subscriber receive nothing without a word (no error, no log line, no
counter): each now says so where it is made, and a correct program hears nothing new."""

from __future__ import annotations

import logging
import threading

import pytest

import eventpy
from eventpy.compiler import compile_source

Q = eventpy.EventType("mistakes.Q", firm=str, n=int, price=float)


@pytest.fixture
def node():
    eventpy.shutdown()
    yield eventpy.connect()
    eventpy.shutdown()


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_guard_that_can_never_hold_is_said_once(node, caplog):
    with caplog.at_level(logging.WARNING, logger="eventpy"):
        for _ in range(3):
            node.subscribe(Q, "n > 5 and n < 3 and price < limit", params={"limit": 1.0})
    said = _warnings(caplog)
    assert said == ["the guard 'n > 5 and n < 3 and price < limit' of mistakes.Q can never hold "
                    "(n > 5 and n < 3 admits no value), so this subscription receives nothing"]


def test_a_guard_of_an_epy_class_that_can_never_hold_is_said_once_for_all_objects(node, caplog):
    source = ("class Desk:\n    def __init__(self):\n        self.limit = 3.0\n\n"
              "    event def quote(self, firm: str, price: float) when price > 5 and price < self.limit and price < 2:\n"
              "        pass\n")
    ns = {"__name__": "desk_never"}
    exec(compile(compile_source(source, "desk_never.epy", "desk_never"), "desk_never.epy", "exec"), ns)
    eventpy.set_default_node(node)
    with caplog.at_level(logging.WARNING, logger="eventpy"):
        desks = [ns["Desk"]() for _ in range(3)]
    assert len(_warnings(caplog)) == 1 and "price > 5 and price < 2 admits no value" in _warnings(caplog)[0]
    for d in desks:
        d.close()


@pytest.mark.parametrize("guard", [
    "n > 5 and n < 3 or price < 1",  # one alternative can hold
    "n > a and n < b",  # parameters may make it hold
    "False",  # said on purpose
    "firm == 'IBM' and price < limit",
])
def test_a_guard_that_can_hold_is_not_warned_of(node, caplog, guard):
    with caplog.at_level(logging.WARNING, logger="eventpy"):
        node.subscribe(Q, guard, params={"a": 5, "b": 3, "limit": 1.0})
    assert _warnings(caplog) == []


def test_a_drain_that_times_out_on_a_blocking_callback_names_it(node):
    # before: "drain: callbacks of node node-1 still running after 1s", with ten subscriptions
    # and no word of which callback held it
    release = threading.Event()
    started = threading.Event()

    def wait_for_the_operator(ev):
        started.set()
        release.wait(30)

    node.subscribe(Q, "price < 10", on_event=wait_for_the_operator)
    node.subscribe(Q, "price < 10", on_event=lambda ev: None)
    node.publish(Q, firm="IBM", n=1, price=1.0)
    try:
        assert started.wait(30)
        with pytest.raises(TimeoutError, match=r"still running after 1s: the event callback "
                           r".*wait_for_the_operator' has run for \d+\.\ds on mistakes\.Q\(firm='IBM', n=1, price=1\.0\)"):
            eventpy.drain(1)
    finally:
        release.set()
    eventpy.drain(30)
    with pytest.raises(TimeoutError) as info:  # a later timeout does not name a callback that returned
        pass_through = threading.Event()
        node.subscribe(Q, "price > 100", on_event=lambda ev: pass_through.wait(30))
        node.publish(Q, firm="IBM", n=1, price=101.0)
        try:
            eventpy.drain(1)
        finally:
            pass_through.set()
    assert "wait_for_the_operator" not in str(info.value)


@pytest.mark.parametrize("variable", ["EVENTPY_BROKERS", "EVENTPY_BROKER_URL", "eventpy_broker"])
def test_a_misspelt_broker_variable_is_said_when_the_embedded_overlay_is_taken(monkeypatch, caplog, variable):
    # the publisher in one process and the subscriber in another each ran on an embedded
    # overlay of their own, without a word
    from eventpy.runtime import _mistakes

    monkeypatch.setattr(_mistakes, "_said_embedded", False)
    monkeypatch.delenv("EVENTPY_BROKER", raising=False)
    monkeypatch.setenv(variable, "tcp://127.0.0.1:7100")
    eventpy.shutdown()
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy"):
            eventpy.connect()
            eventpy.connect()
    finally:
        eventpy.shutdown()
    assert _warnings(caplog) == [f"{variable} is set, but EventPy reads EVENTPY_BROKER: this process runs "
                                 "on an embedded overlay of its own, which no other process reaches"]


def test_other_eventpy_variables_are_not_taken_for_a_misspelt_broker(monkeypatch, caplog):
    from eventpy.runtime import _mistakes

    monkeypatch.setattr(_mistakes, "_said_embedded", False)
    monkeypatch.setenv("EVENTPY_FUZZ", "1")
    monkeypatch.setenv("EVENTPY_SECRET", "s")
    eventpy.shutdown()
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy"):
            eventpy.connect()
    finally:
        eventpy.shutdown()
    assert _warnings(caplog) == []


def test_callbacks_that_raise_are_counted_in_stats(node, caplog):
    """A callback that raises is logged with its traceback and the next events still come; an
    operator watching counters (not logs) sees it in stats()['callback_errors']."""
    got = []

    def flaky(ev):
        if ev.n % 2:
            raise ValueError(f"odd {ev.n}")
        got.append(ev.n)

    assert eventpy.stats()["callback_errors"] == 0
    node.subscribe(Q, "n >= 0", on_event=flaky)
    eventpy.drain(5.0)
    with caplog.at_level(logging.ERROR, logger="eventpy"):
        for n in range(5):
            node.publish(Q, firm="a", n=n, price=1.0)
        eventpy.drain(5.0)
    assert got == [0, 2, 4]
    s = eventpy.stats()
    assert s["callback_errors"] == 2 and s["delivered"] == 5
