"""A flood of bad connections: the broker's log says the first 10 a minute per peer host (the
bound of 71a43a4), and the rest were counted nowhere, so `overlay status` showed nothing and the
log was silent for the rest of the minute while the flood went on. Each is now counted
(`refused_connections`) and `overlay status` has a line for them, as it has for refused messages."""

from __future__ import annotations

import logging
import socket
import struct
import time
from pathlib import Path

from eventpy.runtime._overlay_types import refused_lines
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

BAD_FRAMES = 15


def test_every_refused_connection_is_counted_and_shown_by_status(caplog):
    server = BrokerServer(Broker("b0"), "127.0.0.1", 0, {})
    stop = server.start_in_thread()
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
            for _ in range(BAD_FRAMES):
                with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
                    s.sendall(struct.pack(">I", 3) + b"\xc1\xc1\xc1")  # not msgpack
                    s.recv(16)  # the broker closes it: the refusal has been handled
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and server.broker.stats["refused_connections"] < BAD_FRAMES:
                time.sleep(0.05)
        logged = [r for r in caplog.records if "refused a connection" in r.getMessage()]
        assert len(logged) == 10  # the log's bound holds ...
        assert server.broker.stats["refused_connections"] == BAD_FRAMES  # ... and the count is whole
        (line,) = refused_lines(Path("run"), {"b0": server.status()})
        assert line.startswith(f"broker b0 refused {BAD_FRAMES} connections (") and "b0.log" in line
    finally:
        stop()


def test_connections_refused_for_their_protocol_version_are_counted_too(caplog):
    """A peer of another protocol version (an old broker re-dialing every few seconds, old clients
    after a partial upgrade) was refused, told why and logged once, but not counted: `overlay
    status` said nothing of a refusal that goes on for as long as the old peer runs."""
    from eventpy.runtime.messages import Hello
    from eventpy.runtime.transports._handshake import PROTOCOL
    from eventpy.runtime.wire import encode

    server = BrokerServer(Broker("b1"), "127.0.0.1", 0, {})
    stop = server.start_in_thread()
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
            for _ in range(3):  # as an older broker re-dials
                with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
                    s.sendall(encode(Hello("b0", "broker", PROTOCOL - 1, "parametric")))
                    while s.recv(65536):  # its BYE, then the close: the refusal has been handled
                        pass
        assert server.broker.stats["refused_connections"] == 3
        assert sum("refused broker 'b0'" in r.getMessage() for r in caplog.records) == 1  # said once
        (line,) = refused_lines(Path("run"), {"b1": server.status()})
        assert line.startswith("broker b1 refused 3 connections (") and "another protocol version" in line
    finally:
        stop()
