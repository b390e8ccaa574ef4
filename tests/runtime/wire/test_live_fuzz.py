"""100,000 mutated and random frames against a live broker (a BrokerServer on a socket): it never
crashes, every refusal is logged with its reason, and it still routes events afterwards."""

from __future__ import annotations

import logging
import random
import socket
import struct
import threading
import time

import msgpack

import eventpy
from eventpy.runtime._log_limit import LogLimit
from eventpy.runtime.messages import Hello
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.wire import encode

FRAMES = 100_000
KINDS = ["adv", "unadv", "sub", "unsub", "upd", "pub", "flush", "flushack", "ack", "hello", "bye", "what"]


def junk(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 2 or r < 0.45:
        return rng.choice([None, True, 0, -1, 7, 2 ** 62, 1.5, float("inf"), float("nan"), "", "Q", "price",
                           "I", "S", "D", "F", b"\x00\xff", "stocks.Quote"])
    if r < 0.9:
        return [junk(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {"k": junk(rng, depth + 1)}


TEMPLATES = [
    ["adv", "stocks.Quote", [["firm", "str"], ["price", "float"]]],
    ["sub", "stocks.Quote", 1, [[[["price", 0]], -1, []]], [["I", 0.0, True, 10.0, False]]],
    ["upd", "stocks.Quote", 1, [[0, ["I", 0.0, True, 20.0, False], 2]]],
    ["pub", "stocks.Quote", ["IBM", 5.0], "fuzz", 1, 0.0, []],
    ["unsub", "stocks.Quote", 1],
    ["ackreq", ["fuzz", "ack", 1], 1.5],
    ["ack", ["fuzzed", 1], ""],
]


def _discard(s: socket.socket) -> None:
    try:
        while s.recv(1 << 16):
            pass
    except OSError:
        pass


def plausible(rng: random.Random, value):
    """A value of the same shape, often wrong in content (types, ranges, names)."""
    if isinstance(value, str):
        return rng.choice([value, "stocks.Quote", "nope", "price", "firm", "", "I"])
    if isinstance(value, bool):
        return rng.choice([True, False, 1])
    if isinstance(value, int):
        return rng.choice([value, 0, -1, 1, 2, 99, 2 ** 40])
    if isinstance(value, float):
        return rng.choice([value, -1.0, float("inf"), 1e300])
    if isinstance(value, list):
        return [plausible(rng, v) for v in value] if rng.random() < 0.8 else junk(rng)
    return junk(rng)


def frame_of(msg) -> bytes:
    try:
        body = msgpack.packb(msg, use_bin_type=True)
    except (OverflowError, TypeError, ValueError):
        body = b"\xc1"
    return struct.pack(">I", len(body)) + body


def mutated(rng: random.Random) -> bytes:
    """Mostly frames the decoder accepts but the broker must refuse; some it cannot decode."""
    r = rng.random()
    if r < 0.04:
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 20)))
        return struct.pack(">I", len(body)) + body
    msg = list(rng.choice(TEMPLATES))
    if r < 0.9:
        k = rng.randrange(1, len(msg))
        msg[k] = plausible(rng, msg[k])
    else:
        msg[rng.randrange(len(msg))] = junk(rng)
    return frame_of(msg)


def test_a_live_broker_survives_100000_mutated_frames(caplog, broker_server):
    server = broker_server("fuzzed", max_frame=1 << 16)
    broker = server.broker
    # one window for the whole run, however long it takes on a loaded machine: the log's bound is exact
    server._refusals_logged = LogLimit(window=3600.0)
    broker._refusals_logged = LogLimit(window=3600.0)
    from eventpy.runtime.wire import WireError, decode_body

    rng = random.Random(2026)
    hello = encode(Hello("fuzz", "client", PROTOCOL))
    good: list[bytes] = []
    bad = 0
    with caplog.at_level(logging.WARNING):
        for _ in range(FRAMES):
            f = mutated(rng)
            try:
                decode_body(f[4:])
                good.append(f)  # reaches Broker.handle: refused there (or accepted) without closing
            except WireError:
                bad += 1  # the broker closes the link on it: one connection each
                with socket.create_connection(("127.0.0.1", server.port)) as s:
                    try:
                        s.sendall(encode(Hello(f"bad-{bad}", "client", PROTOCOL)) + f)
                        while s.recv(1 << 16):  # the broker's HELLO, then it closes the link
                            pass
                    except OSError:
                        pass
        with socket.create_connection(("127.0.0.1", server.port)) as s:
            # read what the broker answers (acknowledgements, flush answers) as a real peer
            # would: a peer that never reads is paused by the broker's backpressure
            reader = threading.Thread(target=_discard, args=(s,), daemon=True)
            reader.start()
            s.sendall(hello)
            for k in range(0, len(good), 500):
                s.sendall(b"".join(good[k:k + 500]))
            deadline = time.monotonic() + 60
            while broker.stats["received"] < len(good) and time.monotonic() < deadline:
                time.sleep(0.05)
        time.sleep(0.5)
        # still alive and still routing
        eventpy.shutdown()
        Q = eventpy.EventType("live.Quote", firm=str, price=float)
        node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
        got = []
        node.subscribe(Q, "price < 10", on_event=got.append)
        node.publish(Q, firm="IBM", price=5.0)
        eventpy.drain(10)
        assert [e.price for e in got] == [5.0]
        eventpy.shutdown()
    refused = broker.stats["refused"]
    assert broker.stats["received"] >= len(good) and len(good) + bad == FRAMES
    semantic = [r for r in caplog.records if r.name == "eventpy.broker" and "refused" in r.getMessage()]
    wire = [r for r in caplog.records if r.name == "eventpy.tcp" and ("refused" in r.getMessage()
                                                                     or "closing" in r.getMessage())]
    # every refusal counted; the log says the first few, each with its reason (a flood of them
    # filled the broker machine's disk): 10 per link ("fuzz") and per peer host (127.0.0.1)
    assert refused > 10_000 and 1 <= len(semantic) <= 10
    assert bad > 10 and 1 <= len(wire) <= 10 and all(": " in r.getMessage() for r in semantic + wire)
