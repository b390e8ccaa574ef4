"""Events per second through the embedded overlay (what `eventpy.connect()` gives by default),
against a bare thread hand-off measured in the same run.

    PYTHONPATH=. .venv/bin/python tools/bench/embedded.py [--quick] [--json] [--events N] [--repeats R]

* embedded: one node publishes N events back to back to a subscription (guard `True`) of another
  node in the same process: publish, the overlay thread's broker, the delivery pool, the callback,
  which keeps each event's latency. Timed from the first publish until `eventpy.drain()` returns.
* hand-off: the least a threaded publish/subscribe in Python does: the publishing thread puts each
  event's values and time on a queue.SimpleQueue, one consumer thread takes them and runs a
  callback doing the same latency bookkeeping. No schema, no matching, no local filter.
Each side runs --repeats times (3), alternated; the medians are compared. CPU is the process's
(every thread). Keys: path, events, events_per_s, cpu_us_per_event, p50_ms, p99_ms; the embedded
row also has vs_handoff (its events/s over the hand-off's).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

import eventpy  # noqa: E402

Tick = eventpy.EventType("bench.Tick", n=int, price=float)


def _summary(path: str, n: int, elapsed: float, cpu: float, lat: list[float]) -> dict:
    if len(lat) != n:
        raise SystemExit(f"{path}: {len(lat)} of {n} events delivered")
    lat.sort()
    return {"path": path, "events": n, "events_per_s": round(n / elapsed), "cpu_us_per_event": round(cpu / n * 1e6, 2),
            "p50_ms": round(lat[n // 2] * 1e3, 2), "p99_ms": round(lat[int(n * .99)] * 1e3, 2)}


def run_embedded(n: int) -> dict:
    eventpy.shutdown()  # a fresh embedded overlay for every run
    lat: list[float] = []
    sub = eventpy.connect(name="bench-sub")
    sub.subscribe(Tick, "True", on_event=lambda ev: lat.append(time.time() - eventpy.event_info(ev)[2]))
    pub = eventpy.connect(name="bench-pub")
    pub.advertise(Tick)
    eventpy.drain(30)
    t0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(n):
        pub.publish(Tick, n=i, price=1.0)
    eventpy.drain(120)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    eventpy.shutdown()
    return _summary("embedded", n, elapsed, cpu, lat)


def run_handoff(n: int) -> dict:
    q: queue.SimpleQueue = queue.SimpleQueue()
    lat: list[float] = []

    def consume() -> None:
        while (item := q.get()) is not None:
            lat.append(time.time() - item[1])

    consumer = threading.Thread(target=consume)
    consumer.start()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(n):
        q.put(((i, 1.0), time.time()))
    q.put(None)
    consumer.join()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return _summary("hand-off", n, elapsed, cpu, lat)


def main() -> int:
    p = C.parser(__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=0, help="events per run (default 100,000; 10,000 with --quick)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each side, alternated; medians compared")
    args = p.parse_args()
    n = args.events or (10_000 if args.quick else 100_000)
    runs: dict[str, list[dict]] = {"embedded": [], "hand-off": []}
    for r in range(max(1, args.repeats)):
        C.note(f"[run {r + 1}] embedded, hand-off ...")
        runs["embedded"].append(run_embedded(n))
        runs["hand-off"].append(run_handoff(n))
    rows = [sorted(rs, key=lambda x: x["events_per_s"])[len(rs) // 2] for rs in runs.values()]
    rows[0]["vs_handoff"] = round(rows[0]["events_per_s"] / rows[1]["events_per_s"], 3)
    if args.json:
        for row in rows:
            C.emit_json(row)
    else:
        C.print_table("Events through the embedded overlay against a bare thread hand-off (medians)",
                      [("path", "left"), ("events/s", "right"), ("CPU us/event", "right"), ("p50 ms", "right"),
                       ("p99 ms", "right")],
                      [(r["path"], f"{r['events_per_s']:,}", C.fmt_us(r["cpu_us_per_event"]), r["p50_ms"], r["p99_ms"])
                       for r in rows],
                      caption=f"{C.machine()}; {C.source_state()}; {n:,} events, {len(runs['embedded'])} runs each; "
                              f"embedded / hand-off: {C.fmt_ratio(rows[0]['vs_handoff'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
