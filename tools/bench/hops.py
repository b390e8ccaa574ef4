"""Where an event's time goes in each process of the TCP overlay, in-process and without sockets.

    PYTHONPATH=. .venv/bin/python tools/bench/hops.py [--quick] [--json] [--events N]

The same N PUB frames (guard `True`, 2 attributes) go through, cut into 64 KiB reads as a socket
would deliver them:
* relay: decode the frames and join them again (the no-op relay of tools/bench/overlay.py);
* decode: `FrameDecoder.feed` alone (what the subscriber's reader does first, here with the
  relay's garbage-collector settings);
* broker, middle: `feed_frames`, `Broker.handle`, `BrokerServer._route` (frames from a broker,
  to a broker); broker, edge: the same, the subscriber being a client (the frame is re-addressed);
* subscriber, inline: decode, `ClientCore.receive`, the local filter and the callback on one thread;
* subscriber, queued: what the client's reader does with a read (`receive_read`: decode, then
  `LocalNode.receive_many`) and the delivery pool's task, run on the reading thread (the
  bookkeeping without the hand-off);
* subscriber, pool: the real path, callbacks on the delivery thread (CPU of the whole process).
Each is timed with the process CPU clock, best of R repeats; ratios are to the relay, measured in
the same run. No sockets, no event loop: the figures say what each hop costs beyond the codec,
not the overlay's throughput (tools/bench/overlay.py measures that).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import sys
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

import eventpy  # noqa: E402
from eventpy.guards import compile_guard  # noqa: E402
from eventpy.runtime._executor import DeliveryPool  # noqa: E402
from eventpy.runtime.broker import Broker  # noqa: E402
from eventpy.runtime.client import passes  # noqa: E402
from eventpy.runtime.embedded import LocalNode  # noqa: E402
from eventpy.runtime.messages import Adv, Pub, Sub  # noqa: E402
from eventpy.runtime.transports.tcp import BrokerServer, _Link, tune_gc_for_server  # noqa: E402
from eventpy.runtime.transports.tcp_client import receive_read  # noqa: E402
from eventpy.runtime.wire import FrameDecoder, encode  # noqa: E402

Tick = eventpy.EventType("bench.Tick", n=int, price=float)
READ = 65536


class _Collecting(_Link):
    """A link that keeps what is sent to it (no writer, no socket)."""

    def __init__(self) -> None:  # not _Link.__init__, which wants a stream writer
        self.frames = collections.deque()
        self.pending, self.max_pending, self.stall, self.progress = 0, 1 << 62, 1e9, 0.0
        self.closed = self.overflowed = False
        self.ready = asyncio.Event()  # as a real link's (set once, then cheap)


def reads(n: int, sids: tuple = ()) -> list[bytes]:
    frames = b"".join(encode(Pub(Tick.name, (i, 1.0), "pub", i + 1, time.time(), sids)) for i in range(n))
    return [frames[i:i + READ] for i in range(0, len(frames), READ)]


@contextlib.contextmanager
def server_gc():
    """The garbage collector as a broker (and overlay.py's relay) process sets it; undone after."""
    threshold = gc.get_threshold()
    tune_gc_for_server()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def timed(run: Callable[[], None], n: int, repeats: int) -> float:
    """Best CPU microseconds per event over `repeats` runs (process clock: every thread counts)."""
    best = float("inf")
    for _ in range(repeats):
        cpu = time.process_time()
        run()
        best = min(best, (time.process_time() - cpu) / n * 1e6)
    return best


def relay(chunks: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        dec = FrameDecoder()
        for data in chunks:
            b"".join([frame for _, frame in dec.feed_frames(data)])
    return run


def decode(chunks: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        dec = FrameDecoder()
        for data in chunks:
            dec.feed(data)
    return run


def broker_hop(chunks: list[bytes], downstream: str) -> Callable[[], None]:
    """A broker between `up` (a broker) and `down` (a broker or a client) that subscribed `True`."""
    broker = Broker("b1")
    server = BrokerServer(broker, "127.0.0.1", 0, {})
    broker.connect("up", "broker")
    broker.connect("down", downstream)
    broker.handle("up", Adv(Tick.name, Tick.to_wire()))
    plan = compile_guard("True", Tick, {})
    broker.handle("down", Sub(Tick.name, 1, plan.spec, plan.evaluate({})))

    def run() -> None:
        server.links = {"up": _Collecting(), "down": _Collecting()}
        dec = FrameDecoder()
        handle, route = broker.handle, server._route
        for data in chunks:
            batch: dict = {}
            for msg, frame in dec.feed_frames(data):
                route(handle("up", msg), msg, frame, batch)
            server._send_batch(batch)
        forwarded.append(server.links["down"].frames)  # counted after the timing

    forwarded: list = []  # what reached `down` in each run, checked after timing: every event
    run.forwarded = forwarded  # type: ignore[attr-defined]
    return run


class _Overlay:
    """What a LocalNode needs of its transport, with a delivery pool."""

    mode = "parametric"

    def __init__(self, synchronous: bool) -> None:
        self.pool = DeliveryPool()
        if synchronous:  # the pool's task runs on the submitting thread
            self.pool._pool.shutdown()
            self.pool._pool = _Now()

    def wake(self, node: LocalNode) -> None:
        pass

    def edge_name(self) -> str:
        return "b2"


class _Now:
    def submit(self, fn: Callable, *args: object) -> None:
        fn(*args)

    def shutdown(self, **kwargs: object) -> None:
        pass


def subscriber(n: int, how: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """(run, close) of a subscriber whose callback keeps each event's latency, as overlay.py's does."""
    overlay = _Overlay(synchronous=(how != "pool"))
    node = LocalNode(overlay, "sub")  # type: ignore[arg-type]
    got: list[float] = []
    done = threading.Event()

    def on_event(ev: eventpy.Event) -> None:
        got.append(time.time() - eventpy.event_info(ev)[2])
        if len(got) == n:
            done.set()

    with node.lock:
        state = node.core.subscribe(Tick, compile_guard("True", Tick, {}), {}, on_event)
        node.core.take()
    chunks = reads(n, (state.sid,))

    def run() -> None:
        got.clear()
        done.clear()
        dec = FrameDecoder()
        if how == "inline":
            core = node.core
            for data in chunks:
                for msg in dec.feed(data):
                    for st, ev in core.receive(msg):
                        if passes(st, ev):
                            st.on_event(ev)
            if len(got) != n:  # a filter that dropped events would look fast
                raise RuntimeError(f"subscriber ({how}): {len(got)} of {n} events delivered")
        else:
            for data in chunks:
                receive_read(node, dec, data)  # as the client's reader does
            if not done.wait(120):
                raise RuntimeError(f"subscriber ({how}): {len(got)} of {n} events delivered")

    return run, overlay.pool.shutdown


def main() -> int:
    p = C.parser(__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=0, help="events per run (default 100,000; 10,000 with --quick)")
    args = p.parse_args()
    n = args.events or (10_000 if args.quick else 100_000)
    repeats = 3 if args.quick else 7
    chunks = reads(n)
    rows: list[tuple[str, float]] = []
    # the garbage collector runs as in each kind of process: the relay and the brokers with the
    # server settings (tune_gc_for_server), the subscriber with an application's defaults; its
    # collections are part of a process's cost, and the best of the repeats keeps their noise down
    for name, run in (("relay (decode + re-send)", relay(chunks)), ("decode", decode(chunks)),
                      ("broker, middle", broker_hop(chunks, "broker")),
                      ("broker, edge", broker_hop(chunks, "client"))):
        C.note(f"[{name}] ...")
        with server_gc():
            rows.append((name, timed(run, n, repeats)))
        counts = {len(FrameDecoder().feed(b"".join(frames))) for frames in getattr(run, "forwarded", ())}
        if counts and counts != {n}:
            raise AssertionError(f"{name}: forwarded {counts} events per run, expected {n}")
    for how in ("inline", "queued", "pool"):
        C.note(f"[subscriber, {how}] ...")
        run, close = subscriber(n, how)
        try:
            rows.append((f"subscriber, {how}", timed(run, n, repeats)))
        finally:
            close()
    base = rows[0][1]
    out = [{"part": name, "events": n, "cpu_us_per_event": round(us, 3), "vs_relay": round(us / base, 3)}
           for name, us in rows]
    if args.json:
        for row in out:
            C.emit_json(row)
    else:
        C.print_table("CPU per event in each part of the overlay's path (best of repeats)",
                      [("part", "left"), ("us/event", "right"), ("vs relay", "right")],
                      [(r["part"], C.fmt_us(r["cpu_us_per_event"]), C.fmt_ratio(r["vs_relay"])) for r in out],
                      caption=f"{C.machine()}; {C.source_state()}; {n:,} events, best of {repeats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
