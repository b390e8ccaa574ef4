"""A connection that trickles its first frame a byte at a time (a slow-loris) is closed once the
handshake's time is up, not kept for as long as bytes keep coming."""

from __future__ import annotations

import logging
import socket
import struct
import time


def test_a_peer_trickling_its_hello_is_closed_when_the_handshake_time_is_up(caplog, broker_server):
    """The broker gave each read of the handshake 10 s: a peer that sent a byte every few seconds
    of a frame announced as 1000 bytes held its connection (and a file descriptor) for more than
    an hour. Now the whole handshake has one deadline, and the log names the peer."""
    server = broker_server("b", handshake_timeout=1.0)
    closed_after = None
    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"), \
            socket.create_connection(("127.0.0.1", server.port)) as raw:
        raw.sendall(struct.pack(">I", 1000))
        raw.settimeout(0.2)
        start = time.monotonic()
        while time.monotonic() - start < 20.0:  # twenty times the deadline: a loaded machine is slow
            try:
                raw.sendall(b"\x00")
                if raw.recv(16) == b"":
                    closed_after = time.monotonic() - start
                    break
            except socket.timeout:
                continue  # still open: one more byte
            except OSError:  # reset by the broker
                closed_after = time.monotonic() - start
                break
        mine = f"127.0.0.1:{raw.getsockname()[1]}"
    assert closed_after is not None, "the broker kept a connection that never completed its HELLO"
    assert any(f"refused a connection from {mine}: no complete HELLO within 1 s" in r.getMessage()
               for r in caplog.records), caplog.text
    assert not server.links  # nothing was attached
