"""Cost at the edge broker of changing one parameter of one subscription: parametric UPD vs resub.

    PYTHONPATH=. .venv/bin/python tools/bench/updates.py [--quick] [--json] [--client-adv]

One sans-I/O `Broker(mode=..., matcher=...)` has one upstream broker link ("up", which advertised
stocks.Quote) and n client links, each with one subscription made by a real `ClientCore`:
`firm == f and price > lo and price < hi` (100 firms, windows 1% of the price range). The SUB
messages the cores emit are fed to `broker.handle` (with --client-adv also the ADV every core
sends before its first SUB, as the embedded overlay does).

Then each update picks a random subscription and changes one parameter, `lo` or `hi` (alternately)
to a fresh random value that keeps the window non-empty, so the window random-walks and no update
is a no-op. The client core turns it into the messages it really sends: an UPD (parametric) or a
SUB of a new sid then an UNSUB of the old one (resub). Messages are generated before the timed
region; only `broker.handle` of them is timed, which includes the broker's summary maintenance and
propagation upstream. us_per_update is the median over repeats of the mean time per update.
After timing, the broker's filters are checked against the clients' own values, and 2,000 random
events are matched by the broker's matcher and by a naive one built from those values (the same
subscriptions must come out), then the matcher's own invariants are checked.
"""

from __future__ import annotations

import gc
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from eventpy.guards import compile_guard  # noqa: E402
from eventpy.runtime.broker import Broker  # noqa: E402
from eventpy.runtime.client import ClientCore  # noqa: E402
from eventpy.runtime.matching import MATCHERS, NaiveMatcher  # noqa: E402
from eventpy.runtime.messages import Adv, Sub  # noqa: E402
from eventpy.runtime.model import EventType, Interval, ValueSet  # noqa: E402

GUARD = "firm == f and price > lo and price < hi"
PARAMS = {"f": str, "lo": float, "hi": float}
FIRMS = tuple(f"F{i:02d}" for i in range(100))
PRICE = 1000.0
WIDTH = 0.01 * PRICE
MATCHER_ORDER = ("fastint", "poset", "naive")
MODES = ("parametric", "resub")


def _ignore(event) -> None:
    pass


class SetupTimeout(Exception):
    pass


def setup(matcher: str, mode: str, n: int, rng: random.Random, limit: float, client_adv: bool):
    etype = EventType("stocks.Quote", firm=str, price=float, volume=float)
    plan = compile_guard(GUARD, etype, PARAMS)
    broker = Broker("edge", mode=mode, matcher=matcher)
    broker.connect("up", "broker")
    broker.handle("up", Adv(etype.name, etype.to_wire()))
    clients = []
    t0 = C.perf()
    deadline = t0 + limit
    for i in range(n):
        link = f"client{i}"
        broker.connect(link, "client")
        core = ClientCore(link, mode=mode, clock=lambda: 0.0)
        lo = rng.random() * (PRICE - WIDTH)
        state = core.subscribe(etype, plan, {"f": rng.choice(FIRMS), "lo": lo, "hi": lo + WIDTH}, _ignore)
        for msg in core.take():
            if client_adv or type(msg) is Sub:
                broker.handle(link, msg)
        clients.append((link, core, state))
        if not i & 15 and C.perf() > deadline:
            raise SetupTimeout(f"setting up the subscriptions exceeded {limit:g} s "
                               f"({i + 1} of {n} done in {C.perf() - t0:.0f} s)")
    if broker.subscription_count() != n:
        raise AssertionError(f"broker holds {broker.subscription_count()} subscriptions, expected {n}")
    return broker, clients, C.perf() - t0


