"""`eventpy.connect("tcp://...")` to something that is not an EventPy broker says so in one line,
as a ConnectionError (QA found a WireError about a frame of 1213486160 bytes for an HTTP server,
and a ConnectionError with an empty reason for a server that says nothing)."""

from __future__ import annotations

import socket
import threading

import pytest

import eventpy
from eventpy.runtime.transports import tcp_client


@pytest.fixture
def impostor():
    """A factory: `impostor(answer)` listens on a free port of 127.0.0.1, answers each connection
    with `answer` (b"": nothing) and keeps it open; returns the port."""
    socks: list[socket.socket] = []

    def start(answer: bytes) -> int:
        server = socket.create_server(("127.0.0.1", 0))
        socks.append(server)

        def serve() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return  # closed at teardown
                socks.append(conn)
                if answer:
                    conn.sendall(answer)

        threading.Thread(target=serve, daemon=True).start()
        return server.getsockname()[1]

    eventpy.shutdown()
    yield start
    eventpy.shutdown()
    for s in socks:
        s.close()


def test_a_server_that_answers_something_else_is_not_an_eventpy_broker(impostor):
    port = impostor(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    with pytest.raises(ConnectionError) as e:
        eventpy.connect(f"tcp://127.0.0.1:{port}")
    assert str(e.value) == (f"cannot attach to tcp://127.0.0.1:{port}: it is not an EventPy broker "
                            "(it did not answer with a HELLO)")


def test_a_server_that_says_nothing_times_out_waiting_for_the_hello(impostor, monkeypatch):
    monkeypatch.setattr(tcp_client, "HELLO_TIMEOUT", 0.5)
    port = impostor(b"")
    with pytest.raises(ConnectionError) as e:
        eventpy.connect(f"tcp://127.0.0.1:{port}")
    assert str(e.value) == (f"cannot attach to tcp://127.0.0.1:{port}: timed out after 0.5 s waiting for the "
                            "broker's HELLO (is it an EventPy broker?)")


def test_a_broker_of_another_protocol_version_says_which(impostor):
    from eventpy.runtime.messages import Hello
    from eventpy.runtime.wire import encode

    from eventpy.runtime.transports._handshake import PROTOCOL

    port = impostor(encode(Hello("b9", "broker", PROTOCOL + 1, "parametric")))
    with pytest.raises(ConnectionError) as e:
        eventpy.connect(f"tcp://127.0.0.1:{port}")
    assert str(e.value) == (f"cannot attach to tcp://127.0.0.1:{port}: the peer speaks EventPy protocol "
                            f"version {PROTOCOL + 1}; this one speaks {PROTOCOL} (eventpy {eventpy.__version__}): "
                            "run the client and the brokers with one eventpy version")


def test_a_mode_other_than_the_overlays_is_refused_naming_the_overlays(broker_server):
    """The broker's HELLO says the overlay's mode (QA found mode="resub" silently running
    parametric)."""
    server = broker_server("b0")  # parametric
    url = f"tcp://127.0.0.1:{server.port}"
    with pytest.raises(ValueError) as e:
        eventpy.connect(url, mode="resub")
    assert str(e.value) == (f"the overlay at {url} runs in parametric mode; connect asked for mode='resub' "
                            "(the brokers choose the mode: eventpy overlay up --mode)")
    assert eventpy.connect(url, mode="parametric").mode == "parametric"


def test_a_second_node_of_the_same_name_is_refused_at_connect(broker_server):
    # the broker refused it only after the handshake: connect returned a node that reconnected
    # about 20 times a second, its events never arriving (QA); now the broker says why first
    server = broker_server("b")
    url = f"tcp://127.0.0.1:{server.port}"
    first = eventpy.connect(url, name="twin")
    with pytest.raises(ConnectionError, match=r"the broker refused it: a node named 'twin' is already attached "
                                              r"to broker b; give each node its own name"):
        eventpy.connect(url, name="twin")
    got = []
    first.subscribe(eventpy.EventType("dup.N", n=int), "True", on_event=lambda ev: got.append(ev.n))
    eventpy.drain(5)
    first.publish(eventpy.EventType("dup.N", n=int), n=1)
    eventpy.drain(5)
    assert got == [1]


def test_a_broker_served_in_a_thread_and_a_client_leave_no_descriptor_open():
    """Embedding a broker (`start_in_thread`) and attaching to it: stop() and shutdown() closed
    the sockets but not the two asyncio loops, whose selectors and self-pipes stayed open until
    the garbage collector found them (ResourceWarning: unclosed event loop)."""
    import os

    from eventpy.runtime.broker import Broker
    from eventpy.runtime.transports.tcp import BrokerServer

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    eventpy.shutdown()
    before = fds()
    for _ in range(3):
        server = BrokerServer(Broker("b0"), "127.0.0.1", 0, {})
        stop = server.start_in_thread()
        node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
        node.close()
        eventpy.shutdown()
        stop()
    assert fds() == before
