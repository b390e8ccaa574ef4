"""Cost at the edge broker of adding one member to a large set parameter: parametric UPD vs resub.

    PYTHONPATH=. .venv/bin/python tools/bench/set_updates.py [--quick] [--json]

One sans-I/O `Broker(mode=..., matcher="fastint", summary=...)` with an upstream broker link and
one client whose guard is `firm in follows and price < cap`, `follows` a set of n strings (a
user following many categories, a watch list). Each update adds one new member and drops the
oldest (the set keeps its size), as a real `ClientCore` sends it: a UPD carrying the members
lost and gained (parametric), or a SUB of the whole new set then an UNSUB (resub). Only
`broker.handle` of those messages is timed; ms_per_update is the median over repeats of the
mean per update. The baseline, in the same run, is resub. After timing, the broker's filter
must equal the client's set and the UPD it sent upstream must carry only the change.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from eventpy.guards import compile_guard  # noqa: E402
from eventpy.runtime.broker import Broker  # noqa: E402
from eventpy.runtime.client import ClientCore  # noqa: E402
from eventpy.runtime.messages import Adv, Upd  # noqa: E402
from eventpy.runtime.model import EventType, SetDelta, ValueSet  # noqa: E402

GUARD = "firm in follows and price < cap"


def measure(mode: str, summary: str, n: int, updates: int) -> tuple[float, list]:
    """Seconds per update at the broker, and what it sent upstream for the last one."""
    etype = EventType("bench.Offer", firm=str, price=float)
    plan = compile_guard(GUARD, etype, {"follows": set, "cap": float})
    broker = Broker("edge", mode=mode, matcher="fastint", summary=summary)
    broker.connect("up", "broker")
    broker.handle("up", Adv(etype.name, etype.to_wire()))
    broker.connect("c", "client")
    core = ClientCore("c", mode=mode, clock=lambda: 0.0)
    members = [f"F{i:06d}" for i in range(n)]
    state = core.subscribe(etype, plan, {"follows": set(members), "cap": 100.0}, lambda e: None)
    for msg in core.take():
        broker.handle("c", msg)
    batch = []
    for i in range(updates):
        members.append(f"N{i:06d}")
        members.pop(0)
        core.update(state, {"follows": set(members)})
        batch.append(core.take())
    last: list = []
    with C.no_gc():
        t = C.perf()
        for msgs in batch:
            for msg in msgs:
                last = broker.handle("c", msg)
        dt = C.perf() - t
    ts = broker.types[etype.name]
    (sub,) = ts.subs.values()
    got = sub.filter(0)["firm"]
    if got != ValueSet(frozenset(members)):
        raise AssertionError(f"{mode}/{summary}: the broker holds {len(got.values)} members, the client {n}")
    return dt / updates, last


def main() -> int:
    p = C.parser(__doc__.split("\n\n")[0])
    args = p.parse_args()
    sizes = (1000, 10000) if args.quick else (1000, 10000, 50000)
    repeats = 3 if args.quick else 5
    rows = []
    failed = False
    for summary in ("attribute", "poset"):
        for n in sizes:
            updates = max(5, 200000 // n)
            times: dict[str, list[float]] = {"parametric": [], "resub": []}
            for _ in range(repeats):  # interleaved, so a slow patch of the machine hits both modes
                for mode in times:
                    C.note(f"[{summary} n={n}] {mode} ...")
                    per, last = measure(mode, summary, n, updates)
                    times[mode].append(per)
                    if mode == "parametric":
                        (target, upd), = last
                        (value, _), = upd.changes.values()
                        if type(upd) is not Upd or type(value) is not SetDelta:
                            failed = True
                            C.note(f"FAIL: the UPD upstream carried {type(value).__name__}, not the change")
            par, res = C.median(times["parametric"]), C.median(times["resub"])
            row = {"summary": summary, "n": n, "parametric_ms": round(par * 1e3, 3),
                   "resub_ms": round(res * 1e3, 3), "ratio": round(res / par, 2),
                   "spread": round(max(C.spread(times["parametric"]), C.spread(times["resub"])), 3)}
            rows.append(row)
            if args.json:
                C.emit_json(row)
    if not args.json:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="adding one member to a set parameter, at the edge broker (ms per update)")
        for col in ("summary", "members", "parametric", "resub", "resub/parametric", "spread"):
            table.add_column(col, justify="right")
        for r in rows:
            table.add_row(r["summary"], f"{r['n']:,}", f"{r['parametric_ms']:.3f}", f"{r['resub_ms']:.3f}",
                          f"{r['ratio']:.2f}x", f"{r['spread']:.2f}")
        Console(width=120).print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
