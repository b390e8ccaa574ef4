"""Connections a broker refuses after their HELLO (a name already attached, a bad frame right
after it) are logged within the peer host's bound, as the other refusals: a process that
reconnected under a name in use, or a hostile peer, wrote a warning for every connection and
could fill the broker machine's disk."""

from __future__ import annotations

import logging
import socket
import time

import eventpy
from eventpy.runtime.messages import Hello
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.wire import encode

ATTEMPTS = 40


def _dial(port: int, payload: bytes) -> None:
    """One connection that sends `payload` and waits until the broker closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(payload)
        while s.recv(65536):
            pass


def _warnings(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and text in r.getMessage()]


def test_connections_under_a_name_in_use_are_logged_within_the_bound(broker_server, caplog):
    server = broker_server()
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="taken")
    eventpy.drain(10)
    with caplog.at_level(logging.WARNING, logger="eventpy"):
        for _ in range(ATTEMPTS):
            _dial(server.port, encode(Hello("taken", "client", PROTOCOL)))
    said = _warnings(caplog, "a link of that name is attached")
    assert 1 <= len(said) <= 10, f"{len(said)} warnings for {ATTEMPTS} refused connections"
    node.close()


def test_connections_that_send_a_bad_frame_after_their_hello_are_logged_within_the_bound(broker_server, caplog):
    server = broker_server()
    with caplog.at_level(logging.WARNING, logger="eventpy"):
        for k in range(ATTEMPTS):
            _dial(server.port, encode(Hello(f"garbage-{k}", "client", PROTOCOL)) + b"\xff" * 64)
        deadline = time.monotonic() + 20
        while server.links and time.monotonic() < deadline:  # every link has ended
            time.sleep(0.02)
    said = _warnings(caplog, "closing 'garbage-")
    assert 1 <= len(said) <= 10, f"{len(said)} warnings for {ATTEMPTS} connections that sent a bad frame"
