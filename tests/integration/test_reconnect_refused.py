"""A node whose broker came back but refuses to take it back (here: another node took its name
meanwhile) says why, once, and goes on retrying; before, it retried every 2 s without a word."""

from __future__ import annotations

import logging
import time

import eventpy
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer


def test_a_refused_reconnection_is_logged_once_with_its_reason(caplog):
    eventpy.shutdown()
    first = BrokerServer(Broker("b0"), "127.0.0.1", 0, {})
    stop = first.start_in_thread()
    port = first.port
    node = eventpy.connect(f"tcp://127.0.0.1:{port}", name="desk")
    eventpy.drain(10)
    stop()  # the broker goes away ...
    again = BrokerServer(Broker("b0"), "127.0.0.1", port, {})
    stop_again = again.start_in_thread()  # ... and comes back, where another "desk" gets in first
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy"):
            other = eventpy.connect(f"tcp://127.0.0.1:{port}", name="desk")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any("refuses to take it back" in r.getMessage()
                                                           for r in caplog.records):
                time.sleep(0.1)
            time.sleep(5)  # a few more retries (every 2 s at most)
        said = [r.getMessage() for r in caplog.records if "refuses to take it back" in r.getMessage()]
        assert len(said) == 1, said
        assert "node desk:" in said[0] and "already attached" in said[0]
        assert not node._local.closed and not other._local.closed
    finally:
        eventpy.shutdown()
        stop_again()
