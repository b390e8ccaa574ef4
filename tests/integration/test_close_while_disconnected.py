"""A node closed (`node.close()`) while its broker is away: it tries to send what it still holds
for CLOSE_BUDGET seconds from the close, then logs it as lost and goes. Before, it kept
reconnecting for ever (every 2.5-5 s, with its client core and queues) in a service that went on
running, and sent its old events whenever the broker came back, hours later."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time

import pytest

import eventpy
from eventpy.runtime import api
from eventpy.runtime.messages import Hello, Limits
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports import tcp_client
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.transports.tcp import BrokerServer
from eventpy.runtime.wire import encode

Tick = eventpy.EventType("closegone.Tick", n=int)


@pytest.fixture
def serve(fresh_overlay):
    """A factory: `serve(port=0)` starts a broker on 127.0.0.1 and returns (server, stop); every
    broker still running is stopped at teardown, even if the test failed."""
    running = []

    def start(port: int = 0):
        server = BrokerServer(Broker("b0"), "127.0.0.1", port, {})
        stop = server.start_in_thread()
        entry = [stop]
        running.append(entry)

        def stop_once() -> None:
            if entry:
                entry.pop()()
        return server, stop_once

    yield start
    eventpy.shutdown()
    for entry in running:
        if entry:
            entry.pop()()


def _lost_broker(server, stop):
    """A node attached to `server` that advertised Tick; the broker is then stopped and the node
    has seen its connection end."""
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    node.advertise(Tick)
    eventpy.drain(10)
    overlay = api._remote[f"tcp://127.0.0.1:{server.port}"]
    stop()
    deadline = time.monotonic() + 20
    while not overlay.unreachable(node._local) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert overlay.unreachable(node._local), "the node did not notice its broker stopped"
    return node, overlay


def _wait_until(check, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_node_closed_while_its_broker_is_away_gives_up_after_the_budget(serve, monkeypatch, caplog):
    monkeypatch.setattr(tcp_client, "CLOSE_BUDGET", 0.5, raising=False)
    node, overlay = _lost_broker(*serve())
    for n in range(3):
        node.publish(Tick, n=n)
    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
        node.close()
        gone = _wait_until(lambda: node._local not in overlay._runs)
    assert gone, "the closed node is still trying to reach its broker"
    assert any("3 message(s) it still held for 127.0.0.1:" in r.getMessage()
               and "within 0.5s of its close()" in r.getMessage() for r in caplog.records), caplog.text


def test_a_closed_node_whose_broker_comes_back_within_the_budget_sends_what_it_held(serve, monkeypatch):
    monkeypatch.setattr(tcp_client, "CLOSE_BUDGET", 30.0, raising=False)  # generous: the broker is back at once
    server, stop = serve()
    node, overlay = _lost_broker(server, stop)
    for n in range(3):
        node.publish(Tick, n=n)
    node.close()
    back, _ = serve(server.port)
    assert _wait_until(lambda: back.broker.stats["pub_received"] == 3), back.broker.stats
    assert _wait_until(lambda: node._local not in overlay._runs)


def test_a_closed_node_retries_with_its_backoff_not_in_a_tight_loop(serve, monkeypatch):
    """close() ends the reconnection wait it interrupts, once: the event it set stayed set, so
    every later attempt within the budget skipped its wait, and a node closed while its broker
    was away opened connections back to back (thousands a second on the overlay's loop) for
    CLOSE_BUDGET seconds."""
    monkeypatch.setattr(tcp_client, "CLOSE_BUDGET", 1.5, raising=False)
    node, overlay = _lost_broker(*serve())
    attempts = []
    connect = overlay._connect

    async def counted(name):
        attempts.append(time.monotonic())
        return await connect(name)
    monkeypatch.setattr(overlay, "_connect", counted)
    node.publish(Tick, n=1)
    node.close()
    assert _wait_until(lambda: node._local not in overlay._runs), "the closed node did not give up"
    # the backoff waits at least its base between attempts (0.1 s or more): 1.5 s hold a few
    assert len(attempts) <= 20, f"{len(attempts)} connection attempts within the close budget"


class _BrokerThatStopsReading:
    """A broker that answers the HELLO and then reads nothing (as a broker that hangs), until
    `reset()` drops the connection: what the client has not written by then stays in its node."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._conn: socket.socket | None = None
        self._accepted = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        conn.recv(65536)  # the client's HELLO (a few bytes, alone on the connection)
        conn.sendall(encode(Hello("stalled", "broker", PROTOCOL, "parametric")) + encode(Limits([])))
        self._conn = conn
        self._accepted.set()

    def reset(self) -> None:
        assert self._accepted.wait(20)
        assert self._conn is not None
        self._conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
        self._conn.close()
        self._listener.close()


def _fill(node, etype) -> None:
    """Publish until the writer waits for the broker and the node holds a thousand events."""
    blob = "x" * 16_384
    full = threading.Event()

    def flood() -> None:
        while len(node._local.core.outbox) < 1000:  # (the writer takes 256 at a time)
            node.publish(etype, blob=blob)
        full.set()
    threading.Thread(target=flood, daemon=True).start()
    assert full.wait(60), "the writer never waited for the broker"


def test_a_node_closed_while_connected_that_loses_its_connection_says_what_it_held(fresh_overlay, monkeypatch,
                                                                                   caplog):
    """close() while the connection holds (the writer waiting for a broker that reads slowly),
    then the connection drops: the node was forgotten at once, and the events it still held
    were lost without a word (a node closed while disconnected tries for CLOSE_BUDGET, then
    says what it lost)."""
    monkeypatch.setattr(tcp_client, "CLOSE_BUDGET", 0.5, raising=False)
    broker = _BrokerThatStopsReading()
    url = f"tcp://127.0.0.1:{broker.port}"
    node = eventpy.connect(url)
    overlay = api._remote[url]
    big = eventpy.EventType("closegone.Big", blob=str)
    node.advertise(big)
    _fill(node, big)
    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
        node.close()
        broker.reset()
        assert _wait_until(lambda: node._local not in overlay._runs), "the closed node was not forgotten"
    assert any("message(s) it still held for 127.0.0.1:" in r.getMessage() for r in caplog.records), caplog.text



def test_a_node_closed_while_connected_sends_what_it_held_to_its_broker_back_within_the_budget(serve, monkeypatch):
    monkeypatch.setattr(tcp_client, "CLOSE_BUDGET", 30.0, raising=False)  # generous: the broker is back at once
    stalled = _BrokerThatStopsReading()
    url = f"tcp://127.0.0.1:{stalled.port}"
    node = eventpy.connect(url)
    big = eventpy.EventType("closegone.Big", blob=str)
    node.advertise(big)
    _fill(node, big)
    node.close()
    held = sum(type(m) is tuple for m in node._local.core.outbox)  # events (the writer may take 256 more)
    stalled.reset()
    back, _ = serve(stalled.port)
    assert _wait_until(lambda: back.broker.stats["pub_received"] >= held - 256, timeout=60), (
        f"the broker back got {back.broker.stats['pub_received']} of the {held} events the closed node held")


class _MovedClock:
    """tcp_client's clock, moved on by the test (`time.monotonic` plus what it added): a close
    made long ago, without waiting for it."""

    def __init__(self) -> None:
        self.added = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.added


def test_a_name_reused_while_its_old_node_still_retries_has_its_own_close_budget(serve, monkeypatch):
    """A node closed while its broker is away keeps retrying under CLOSE_BUDGET; a new node given
    the same name meanwhile shared the overlay's tables, keyed by the name: while connected it
    was said to be reconnecting (the old node's outage), and closed while its broker was away it
    inherited the old node's close time, so it gave up at once and lost what it held."""
    monkeypatch.setattr(tcp_client, "CLOSE_BUDGET", 60.0, raising=False)
    clock = _MovedClock()
    monkeypatch.setattr(tcp_client, "time", clock)
    server, stop = serve()
    url = f"tcp://127.0.0.1:{server.port}"
    # the old node waits long between its attempts: it is still retrying when the new one comes
    slow = tcp_client.Backoff(base=60.0, cap=60.0)
    eventpy.connect(url, name="warmup").close()  # (the overlay of that URL, to patch its backoff)
    overlay = api._remote[url]
    monkeypatch.setattr(overlay, "backoff", lambda: slow)
    old = eventpy.connect(url, name="desk")
    monkeypatch.setattr(overlay, "backoff", tcp_client.Backoff)  # the new node's: the usual one
    old.advertise(Tick)
    eventpy.drain(10)
    stop()
    assert _wait_until(lambda: overlay.unreachable(old._local)), "the old node did not notice its broker stopped"
    connect = overlay._connect
    closed, refused_after_close = threading.Event(), threading.Event()

    async def watched(name):
        try:
            return await connect(name)
        except OSError:
            if closed.is_set():
                refused_after_close.set()
            raise
    monkeypatch.setattr(overlay, "_connect", watched)
    old.publish(Tick, n=0)
    closed.set()
    old.close()  # it holds an event: it retries at once, then every minute or so, within its budget
    # its attempt right after the close has met no broker (else it would take its name back first)
    assert refused_after_close.wait(20), "the old node did not try again at its close"

    server, stop = serve(server.port)
    new = eventpy.connect(url, name="desk")  # the broker knows no "desk" now: the name is free there
    assert overlay.unreachable(new._local) == "", "the new node, connected, was said to be reconnecting"
    new.advertise(Tick)
    eventpy.drain(10)
    clock.added = 600.0  # the old node's close is ten minutes old
    stop()
    assert _wait_until(lambda: overlay.unreachable(new._local)), "the new node did not notice its broker stopped"
    new.publish(Tick, n=1)
    new.close()  # its budget counts from now, not from the old node's close
    back, _ = serve(server.port)
    assert _wait_until(lambda: back.broker.stats["pub_received"] == 1), (
        "the new node gave up what it held at once: it took the old node's close time")