def generate(clients: list, count: int, rng: random.Random, counter: list[int]) -> list:
    """`count` updates as (link, messages) pairs, produced by the client cores."""
    out = []
    for _ in range(count):
        link, core, state = clients[rng.randrange(len(clients))]
        lo, hi = state.env["lo"], state.env["hi"]
        counter[0] += 1
        if counter[0] & 1:
            changed = core.update(state, {"lo": hi - rng.uniform(0.1, 2.0) * WIDTH})
        else:
            changed = core.update(state, {"hi": lo + rng.uniform(0.1, 2.0) * WIDTH})
        msgs = core.take()
        if changed != 1 or not msgs:
            raise AssertionError(f"update of {link} was a no-op (changed={changed}, messages={msgs})")
        out.append((link, msgs))
    return out


def run(batch: list, handle) -> tuple[float, int]:
    upstream = 0
    with C.no_gc():
        t = C.perf()
        for link, msgs in batch:
            for msg in msgs:
                upstream += len(handle(link, msg))
        dt = C.perf() - t
    return dt, upstream


def verify(broker: Broker, clients: list, rng: random.Random) -> None:
    ts = broker.types["stocks.Quote"]
    sample = clients if len(clients) <= 2000 else rng.sample(clients, 2000)
    for link, core, state in sample:
        want = {"firm": ValueSet(frozenset((state.env["f"],))),
                "price": Interval(state.env["lo"], False, state.env["hi"], False)}
        sub = ts.subs.get((link, state.sid))
        if sub is None:
            raise AssertionError(f"broker has no subscription ({link}, {state.sid})")
        got = dict(ts.matcher.filter_of((link, state.sid, 0)))
        if got != want or sub.filter(0) != want:
            raise AssertionError(f"broker filter of ({link}, {state.sid}) is {got}, client has {want}")
    if len(ts.subs) != len(clients):
        raise AssertionError(f"broker holds {len(ts.subs)} subscriptions, expected {len(clients)}")
    # what the updates changed is the index, not only the stored filters: events matched by the
    # broker's matcher against a naive one built from the clients' own values
    oracle = NaiveMatcher(ts.etype)
    for link, core, state in clients:
        oracle.add((link, state.sid, 0), {"firm": ValueSet(frozenset((state.env["f"],))),
                                          "price": Interval(state.env["lo"], False, state.env["hi"], False)})
    for _ in range(2000):
        values = (rng.choice(FIRMS), rng.uniform(0, PRICE), rng.uniform(0, 1000))
        got, want = sorted(ts.matcher.match(values)), sorted(oracle.match(values))
        if got != want:
            raise AssertionError(f"the broker matched {len(got)} subscriptions to {values}, the oracle "
                                 f"{len(want)}")
    check = getattr(ts.matcher, "check", None)
    if check is not None:
        check()  # the matcher's own invariants (fastint: each index equals a fresh marking)


class Live:
    """One broker being timed: its clients, its pre-generated update batches, its results."""

    def __init__(self, mode: str, broker: Broker, clients: list, batches: list, rng) -> None:
        self.mode = mode
        self.broker = broker
        self.clients = clients
        self.batches = batches
        self.rng = rng
        self.times: list[float] = []
        self.upstream = 0
        self.failed = ""


