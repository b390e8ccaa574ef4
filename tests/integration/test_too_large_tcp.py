"""A value too large for a TCP frame is refused where the program gives it, naming it: before,
publish() and update() returned, and the transport dropped the message later with a log line,
so an update the program believed sent never reached its broker."""

from __future__ import annotations

import pytest

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime.wire import DEFAULT_MAX_FRAME

Doc = eventpy.EventType("big.Doc", s=str, n=int)


def test_too_large_values_are_refused_over_tcp_and_what_fits_goes(broker_server):
    server = broker_server("b0")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    node.advertise(Doc)
    got = []
    sub = node.subscribe(Doc, "s in names or n > 0", params={"names": {"a"}}, on_event=lambda ev: got.append(len(ev.s)))
    eventpy.drain(10)
    with pytest.raises(ValueError, match=r"big.Doc: attribute 's' takes \d+ bytes, and a message over TCP holds"):
        node.publish(Doc, s="x" * (2 << 20), n=1)
    with pytest.raises(ValueError, match="big.Doc: attribute 's'"):  # UTF-8: 4 bytes a character
        node.publish(Doc, s="\U0001F600" * (DEFAULT_MAX_FRAME // 4), n=1)
    names = {f"name{i:07d}" for i in range(120_000)}
    with pytest.raises(ValueError, match="parameter 'names' takes"):
        sub.update(names=names)
    with pytest.raises(ValueError, match="parameter 'names' takes"):
        node.subscribe(Doc, "s in names", params={"names": names})
    Two = eventpy.EventType("big.Two", a=str, b=str)
    with pytest.raises(ValueError, match=r"big.Two: attribute '[ab]' takes \d+ bytes \(with the others, \d+\)"):
        node.publish(Two, a="x" * (DEFAULT_MAX_FRAME * 3 // 5), b="y" * (DEFAULT_MAX_FRAME * 3 // 5))  # together
    with pytest.raises(ValueError, match=r"parameter '(names|more)' takes \d+ bytes \(with the others"):
        two = node.subscribe(Doc, "s in names or s in more", params={"names": {"a"}, "more": {"b"}})
        half = {f"n{i:07d}" for i in range(60_000)}
        two.update(names=half, more={f"m{i:07d}" for i in range(60_000)})  # one UPD carries both
    node.publish(Doc, s="y" * (DEFAULT_MAX_FRAME // 2), n=2)  # half a frame still goes
    sub.update(names={"a", "b"})  # and the subscription still has its old set until then
    eventpy.drain(10)
    assert got == [DEFAULT_MAX_FRAME // 2]
    assert node.stats().get("unsendable", 0) == 0


def test_the_embedded_overlay_has_no_frame_limit():
    node = eventpy.connect()
    got = []
    node.subscribe(Doc, "n > 0", on_event=lambda ev: got.append(len(ev.s)))
    node.publish(Doc, s="x" * (2 << 20), n=1)
    eventpy.drain(10)
    assert got == [2 << 20]


def test_an_epy_field_too_large_to_send_is_refused_before_it_is_stored(broker_server):
    server = broker_server("b0")
    eventpy.set_default_node(eventpy.connect(f"tcp://127.0.0.1:{server.port}"))
    source = ("class Watch:\n"
              "    def __init__(self):\n"
              "        self.names = {'a'}\n"
              "    event def doc(self, s: str) when s in self.names:\n"
              "        pass\n")
    ns = {"__name__": "big_fields"}
    exec(compile(compile_source(source, "big_fields.epy", "big_fields"), "big_fields.epy", "exec"), ns)
    w = ns["Watch"]()
    names = {f"name{i:07d}" for i in range(120_000)}
    with pytest.raises(ValueError, match=r"^Watch.names = \{.{0,70}\.\.\. \(set of 120000\) refused: parameter 'names' takes \d+ bytes"):
        w.names = names
    assert w.names == {"a"}  # the object as it was: the field and the subscription agree
