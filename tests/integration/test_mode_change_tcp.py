"""A broker restarted in another mode (`eventpy overlay up --mode resub` after `parametric`) under
connected clients: a node follows the mode its broker says in its HELLO when it reconnects, and
says so. Before, `node.mode` went on naming the old mode and the node kept sending its updates
the old way, with nothing in the log; events kept flowing either way."""

from __future__ import annotations

import logging
import pytest

import eventpy
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

Quote = eventpy.EventType("modechange.Quote", price=int)


@pytest.fixture
def serve(fresh_overlay):
    """`serve(mode, port=0)`: a broker on 127.0.0.1, returned with its stop (stopped at teardown too)."""
    running = []

    def start(mode: str, port: int = 0):
        server = BrokerServer(Broker("b0", mode=mode), "127.0.0.1", port, {})
        entry = [server.start_in_thread()]
        running.append(entry)
        return server, lambda: entry and entry.pop()()

    yield start
    eventpy.shutdown()
    for entry in running:
        if entry:
            entry.pop()()


def test_a_node_follows_its_broker_restarted_in_another_mode(serve, caplog):
    server, stop = serve("parametric")
    url = f"tcp://127.0.0.1:{server.port}"
    sub_node = eventpy.connect(url)
    got = []
    sub = sub_node.subscribe(Quote, "price < limit", params={"limit": 10}, on_event=got.append)
    eventpy.drain(10)
    assert sub_node.mode == "parametric"
    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
        stop()
        back, _ = serve("resub", server.port)
        sub.confirm(timeout=20)  # answered once the node is back with its subscription
    assert sub_node.mode == "resub"
    assert any("resub mode" in r.getMessage() for r in caplog.records), caplog.text
    before = sub_node.stats()
    sub.update(limit=20)
    sub.confirm(timeout=10)
    after = sub_node.stats()
    assert after["upd_sent"] == before["upd_sent"] and after["sub_sent"] > before["sub_sent"], (before, after)
    pub = eventpy.connect(url)
    pub.advertise(Quote)
    eventpy.drain(10)
    pub.publish(Quote, price=15)
    eventpy.drain(10)
    assert [e.price for e in got] == [15]
