"""An asyncio program's `async def` given as `on_event`: refused at subscribe with how to hand
events to a loop, not called on a delivery thread where its coroutine is never awaited (the event
was counted as delivered and lost, with only a RuntimeWarning)."""

from __future__ import annotations

import functools
import logging
import textwrap
import warnings

import pytest

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime.transports.inproc import Simulation
from eventpy.runtime import overlay

Q = eventpy.EventType("aio.Q", firm=str, price=float)


async def handler(event):  # an asyncio program's callback
    raise AssertionError("never awaited by anyone")


class AsyncCall:
    async def __call__(self, event):
        raise AssertionError("never awaited by anyone")


@pytest.mark.parametrize("callback", [handler, functools.partial(handler), AsyncCall()],
                         ids=["async-def", "partial", "async-call"])
def test_subscribe_refuses_a_coroutine_function(fresh_overlay, callback):
    node = eventpy.connect()
    with pytest.raises(TypeError, match=r"async function.*call_soon_threadsafe"):
        node.subscribe(Q, "price < 10", on_event=callback)
    assert eventpy.stats()["sub_sent"] == 0  # nothing subscribed


def test_a_callback_returning_a_coroutine_is_a_callback_error(fresh_overlay, caplog, recwarn):
    node = eventpy.connect()
    node.subscribe(Q, "price < 10", on_event=lambda e: handler(e))  # not itself async: accepted
    with caplog.at_level(logging.ERROR, logger="eventpy.delivery"):
        node.publish(Q, firm="IBM", price=9.5)
        eventpy.drain(10.0)
    assert eventpy.stats()["callback_errors"] == 1
    said = [r.getMessage() for r in caplog.records if r.name == "eventpy.delivery"]
    assert len(said) == 1 and "nothing awaits" in said[0] and "run_coroutine_threadsafe" in said[0]
    # closed by eventpy, so Python has no "never awaited" coroutine left to warn about
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning) and "never awaited" in str(w.message)]


def test_plain_callbacks_are_untouched(fresh_overlay):
    node = eventpy.connect()
    got = []
    node.subscribe(Q, "price < 10", on_event=lambda e: got.append(e.price) or 1)  # any return value
    node.publish(Q, firm="IBM", price=9.5)
    eventpy.drain(10.0)
    assert got == [9.5] and eventpy.stats()["callback_errors"] == 0


def test_the_simulator_refuses_and_reports_alike(caplog):
    sim = Simulation(overlay.line(1))
    client = sim.client("c", "b0")
    with pytest.raises(TypeError, match="async function"):
        client.subscribe(Q, "price < 10", on_event=handler)
    client.subscribe(Q, "price < 10", on_event=lambda e: handler(e))
    sim.run()
    with caplog.at_level(logging.ERROR, logger="eventpy.delivery"), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        client.publish(Q, firm="IBM", price=9.5)
        sim.run()
    assert any("nothing awaits" in r.getMessage() for r in caplog.records)


ASYNC_DECORATED = '''
    import functools

    def on_loop(f):  # a decorator an asyncio programmer might write: the body becomes a coroutine
        @functools.wraps(f)
        async def wrapper(self, *args):
            f(self, *args)
        return wrapper

    class M:
        def __init__(self):
            self.limit = 5.0
            self.got = []

        @on_loop
        event def q(self, px: float) when px < self.limit:
            self.got.append(px)
'''


def test_an_event_method_made_async_by_its_decorator_is_reported(fresh_overlay, caplog):
    ns: dict = {"__name__": "aio_prog"}
    exec(compile(compile_source(textwrap.dedent(ASYNC_DECORATED), "aio_prog.epy", "aio_prog"),
                 "aio_prog.epy", "exec", dont_inherit=True), ns)
    m = ns["M"]()
    with caplog.at_level(logging.ERROR, logger="eventpy.delivery"):
        ns["M"].q(1.0)
        eventpy.drain(10.0)
    assert m.got == [] and eventpy.stats()["callback_errors"] == 1
    assert any("event method M.q returned coroutine" in r.getMessage() for r in caplog.records)


def test_events_for_a_loop_that_has_ended_are_said_once_not_per_event(fresh_overlay, caplog):
    """README's pattern (hand each event to the loop) in a service whose asyncio.run returned with
    its subscription open: every later event raised "Event loop is closed" in the callback, and
    each was logged with a traceback (13,000 of them at exit, for the exit drain's whole 5 s)."""
    import asyncio

    node = eventpy.connect()

    async def main():
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        return node.subscribe(Q, "price < 10", on_event=lambda e: loop.call_soon_threadsafe(queue.put_nowait, e))

    sub = asyncio.run(main())  # returns; the subscription stays open, its loop is closed
    with caplog.at_level(logging.ERROR, logger="eventpy.delivery"):
        for i in range(50):
            node.publish(Q, firm="IBM", price=float(i % 5))
        eventpy.drain(10.0)
    said = [r for r in caplog.records if r.name == "eventpy.delivery"]
    assert len(said) == 1 and "asyncio loop that is closed" in said[0].getMessage()
    assert said[0].exc_info is None  # no traceback: the message says it all
    assert eventpy.stats()["callback_errors"] == 50  # every dropped event is still counted
    sub.close()