def main() -> int:
    p = C.parser(__doc__.split("\n\n")[0])
    p.add_argument("--client-adv", action="store_true",
                   help="also feed the ADV each client core sends before its SUB")
    p.add_argument("--matchers", default=",".join(MATCHER_ORDER),
                   help=f"comma-separated subset of {','.join(MATCHER_ORDER)}")
    args = p.parse_args()
    args.source = C.source_state()  # what was imported, before anyone edits it
    matchers = [m for m in MATCHER_ORDER if m in args.matchers.split(",")]
    sizes = (1000,) if args.quick else (1000, 10000)
    budget = 0.25 if args.quick else 0.6  # seconds per repeat
    repeats = 3 if args.quick else 7
    rows: list[dict] = []
    gave_up: dict[tuple[str, int], str] = {}

    def out(row: dict) -> None:
        rows.append(row)
        if args.json:
            C.emit_json(row)

    poset_fallback = MATCHERS.get("poset") is NaiveMatcher
    for matcher in matchers:
        for n in sizes:
            # set up both modes, then time them in interleaved rounds so that a slow patch of the
            # machine hits parametric and resub alike
            results: dict[str, dict] = {}
            live: list[Live] = []
            for mode in MODES:
                base = {"matcher": matcher, "mode": mode, "n": n}
                if args.client_adv:
                    base["client_adv"] = True
                if matcher == "poset" and poset_fallback:
                    results[mode] = {**base, "us_per_update": None, "skipped": True,
                                     "reason": "eventpy.runtime.matching._poset failed to import; "
                                               "MATCHERS['poset'] is the naive fallback"}
                    continue
                if (matcher, n) in gave_up:
                    results[mode] = {**base, "us_per_update": None, "skipped": True,
                                     "reason": f"not attempted: {gave_up[(matcher, n)]}"}
                    continue
                rng = random.Random(f"{args.seed}/updates/{n}")  # same subscriptions in both modes
                C.note(f"[{matcher} {mode} n={n}] setting up ...")
                try:
                    broker, clients, setup_s = setup(matcher, mode, n, rng, args.build_limit,
                                                     args.client_adv)
                    urng = random.Random(f"{args.seed}/updates/{n}/moves")
                    counter = [0]
                    warm = generate(clients, 50, urng, counter)
                    dt, _ = run(warm, broker.handle)
                    k = max(50, min(20000, int(budget / max(dt / len(warm), 1e-9))))
                    batches = [generate(clients, k, urng, counter) for _ in range(repeats)]
                except SetupTimeout as e:
                    gave_up[(matcher, n)] = f"the same setup in {mode} mode: {e}"
                    C.note(f"[{matcher} {mode} n={n}] skipped: {e}")
                    results[mode] = {**base, "us_per_update": None, "skipped": True, "reason": str(e)}
                    continue
                except Exception as e:
                    if matcher != "poset":
                        C.note(f"ABORT: {matcher} {mode} n={n}: {type(e).__name__}: {e}")
                        return 2
                    reason = f"setup failed: {type(e).__name__}: {e}"
                    C.note(f"[{matcher} {mode} n={n}] skipped: {reason}")
                    results[mode] = {**base, "us_per_update": None, "skipped": True,
                                     "reason": reason[:300]}
                    continue
                results[mode] = {**base, "us_per_update": None, "updates": k, "repeats": repeats,
                                 "setup_s": round(setup_s, 3)}
                live.append(Live(mode, broker, clients, batches, urng))
            if live:
                C.note(f"[{matcher} n={n}] timing {', '.join(x.mode for x in live)}: "
                       f"{repeats} rounds ...")
            for r in range(repeats):
                for x in live:
                    if x.failed:
                        continue
                    try:
                        dt, up = run(x.batches[r], x.broker.handle)
                    except Exception as e:
                        x.failed = f"failed: {type(e).__name__}: {e}"
                        continue
                    x.times.append(dt / len(x.batches[r]))
                    x.upstream += up
            for x in live:
                row = results[x.mode]
                if not x.failed:
                    try:
                        verify(x.broker, x.clients, x.rng)
                        refused = x.broker.stats.get("refused", 0)
                        if refused:
                            raise AssertionError(f"the broker refused {refused} messages")
                    except Exception as e:
                        x.failed = f"wrong state after the updates: {type(e).__name__}: {e}"
                if x.failed:
                    if matcher != "poset":
                        C.note(f"ABORT: {matcher} {x.mode} n={n}: {x.failed}")
                        return 2
                    C.note(f"[{matcher} {x.mode} n={n}] skipped: {x.failed}")
                    results[x.mode] = {**{k: row[k] for k in ("matcher", "mode", "n")},
                                       "us_per_update": None, "skipped": True,
                                       "reason": x.failed[:300]}
                    continue
                row["us_per_update"] = round(C.median(x.times) * 1e6, 3)
                row["spread"] = round(C.spread(x.times), 3)
                row["upstream_msgs_per_update"] = round(
                    x.upstream / sum(len(b) for b in x.batches), 4)
            for mode in MODES:
                out(results[mode])
            del live
            gc.collect()

    ratios = make_ratios(rows, matchers)
    checks = make_checks(rows, ratios, args.quick)
    if args.json:
        for r in ratios:
            C.emit_json(r)
        for c in checks:
            C.emit_json(c)
    else:
        render(rows, ratios, checks, args)
    return 0


