"""drain() and confirm() while the node's broker is gone: the TimeoutError said only "had no
answer to its flush from broker b0 within 10s", which reads like a slow broker, when the node had
had no connection at all for seconds. Now it says so, and where it keeps trying."""

from __future__ import annotations

import logging
import time

import pytest

import eventpy
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

Q = eventpy.EventType("nobroker.Tick", n=int)


def test_a_drain_or_confirm_that_times_out_without_a_broker_says_the_node_is_not_connected(caplog):
    eventpy.shutdown()
    server = BrokerServer(Broker("b0"), "127.0.0.1", 0, {})
    stop = server.start_in_thread()
    stopped = False
    try:
        node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
        sub = node.subscribe(Q, "n >= lo", params={"lo": 0})
        eventpy.drain(10)
        with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
            stop()
            stopped = True
            deadline = time.monotonic() + 20  # until the node has seen its connection end
            while "lost its broker" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.02)
        node.publish(Q, n=1)
        with pytest.raises(TimeoutError) as drained:
            eventpy.drain(0.5)
        assert f"has had no connection to 127.0.0.1:{server.port}" in str(drained.value), drained.value
        assert "(is the broker running?)" in str(drained.value)
        sub.update(lo=1)
        with pytest.raises(eventpy.UpdateNotConfirmed) as confirmed:
            sub.confirm(0.5)
        assert f"has had no connection to 127.0.0.1:{server.port}" in str(confirmed.value), confirmed.value
    finally:
        if not stopped:
            stop()
        eventpy.shutdown()
