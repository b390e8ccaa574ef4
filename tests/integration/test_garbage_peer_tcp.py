"""A broker keeps serving its other clients, exactly, while peers send it garbage at the same time:
random bytes, random frames after a HELLO, a header announcing a frame of 4 GiB, half a frame
and then a disconnect, half a frame and then silence. test_bad_frames.py has the order of what a
bad frame ends (one link, one write); wire/test_live_fuzz.py has 100,000 frames one after the
other with nobody else using the broker."""

from __future__ import annotations

import logging
import random
import socket
import struct
import threading
import time

import msgpack

import eventpy
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.messages import Hello, Pub
from eventpy.runtime.wire import encode

Q = eventpy.EventType("garbage.Tick", n=int)
EVENTS = 3000


def wait_for(pred, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.02)
    return pred()


def garbage(rng: random.Random, k: int) -> bytes:
    """What connection `k` sends: one kind of garbage in turn."""
    hello = encode(Hello(f"junk-{k}", "client", PROTOCOL))
    kind = k % 5
    if kind == 0:  # bytes, no HELLO
        return rng.randbytes(rng.randint(1, 64))
    if kind == 1:  # a HELLO, then frames of random msgpack
        frames = []
        for _ in range(rng.randint(1, 5)):
            body = msgpack.packb([rng.choice(["pub", "sub", "upd", "adv", "?"]),
                                  *(rng.choice([1, -1, 2**63, "garbage.Tick", [], [1, [2]], 1.5, None])
                                    for _ in range(rng.randint(0, 7)))])
            frames.append(struct.pack(">I", len(body)) + body)
        return hello + b"".join(frames)
    if kind == 2:  # a header announcing 4 GiB
        return hello + struct.pack(">I", 0xFFFFFFFF) + rng.randbytes(16)
    if kind == 3:  # a valid PUB of the type, cut in the middle (the sender then disconnects)
        frame = encode(Pub(Q.name, (-1,), f"junk-{k}", 1, 0.0))
        return hello + frame[:rng.randint(1, len(frame) - 1)]
    return hello + struct.pack(">I", 1000) + b"\x95"  # half a frame, and then silence (kept open)


def test_a_broker_serves_its_clients_exactly_while_others_send_garbage(caplog, broker_server):
    server = broker_server("b", max_frame=1 << 16)
    sub = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    got: list[int] = []
    sub.subscribe(Q, "n >= 0", on_event=lambda ev: got.append(ev.n))
    pub = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    pub.advertise(Q)
    eventpy.drain(10)

    stop = threading.Event()
    sent = [0]
    silent: list[socket.socket] = []  # connections that stay open after half a frame

    def storm() -> None:
        rng = random.Random(7)
        k = 0
        while not stop.is_set():
            s = socket.create_connection(("127.0.0.1", server.port))
            try:
                s.sendall(garbage(rng, k))
            except OSError:  # the broker may close first
                pass
            if k % 5 == 4:
                silent.append(s)
                if len(silent) > 20:  # a few at a time (file descriptors)
                    silent.pop(0).close()
            else:
                s.close()
            k += 1
            sent[0] = k

    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
        thread = threading.Thread(target=storm, daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: sent[0] >= 20)  # the storm is on
            for n in range(EVENTS // 2):
                pub.publish(Q, n=n)
            late = eventpy.connect(f"tcp://127.0.0.1:{server.port}")  # a client that comes during it
            late_got: list[int] = []
            # confirm(), not drain(): the late client's drain would ask the peers its own messages
            # reached only, but this checks that its subscription is in force
            late.subscribe(Q, "n >= half", params={"half": EVENTS // 2},
                           on_event=lambda ev: late_got.append(ev.n)).confirm(10)
            for n in range(EVENTS // 2, EVENTS):
                pub.publish(Q, n=n)
            assert wait_for(lambda: len(got) >= EVENTS and len(late_got) >= EVENTS // 2, 30)
            assert wait_for(lambda: sent[0] >= 100)  # and the storm went on all along
        finally:
            stop.set()
            thread.join(10)
            for s in silent:
                s.close()
    eventpy.drain(10)
    assert got == list(range(EVENTS))  # every event, once, in order
    assert late_got == list(range(EVENTS // 2, EVENTS))
    messages = [r.getMessage() for r in caplog.records]
    assert any("exceeds the limit" in m for m in messages)  # the 4 GiB header, refused before reading
    assert any("inside a frame" in m for m in messages)  # the half frame, then the disconnect
    assert any("refused a connection" in m for m in messages)  # bytes without a HELLO
    assert wait_for(lambda: set(server.links) == {sub.name, pub.name, late.name})
    assert server.broker.stats["internal_errors"] == 0
