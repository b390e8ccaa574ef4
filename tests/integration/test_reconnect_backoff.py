"""A broker that sends a bad frame right after its HELLO, every time: its client reconnects with a
growing, bounded backoff (before: ~20 times a second, for ever, with two warnings each time), and
says so once per escalation of the wait, not once per attempt. Counts over a window with generous
bounds: a slow machine only makes fewer attempts."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time

import eventpy
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.messages import Hello
from eventpy.runtime.transports import tcp_client
from eventpy.runtime.transports._backoff import Backoff
from eventpy.runtime.wire import FrameDecoder, encode

GARBAGE = struct.pack(">I", 3) + b"\xc1\xc1\xc1"  # a frame whose body is not msgpack


class BadBroker:
    """Answers every connection with a HELLO and a bad frame in one write, then closes it."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.accepted += 1
            with conn:
                conn.settimeout(5)
                dec, seen = FrameDecoder(), []
                try:
                    while not any(type(m) is Hello for m in seen):
                        data = conn.recv(65536)
                        if not data:
                            break
                        seen += dec.feed(data)
                    conn.sendall(encode(Hello("bad", "broker", PROTOCOL)) + GARBAGE)
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.listener.close()


def attempts_over(seconds: float, caplog) -> tuple[int, list[str]]:
    bad = BadBroker()
    eventpy.shutdown()
    try:
        with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
            eventpy.connect(f"tcp://127.0.0.1:{bad.port}")
            start = bad.accepted
            time.sleep(seconds)
            n = bad.accepted - start
        return n, [r.getMessage() for r in caplog.records]
    finally:
        eventpy.shutdown()
        bad.close()


def test_a_client_backs_off_from_a_broker_that_sends_a_bad_frame_after_its_hello(caplog):
    n, messages = attempts_over(2.0, caplog)
    # waits of 0.05, 0.1, 0.2, 0.4, 0.8, 1.6 s (each jittered down to half at most): at most 7
    # attempts in 2 s; before, ~40
    assert 1 <= n <= 12, n
    assert any("malformed" in m for m in messages)  # the reason is said


def test_it_logs_once_per_escalation_not_per_attempt(caplog, monkeypatch):
    # a low cap, so that the wait stops growing within the window: attempts go on, warnings stop
    monkeypatch.setattr(tcp_client.TcpOverlay, "backoff", lambda self: Backoff(base=0.02, cap=0.08))
    n, messages = attempts_over(1.5, caplog)
    said = [m for m in messages if "reconnecting" in m]
    assert n >= 6, n
    assert 1 <= len(said) <= 4 and len(said) < n, (len(said), n)  # 0.02, 0.04, 0.08: then quiet
