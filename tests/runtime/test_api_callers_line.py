"""A mistake in the arguments of subscribe, connect and advertise is the caller's: the traceback
ends on the caller's line (as publish and update already did, eventpy/runtime/_boundary.py), not
inside eventpy's guard compiler, where it reads like a crash of eventpy."""

from __future__ import annotations

import sys
import traceback

import pytest

import eventpy

Quote = eventpy.EventType("stocks.Quote", firm=str, price=float)


@pytest.fixture(autouse=True)
def _fresh():
    yield
    eventpy.shutdown()


def _last_frame(info):
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    return last.filename, last.lineno


@pytest.mark.parametrize("args, kwargs, error", [
    ((Quote, "'IBM' < price"), {}, eventpy.GuardError),
    ((Quote, "price < limit"), {}, eventpy.GuardError),  # no parameter limit given
    ((Quote, "price < open(limit)"), {"params": {"limit": 1.0}}, eventpy.GuardError),
    (("stocks.Quote", "price < 1"), {}, TypeError),
    ((Quote, 3), {}, TypeError),
    ((Quote, "price < limit"), {"params": [("limit", 1.0)]}, TypeError),
    ((Quote, "price < limit"), {"params": {"limit": float("nan")}}, ValueError),
])
def test_a_subscribe_the_guard_or_types_refuse_is_raised_from_the_callers_line(args, kwargs, error):
    node = eventpy.connect()
    line = sys._getframe().f_lineno + 2
    with pytest.raises(error) as info:
        node.subscribe(*args, **kwargs)
    assert _last_frame(info) == (__file__, line)


@pytest.mark.parametrize("kwargs, error", [({"mode": "fast"}, ValueError), ({"url": 7100}, TypeError),
                                           ({"url": "http://h:1"}, ValueError)])
def test_a_connect_with_a_wrong_argument_is_raised_from_the_callers_line(kwargs, error):
    line = sys._getframe().f_lineno + 2
    with pytest.raises(error) as info:
        eventpy.connect(**kwargs)
    assert _last_frame(info) == (__file__, line)


def test_an_advertise_of_something_else_is_raised_from_the_callers_line():
    node = eventpy.connect()
    line = sys._getframe().f_lineno + 2
    with pytest.raises(TypeError) as info:
        node.advertise("stocks.Quote")
    assert _last_frame(info) == (__file__, line)


@pytest.mark.parametrize("value, error, words", [
    ("garbage", ValueError, "EVENTPY_BROKER: cannot attach to 'garbage': use tcp://HOST:PORT"),
    ("tcp://127.0.0.1:1", ConnectionError, "EVENTPY_BROKER: cannot attach to tcp://127.0.0.1:1: "),
])
def test_a_broker_url_from_the_environment_is_named_as_such(monkeypatch, value, error, words):
    # connect() without a URL: the program never wrote 'garbage', so the message says where it is
    monkeypatch.setenv("EVENTPY_BROKER", value)
    with pytest.raises(error) as info:
        eventpy.connect()
    assert str(info.value).startswith(words)
    monkeypatch.delenv("EVENTPY_BROKER")
    with pytest.raises(error) as info:
        eventpy.connect(value)
    assert "EVENTPY_BROKER" not in str(info.value)
