"""A node closed (`node.close()`) while its broker is away: it tries to send what it still holds
for CLOSE_BUDGET seconds from the close, then logs it as lost and goes. Before, it kept
reconnecting for ever (every 2.5-5 s, with its client core and queues) in a service that went on
running, and sent its old events whenever the broker came back, hours later."""

from __future__ import annotations

import logging
import time

import pytest

import eventpy
from eventpy.runtime import api
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports import tcp_client
from eventpy.runtime.transports.tcp import BrokerServer

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
        gone = _wait_until(lambda: node.name not in overlay._runs)
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
    assert _wait_until(lambda: node.name not in overlay._runs)


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
    assert _wait_until(lambda: node.name not in overlay._runs), "the closed node did not give up"
    # the backoff waits at least its base between attempts (0.1 s or more): 1.5 s hold a few
    assert len(attempts) <= 20, f"{len(attempts)} connection attempts within the close budget"
