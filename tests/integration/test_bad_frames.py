"""A link is FIFO up to a malformed frame: the messages that arrived with it, before it, are
handled; then the link closes with a logged reason. At a broker (a publisher's bad frame) and at a
client (its broker's)."""

from __future__ import annotations

import logging
import socket
import struct
import sys
import threading
import time
import traceback

import pytest

import eventpy
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.messages import Adv, Hello, Limits, Pub, Sub
from eventpy.runtime.wire import FrameDecoder, encode

Q = eventpy.EventType("bad.Tick", n=int)
GARBAGE = struct.pack(">I", 3) + b"\xc1\xc1\xc1"  # a frame whose body is not msgpack


def wait_for(pred, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.02)
    return pred()


def test_a_broker_handles_what_came_before_a_bad_frame_then_closes_that_link(caplog, broker_server):
    server = broker_server("b")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    got: list[int] = []
    node.subscribe(Q, "True", on_event=lambda ev: got.append(ev.n))
    eventpy.drain(5)
    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"), socket.socket() as raw:
        raw.connect(("127.0.0.1", server.port))
        raw.sendall(encode(Hello("raw", "client", PROTOCOL)))
        assert wait_for(lambda: "raw" in server.links)
        # one write: three good PUBs and a bad frame behind them, read by the broker together
        raw.sendall(encode(Adv(Q.name, Q.to_wire()))
                    + b"".join(encode(Pub(Q.name, (n,), "raw", n + 1, 0.0)) for n in range(3)) + GARBAGE)
        assert wait_for(lambda: "raw" not in server.links)
    eventpy.drain(5)
    assert got == [0, 1, 2]
    assert any("closing 'raw'" in r.getMessage() and "malformed" in r.getMessage() for r in caplog.records)
    node.publish(Q, n=3)  # the broker serves the others as before
    eventpy.drain(5)
    assert got == [0, 1, 2, 3]


