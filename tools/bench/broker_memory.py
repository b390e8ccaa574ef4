"""Does a broker give its memory back? N random subscribe / update / unsubscribe operations (and
client disconnects) from 50 clients against one sans-I/O broker, ending with nothing live; the
broker's heap (tracemalloc) is compared with what it held before the first operation.

    python tools/bench/broker_memory.py [--ops 100000] [--role edge|root] [--matcher fastint]

`edge`: a broker with a publisher's broker upstream (it sends summaries); `root`: one nothing
upstream reads (the embedded broker, the root of an overlay). Prints the heap before, at the
peak, and after, in KiB, and the broker's tables that still hold something.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "runtime" / "broker")]

from eventpy.guards import compile_guard  # noqa: E402
from eventpy.runtime.broker import Broker  # noqa: E402
from eventpy.runtime.client import ClientCore  # noqa: E402
from eventpy.runtime.messages import Adv  # noqa: E402
from eventpy.runtime.model import EventType  # noqa: E402

from _tables import leftovers  # noqa: E402

Q = EventType("mem.Quote", firm=str, price=float, vol=int)
FIRMS = ["IBM", "HP", "ORCL", "SUN"]
GUARDS = [("firm == f and price < limit", lambda r: {"f": r.choice(FIRMS), "limit": r.uniform(-50, 50)}),
          ("firm in w and vol > v", lambda r: {"w": set(r.sample(FIRMS, r.randint(0, 3))), "v": r.randint(-9, 9)}),
          ("price >= lo and price <= hi or active", lambda r: {"lo": r.uniform(-50, 0), "hi": r.uniform(0, 50),
                                                                "active": r.random() < 0.5})]
PLANS = [(compile_guard(text, Q, {k: type(v) for k, v in gen(random.Random(0)).items()}), gen) for text, gen in GUARDS]


def run(ops: int, role: str, matcher: str, seed: int = 1) -> dict:
    rng = random.Random(seed)
    tracemalloc.start()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    b = Broker("b", matcher=matcher)
    if role == "edge":
        b.connect("up", "broker")
        b.handle("up", Adv(Q.name, Q.to_wire()))
    else:
        b.connect("pub", "client")
        b.handle("pub", Adv(Q.name, Q.to_wire()))
    cores: dict[str, ClientCore] = {}
    live: dict[str, list] = {}
    names: list[str] = []  # the clients attached now
    n_links = 0

    def attach() -> str:
        nonlocal n_links
        n_links += 1
        name = f"c{n_links}"  # a reconnecting process gets a new link name, as over TCP
        cores[name] = ClientCore(name)
        names.append(name)
        live[name] = []
        b.connect(name, "client")
        return name

    def send(name: str) -> None:
        for msg in cores[name].take():
            b.handle(name, msg)

    for _ in range(50):
        attach()
    gc.collect()
    start = tracemalloc.get_traced_memory()[0]
    for i in range(ops):
        name = rng.choice(names)
        core, subs = cores[name], live[name]
        x = rng.random()
        if x < 0.3 or not subs:
            plan, gen = rng.choice(PLANS)
            subs.append((core.subscribe(Q, plan, gen(rng), None), gen))
        elif x < 0.8:
            state, gen = rng.choice(subs)
            core.update(state, gen(rng))
        elif x < 0.998:
            state, _ = subs.pop(rng.randrange(len(subs)))
            core.unsubscribe(state)
        else:  # the client goes without a word; another takes its place
            b.disconnect(name)
            del cores[name], live[name]
            names.remove(name)
            attach()
            continue
        send(name)
    for name in list(cores):  # nothing live at the end: half close, half just go
        if rng.random() < 0.5:
            for state, _ in live[name]:
                cores[name].unsubscribe(state)
            send(name)
        b.disconnect(name)
    cores.clear()
    live.clear()
    gc.collect()
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"before_kib": (start - before) / 1024, "peak_kib": (peak - before) / 1024,
            "after_kib": (after - before) / 1024, "leftovers": leftovers(b, {"up", "pub"})}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", type=int, default=100_000)
    p.add_argument("--role", choices=["edge", "root"], default="edge")
    p.add_argument("--matcher", choices=["fastint", "poset", "naive"], default="fastint")
    args = p.parse_args()
    run(3000, args.role, args.matcher, seed=0)  # warm up: the modules the run imports on the way
    r = run(args.ops, args.role, args.matcher)
    print(f"{args.role} broker, {args.matcher}, {args.ops} operations: heap before "
          f"{r['before_kib']:.0f} KiB, peak {r['peak_kib']:.0f} KiB, after {r['after_kib']:.0f} KiB; "
          f"tables still holding something: {r['leftovers'] or 'none'}")


if __name__ == "__main__":
    main()