def _us(rows: list[dict], matcher: str, mode: str, n: int) -> float | None:
    for r in rows:
        if r["matcher"] == matcher and r["mode"] == mode and r["n"] == n:
            return r.get("us_per_update")
    return None


def make_ratios(rows: list[dict], matchers: list[str]) -> list[dict]:
    out = []
    for matcher in matchers:
        for n in sorted({r["n"] for r in rows}):
            par, res = _us(rows, matcher, "parametric", n), _us(rows, matcher, "resub", n)
            out.append({"ratio": "resub/parametric", "matcher": matcher, "n": n,
                        "value": round(res / par, 3) if par and res else None,
                        "parametric_us": par, "resub_us": res})
    return out


def make_checks(rows: list[dict], ratios: list[dict], quick: bool) -> list[dict]:
    checks = []
    for matcher, target in (("fastint", 20.0), ("poset", 2.0)):
        r = next((r for r in ratios if r["matcher"] == matcher and r["n"] == 10000), None)
        value = r["value"] if r else None
        detail = (f"resub {C.fmt_us(r['resub_us'])} us / parametric {C.fmt_us(r['parametric_us'])} us"
                  if r and value else "")
        if quick:
            why = "needs n=10000 (full run, not --quick)"
        else:
            skipped = [f"{x['mode']}: {x['reason']}" for x in rows
                       if x["matcher"] == matcher and x["n"] == 10000 and x.get("skipped")]
            why = ("not measurable: " + skipped[0]) if skipped else f"{matcher} not run"
        checks.append(C.check(f"{matcher}: resub/parametric at n=10000", f">= {target:g}x", value,
                              lambda x, t=target: x >= t, detail, why))
    return checks


def render(rows: list[dict], ratios: list[dict], checks: list[dict], args) -> None:
    table = []
    for r in rows:
        us = r.get("us_per_update")
        if us is None:
            table.append((r["matcher"], r["mode"], f"{r['n']:,}", "skipped", "-", "-", "-", "-",
                          r.get("reason", "")))
            continue
        table.append((r["matcher"], r["mode"], f"{r['n']:,}", C.fmt_us(us),
                      f"{r['upstream_msgs_per_update']:.3f}", f"{r['setup_s']:.2f}",
                      f"{r['updates']}x{r['repeats']}", f"±{r['spread'] * 50:.0f}%", ""))
    feed = "SUB and ADV" if args.client_adv else "SUB"
    C.print_table(
        "Updates at the edge broker: microseconds per parameter change (median of repeats)",
        [("matcher", "left"), ("mode", "left"), ("n", "right"), ("us/update", "right"),
         ("upstream msgs/update", "right"), ("setup s", "right"), ("updates x reps", "right"),
         ("spread", "right"), ("note", "left")],
        table,
        caption=(f"{C.machine()}; {args.source}; seed {args.seed}; "
                 f"clients' {feed} messages fed at setup."
                 " spread = half the max-min range of the repeats, relative to the median."))
    C.print_table(
        "resub / parametric (same run)",
        [("matcher", "left"), ("n", "right"), ("parametric us", "right"), ("resub us", "right"),
         ("resub/parametric", "right")],
        [(r["matcher"], f"{r['n']:,}", C.fmt_us(r["parametric_us"]), C.fmt_us(r["resub_us"]),
          C.fmt_ratio(r["value"])) for r in ratios])
    C.print_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