def test_a_client_delivers_what_came_before_a_bad_frame_from_its_broker(caplog):
    """A fake broker answers the handshake, reads the subscription, then sends two events for it
    and a bad frame in one write."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    done = threading.Event()

    def fake_broker() -> None:
        conn, _ = listener.accept()
        with conn:
            dec = FrameDecoder()
            seen: list = []
            while not any(type(m) is Hello for m in seen):
                seen += dec.feed(conn.recv(65536))
            conn.sendall(encode(Hello("fake", "broker", PROTOCOL)) + encode(Limits([])))  # then its per-client limits
            while not any(type(m) is Sub for m in seen):
                seen += dec.feed(conn.recv(65536))
            sid = next(m for m in seen if type(m) is Sub).sid
            conn.sendall(b"".join(encode(Pub(Q.name, (n,), "p", n + 1, 0.0, (sid,))) for n in range(2)) + GARBAGE)
            done.wait(10)

    thread = threading.Thread(target=fake_broker, daemon=True)
    thread.start()
    eventpy.shutdown()
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
            node = eventpy.connect(f"tcp://127.0.0.1:{port}")
            got: list[int] = []
            node.subscribe(Q, "True", on_event=lambda ev: got.append(ev.n))
            assert wait_for(lambda: len(got) == 2)
            assert got == [0, 1]
            assert wait_for(lambda: any("closing the connection" in r.getMessage() for r in caplog.records))
    finally:
        done.set()
        eventpy.shutdown()
        listener.close()


def test_an_event_larger_than_a_frame_is_refused_at_publish_and_the_others_go(broker_server):
    server = broker_server("b")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    text = eventpy.EventType("bad.Text", s=str, n=int)
    got: list[int] = []
    node.subscribe(text, "True", on_event=lambda ev: got.append(ev.n))
    eventpy.drain(5)
    for n in range(50):
        node.publish(text, s="x", n=n)
    with pytest.raises(ValueError, match="bad.Text: attribute 's' takes 2097157 bytes"):
        node.publish(text, s="x" * (2 << 20), n=-1)  # 2 MiB: no frame holds it
    for n in range(50, 100):
        node.publish(text, s="x", n=n)
    eventpy.drain(5)
    assert got == list(range(100))
    assert eventpy.stats().get("unsendable", 0) == 0


def test_a_message_the_writer_cannot_frame_is_dropped_alone_with_an_error(caplog, broker_server):
    """The writer's safety net, for a message no check before it caught: the others still go
    (before, the writer died with the batch, the node reconnected and the flush was lost)."""
    server = broker_server("b")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    local = node._local
    msgs = [Pub("bad.Text", ("x", 1), local.link, 1, 0.0), Pub("bad.Text", ("x" * (2 << 20), 2), local.link, 2, 0.0),
            Pub("bad.Text", ("x", 3), local.link, 3, 0.0)]
    with caplog.at_level(logging.ERROR):
        data = local.overlay._encode_each(local, msgs)
    assert data == encode(msgs[0]) + encode(msgs[2])
    assert "cannot send a PUB of bad.Text" in caplog.text
    assert node.stats()["unsendable"] == 1


def test_a_schema_the_overlay_knows_otherwise_is_refused_and_the_publisher_told(caplog, broker_server):
    # two processes disagree on an event type: the later one's ADV is refused by the broker,
    # which tells that client; its next publish raises with the reason instead of going nowhere
    server = broker_server("b")
    first = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    first.advertise(eventpy.EventType("bad.Schema", a=int))
    eventpy.drain(5)
    second = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    other = eventpy.EventType("bad.Schema", a=str)
    with caplog.at_level(logging.ERROR, logger="eventpy.client"):
        second.advertise(other)
        eventpy.drain(5)
    assert "the overlay refused event type 'bad.Schema': broker b: 'bad.Schema' advertised with schema" \
           in caplog.text
    line = sys._getframe().f_lineno + 2
    with pytest.raises(TypeError, match=r"refused event type 'bad.Schema'.*known as \(a: int\)") as info:
        second.publish(other, a="x")
    # the program's mistake (an older version of it publishing): raised from its line, not from
    # eventpy's client core below publish
    assert traceback.extract_tb(info.value.__traceback__)[-1][:2] == (__file__, line)
    line = sys._getframe().f_lineno + 2
    with pytest.raises(TypeError, match=r"refused event type 'bad.Schema'") as info:
        second.advertise(other)
    assert traceback.extract_tb(info.value.__traceback__)[-1][:2] == (__file__, line)


def test_a_bad_frame_in_the_read_of_the_hello_is_handled_as_one_read_later(caplog, broker_server):
    """HELLO, good messages and a bad frame in one write: the broker takes the HELLO (and answers
    it), handles the messages before the bad frame, then closes the link, exactly as when the bad
    frame comes in a later read; before, the whole connection was refused."""
    server = broker_server("b")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    got: list[int] = []
    node.subscribe(Q, "True", on_event=lambda ev: got.append(ev.n))
    eventpy.drain(5)
    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"), socket.socket() as raw:
        raw.connect(("127.0.0.1", server.port))
        raw.sendall(encode(Hello("raw", "client", PROTOCOL)) + encode(Adv(Q.name, Q.to_wire()))
                    + b"".join(encode(Pub(Q.name, (n,), "raw", n + 1, 0.0)) for n in range(3)) + GARBAGE)
        answer, dec = [], FrameDecoder()
        raw.settimeout(10)
        while chunk := raw.recv(65536):  # the broker's HELLO, then it closes the link
            answer += dec.feed(chunk)
    assert [type(m) for m in answer] == [Hello]
    eventpy.drain(5)
    assert got == [0, 1, 2]
    messages = [r.getMessage() for r in caplog.records]
    assert any("closing 'raw'" in m and "malformed" in m for m in messages)
    assert not any("refused" in m for m in messages)
    assert wait_for(lambda: "raw" not in server.links and "raw" not in server.broker.links)
    node.publish(Q, n=3)
    eventpy.drain(5)
    assert got == [0, 1, 2, 3]


def test_a_client_takes_a_hello_that_came_with_a_bad_frame_then_reconnects(caplog):
    """The client side of the same: a broker whose HELLO comes with a bad frame in one write is
    attached to (not 'not an EventPy broker'); the connection then closes on the bad frame and
    the client reconnects, here to a well-behaved answer, and subscribes again."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    done = threading.Event()
    subs: list[Sub] = []

    def fake_broker() -> None:
        for attempt in range(2):
            conn, _ = listener.accept()
            with conn:
                dec, seen = FrameDecoder(), []
                while not any(type(m) is Hello for m in seen):
                    seen += dec.feed(conn.recv(65536))
                if attempt == 0:
                    conn.sendall(encode(Hello("fake", "broker", PROTOCOL)) + GARBAGE)
                    while conn.recv(65536):  # until the client closes
                        pass
                    continue
                conn.sendall(encode(Hello("fake", "broker", PROTOCOL)) + encode(Limits([])))  # then its per-client limits
                while not subs:
                    seen += dec.feed(conn.recv(65536))
                    subs.extend(m for m in seen if type(m) is Sub)
                done.wait(10)

    thread = threading.Thread(target=fake_broker, daemon=True)
    thread.start()
    eventpy.shutdown()
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
            node = eventpy.connect(f"tcp://127.0.0.1:{port}")
            node.subscribe(Q, "True", on_event=lambda ev: None)
            assert wait_for(lambda: bool(subs))
        messages = [r.getMessage() for r in caplog.records]
        assert any("closing the connection" in m and "malformed" in m for m in messages)
        assert any("reconnected" in m for m in messages)
    finally:
        done.set()
        eventpy.shutdown()
        listener.close()


def test_an_epy_event_call_the_overlay_refuses_is_raised_from_the_programs_line(caplog, broker_server, monkeypatch):
    # as above, through `Class.quote(...)` of a compiled class: it went on through lang.py, api.py,
    # embedded.py and the client core
    from eventpy.compiler import compile_source

    server = broker_server("b")
    monkeypatch.setenv("EVENTPY_BROKER", f"tcp://127.0.0.1:{server.port}")
    eventpy.connect().advertise(eventpy.EventType("desk.Desk.quote", firm=str, price=int))
    eventpy.drain(5)
    source = ("class Desk:\n    event def quote(self, firm: str, price: float):\n        pass\n\n"
              "def go():\n    Desk.quote('IBM', 1.0)\n")
    ns = {"__name__": "desk"}
    exec(compile(compile_source(source, "desk.epy", "desk"), "desk.epy", "exec"), ns)
    with caplog.at_level(logging.ERROR, logger="eventpy.client"):
        ns["go"]()  # advertises (refused by the broker) and publishes
        eventpy.drain(5)
    with pytest.raises(TypeError, match=r"refused event type 'desk.Desk.quote'.*known as") as info:
        ns["go"]()
    assert traceback.extract_tb(info.value.__traceback__)[-1][:2] == ("desk.epy", 6)
    # a traceback's last line names it where a program can catch it
    assert type(info.value) is eventpy.SchemaRefused
    assert traceback.format_exception_only(info.value)[-1].startswith("eventpy.SchemaRefused: ")
