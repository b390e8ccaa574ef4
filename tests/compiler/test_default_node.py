"""Which node `.epy` objects and `Class.event(...)` use: `eventpy.default_node()` (connected on
first use) or the one a program gives with `eventpy.set_default_node(node)`."""

from __future__ import annotations

import traceback

import pytest

import eventpy
from eventpy.runtime import _process

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

WATCH = '''
    class Watch:
        def __init__(self, limit: float):
            self.limit = limit
            self.got = []

        event def quote(self, firm: str, price: float) when price < self.limit:
            self.got.append((firm, price))
'''


def _live_nodes() -> list:
    with _process._lock:
        return list(_process._nodes)


def _frames_in_eventpy(e: BaseException) -> list[str]:
    return [f.filename for f in traceback.extract_tb(e.__traceback__) if "/eventpy/" in f.filename]


def test_objects_and_class_events_go_through_the_node_the_program_gives():
    Watch = load(WATCH, "default_given")["Watch"]
    desk = eventpy.connect(name="desk-1")
    assert eventpy.set_default_node(desk) is None  # nothing was connected for objects before
    w = Watch(10.0)
    Watch.quote("IBM", 9.0)
    Watch.quote("IBM", 11.0)
    eventpy.drain(5)
    assert w.got == [("IBM", 9.0)]
    assert eventpy.default_node() is desk
    assert desk.stats()["sub_sent"] == 1 and desk.stats()["published"] == 2
    assert _live_nodes() == [desk]  # one connection: no hidden node beside it
    w.limit = 20.0  # the object's updates go out on its node too
    eventpy.drain(5)
    assert desk.stats()["upd_sent"] == 1


def test_the_publisher_advertises_on_the_connection_its_class_events_use():
    """README's publisher: `eventpy.default_node().advertise(Class.event)`, then `Class.event(...)`."""
    Watch = load(WATCH, "default_publisher")["Watch"]
    node = eventpy.default_node()
    node.advertise(Watch.quote)
    w = Watch(10.0)
    Watch.quote("ORCL", 5.0)
    eventpy.drain(5)
    assert w.got == [("ORCL", 5.0)]
    assert _live_nodes() == [node]
    assert eventpy.default_node() is node


def test_objects_made_before_keep_their_node():
    Watch = load(WATCH, "default_before")["Watch"]
    early = Watch(10.0)
    first = eventpy.default_node()  # connected for `early`
    desk = eventpy.connect(name="desk-2")
    assert eventpy.set_default_node(desk) is first  # returned: the program may close or restore it
    late = Watch(10.0)
    Watch.quote("IBM", 5.0)  # through desk, to both
    eventpy.drain(5)
    assert early.got == late.got == [("IBM", 5.0)]
    early.limit = 3.0
    eventpy.drain(5)
    assert first.stats()["upd_sent"] == 1 and desk.stats()["upd_sent"] == 0
    late.limit = 4.0
    eventpy.drain(5)
    assert desk.stats()["upd_sent"] == 1
    assert sorted(n.name for n in eventpy.runtime.api._nodes_of(early)) == [first.name]
    assert sorted(n.name for n in eventpy.runtime.api._nodes_of(late)) == ["desk-2"]


def test_a_closed_given_node_is_an_error_from_the_programs_line_not_a_new_connection():
    Watch = load(WATCH, "default_closed")["Watch"]
    desk = eventpy.connect(name="desk-3")
    eventpy.set_default_node(desk)
    desk.close()
    with pytest.raises(RuntimeError, match=r"node desk-3, given to eventpy.set_default_node\(\), is closed") as made:
        Watch(10.0)
    assert _frames_in_eventpy(made.value) == []
    with pytest.raises(RuntimeError, match="desk-3") as published:
        Watch.quote("IBM", 1.0)
    assert _frames_in_eventpy(published.value) == []
    with pytest.raises(RuntimeError, match="desk-3"):
        eventpy.default_node()
    assert _live_nodes() == []  # nothing connected behind the program's back
    assert eventpy.set_default_node(None) is None  # the closed one is not handed back
    w = Watch(10.0)  # a fresh node again
    Watch.quote("IBM", 1.0)
    eventpy.drain(5)
    assert w.got == [("IBM", 1.0)]


def test_what_set_default_node_refuses():
    with pytest.raises(TypeError, match="needs an eventpy.Node .* got str"):
        eventpy.set_default_node("tcp://127.0.0.1:7100")
    closed = eventpy.connect(name="gone")
    closed.close()
    with pytest.raises(ValueError, match="node gone is closed"):
        eventpy.set_default_node(closed)


def test_shutdown_forgets_the_given_node():
    Watch = load(WATCH, "default_shutdown")["Watch"]
    desk = eventpy.connect(name="desk-4")
    eventpy.set_default_node(desk)
    eventpy.shutdown()  # closes desk: the next object gets a fresh node, as the next connect() would
    w = Watch(10.0)
    assert eventpy.default_node() is not desk
    Watch.quote("IBM", 2.0)
    eventpy.drain(5)
    assert w.got == [("IBM", 2.0)]


def test_publish_and_subscribe_take_an_event_method_as_advertise_does():
    """`node.advertise(Watch.quote)` was accepted and `node.publish(Watch.quote, ...)` raised
    'publish needs an EventType, got function' (subscribe the same)."""
    Watch = load(WATCH, "default_methods")["Watch"]
    node = eventpy.connect()
    got = []
    node.subscribe(Watch.quote, "price > 5", on_event=lambda ev: got.append((ev.firm, ev.price)))
    w = Watch(10.0)  # on the default node: its subscription is in place after a drain
    eventpy.drain(5)
    node.publish(Watch.quote, firm="IBM", price=7.0)
    node.publish(Watch.quote, firm="IBM", price=3.0)
    eventpy.drain(5)
    assert got == [("IBM", 7.0)] and w.got == [("IBM", 7.0), ("IBM", 3.0)]
    for call in (lambda: node.publish(print, x=1), lambda: node.subscribe("Watch.quote", "price > 5")):
        with pytest.raises(TypeError, match="needs an EventType or an event method of an .epy class, got") as info:
            call()
        assert _frames_in_eventpy(info.value) == []
