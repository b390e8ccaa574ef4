"""Matching throughput of the subscription indexes (naive, poset, fastint) against a numpy scan.

    PYTHONPATH=. .venv/bin/python tools/bench/matching.py [--quick] [--json]

Workloads (fixed seed, 5 attributes, values uniform over [0, 1,000,000)):
* rein      -- every subscription constrains all 5 float attributes with a closed interval 30% as
               wide as the domain (the REIN/TAMA/OpIndex shape); events uniform over the domain.
* selective -- firm: str (100 values) + 4 floats; a subscription is `firm == one value` and one or
               two floats constrained to a closed interval 1% as wide as the domain; events uniform.

Per (workload, n) every matcher indexes the same n subscriptions and matches the same events.
`numpy-scan` is the brute-force baseline written here: per-attribute lower/upper bound arrays for
all n subscriptions, every constraint evaluated by numpy comparisons, ANDed, then flatnonzero.
An index that cannot take n subscriptions within --build-limit seconds is reported as skipped.
Every matcher's answers are checked against numpy-scan (itself checked against naive, the oracle)
on a sample of events before it is timed; a mismatch aborts (poset, still in progress, is
reported as skipped instead). us_per_event is the median over repeats of the mean time per event.
"""

from __future__ import annotations

import gc
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

import numpy as np  # noqa: E402

from eventpy.runtime.matching import MATCHERS, NaiveMatcher  # noqa: E402
from eventpy.runtime.model import EventType, Interval, ValueSet  # noqa: E402

ATTRS = 5
DOMAIN = 1_000_000.0
FIRMS = tuple(f"F{i:02d}" for i in range(100))
ORDER = ("naive", "poset", "fastint", "numpy-scan")


# -- the baseline -------------------------------------------------------------------------------------
class NumpyScan:
    """Brute force, vectorized: one pass of numpy comparisons over all n subscriptions per event.

    Every constraint becomes a closed range [lo, hi] over float64 (open bounds moved to the next
    float with nextafter, exact for float values; a wildcard is [-inf, inf]). Enumerated
    attributes are coded as floats: `firm == v` is the range [code(v), code(v)], an unknown event
    value gets a code no single-value constraint has. Lower bounds and negated upper bounds of all
    attributes are stacked in one (2k, n) array, so an event costs one broadcast `<=` against
    [v, -v], one AND-reduction over the 2k rows, and one flatnonzero. Attributes no subscription
    constrains are left out. Set constraints with several values or exclusions (absent from these
    workloads) are checked exactly, entry by entry, after the scan.
    """

    name = "numpy-scan"

    def __init__(self, etype: EventType) -> None:
        self.etype = etype
        self._keys: list = []
        self._filters: list = []
        self._frozen = False

    def add(self, key, flt) -> None:
        self._keys.append(key)
        self._filters.append(dict(flt))
        self._frozen = False

    def freeze(self) -> None:
        n = len(self._filters)
        los, nhis, enc = [], [], []
        self._special = []  # (event position, entry indices, constraints)
        for pos, (attr, t) in enumerate(self.etype.schema.items()):
            lo = np.full(n, -math.inf)
            nhi = np.full(n, -math.inf)  # -hi; a wildcard's hi is +inf
            special_idx, special_c = [], []
            if t in (int, float):
                for i, f in enumerate(self._filters):
                    c = f.get(attr)
                    if c is not None:
                        lo[i] = c.lo if c.lo_closed else math.nextafter(c.lo, math.inf)
                        nhi[i] = -(c.hi if c.hi_closed else math.nextafter(c.hi, -math.inf))
                encode = None
            else:
                codes: dict = {}
                for i, f in enumerate(self._filters):
                    c = f.get(attr)
                    if c is None:
                        continue
                    if not c.exclude and len(c.values) == 1:
                        (v,) = c.values
                        code = codes.setdefault(v, float(len(codes)))
                        lo[i] = code
                        nhi[i] = -code
                    elif not c.is_wildcard():
                        special_idx.append(i)
                        special_c.append(c)
                encode = codes
            if special_idx:
                self._special.append((pos, np.array(special_idx, dtype=np.int64), special_c))
            if np.isneginf(lo).all() and np.isneginf(nhi).all():
                continue  # no range constraint on this attribute: nothing to compare
            los.append(lo)
            nhis.append(nhi)
            enc.append((pos, encode))
        self._enc = enc
        k = len(los)
        self._bounds = np.ascontiguousarray(np.vstack(los + nhis)) if k else np.empty((0, n))
        self._vec = np.empty((2 * k, 1))
        self._cmp = np.empty((2 * k, n), dtype=bool)
        self._mask = np.empty(n, dtype=bool)
        self._frozen = True

    def match(self, values: tuple) -> list:
        if not self._frozen:
            self.freeze()
        if not self._enc:
            mask = np.ones(len(self._keys), dtype=bool)
        else:
            es = [values[p] if codes is None else codes.get(values[p], -0.5) for p, codes in self._enc]
            self._vec[:, 0] = es + [-e for e in es]
            np.less_equal(self._bounds, self._vec, out=self._cmp)
            mask = np.logical_and.reduce(self._cmp, axis=0, out=self._mask)
        for pos, idx, cons in self._special:
            v = values[pos]
            mask[idx] &= np.fromiter((c.contains(v) for c in cons), dtype=bool, count=len(cons))
        keys = self._keys
        return [keys[i] for i in np.flatnonzero(mask).tolist()]

    def __len__(self) -> int:
        return len(self._keys)


# -- workloads -----------------------------------------------------------------------------------------
def rein(n: int, events: int, rng: random.Random):
    etype = EventType("bench.Rein", **{f"a{i}": float for i in range(ATTRS)})
    width = 0.3 * DOMAIN
    filters = []
    for _ in range(n):
        flt = {}
        for a in etype.attrs:
            lo = rng.random() * (DOMAIN - width)
            flt[a] = Interval(lo, True, lo + width, True)
        filters.append(flt)
    evs = [tuple(rng.random() * DOMAIN for _ in range(ATTRS)) for _ in range(events)]
    return etype, filters, evs


def selective(n: int, events: int, rng: random.Random):
    etype = EventType("bench.Quote", firm=str, price=float, bid=float, ask=float, volume=float)
    numeric = etype.attrs[1:]
    width = 0.01 * DOMAIN
    filters = []
    for _ in range(n):
        flt = {"firm": ValueSet(frozenset((rng.choice(FIRMS),)))}
        for a in rng.sample(numeric, rng.choice((1, 2))):
            lo = rng.random() * (DOMAIN - width)
            flt[a] = Interval(lo, True, lo + width, True)
        filters.append(flt)
    evs = [(rng.choice(FIRMS),) + tuple(rng.random() * DOMAIN for _ in range(ATTRS - 1))
           for _ in range(events)]
    return etype, filters, evs


WORKLOADS = {"rein": rein, "selective": selective}


# -- measuring ------------------------------------------------------------------------------------------
@dataclass
class Built:
    matcher: object | None
    seconds: float
    indexed: int
    error: str = ""


def build(name: str, etype: EventType, filters: list, limit: float) -> Built:
    try:
        m = NumpyScan(etype) if name == "numpy-scan" else MATCHERS[name](etype)
    except Exception as e:  # a matcher being worked on may not even construct
        return Built(None, 0.0, 0, f"constructor failed: {type(e).__name__}: {e}")
    add = m.add
    try:
        with C.no_gc():
            t0 = C.perf()
            deadline = t0 + limit
            for i, flt in enumerate(filters):
                add(i, flt)
                if not i & 15 and C.perf() > deadline:
                    return Built(None, C.perf() - t0, i + 1)
            if isinstance(m, NumpyScan):
                m.freeze()
    except Exception as e:
        return Built(None, C.perf() - t0, 0, f"add failed: {type(e).__name__}: {e}")
    return Built(m, C.perf() - t0, len(filters))


def per_event(match, events: list) -> float:
    with C.no_gc():
        t = C.perf()
        for e in events:
            match(e)
        return (C.perf() - t) / len(events)


def chunk(events: list, r: int, k: int) -> list:
    """The r-th run's events: consecutive slices of the pool, wrapping around."""
    start = (r * k) % len(events)
    return (events[start:] + events)[:k]


class Mismatch(Exception):
    pass


def verify(name: str, m, events: list, expect: list[set], oracle: NaiveMatcher) -> None:
    for j, (e, want) in enumerate(zip(events, expect)):
        got = m.match(e)
        gset = set(got)
        if len(got) != len(gset):
            raise Mismatch(f"{name} returned duplicate keys for event #{j} {e!r}")
        if gset != want:
            truth = set(oracle.match(e))
            wrong = "numpy-scan (the baseline)" if truth == gset else name
            raise Mismatch(
                f"{name} and numpy-scan disagree on event #{j} {e!r}: {name} missing "
                f"{sorted(want - gset)[:10]}, extra {sorted(gset - want)[:10]}; naive says "
                f"{len(truth)} matches, so {wrong} is wrong")


def main() -> int:
    args = C.parser(__doc__.split("\n\n")[0]).parse_args()
    args.source = C.source_state()  # what was imported, before anyone edits it
    sizes = (1000, 10000) if args.quick else (1000, 10000, 100000)
    pool = 1000 if args.quick else 2000
    budget = 0.25 if args.quick else 0.6  # seconds per repeat
    repeats = 3 if args.quick else 7
    rows: list[dict] = []
    gave_up: dict[tuple[str, str], int] = {}  # (workload, matcher) -> n that exceeded the limit

    def out(row: dict) -> None:
        rows.append(row)
        if args.json:
            C.emit_json(row)

    poset_cls = MATCHERS.get("poset")
    poset_fallback = poset_cls is NaiveMatcher
    for wl, make in WORKLOADS.items():
        for n in sizes:
            rng = random.Random(f"{args.seed}/{wl}/{n}")
            etype, filters, events = make(n, pool, rng)
            C.note(f"[{wl} n={n}] building numpy-scan and naive ...")
            scan_b = build("numpy-scan", etype, filters, args.build_limit)
            naive_b = build("naive", etype, filters, args.build_limit)
            scan, oracle = scan_b.matcher, naive_b.matcher
            assert scan is not None and oracle is not None, "the baseline and the oracle must build"
            # numpy-scan's answers on the whole pool are the reference; naive checks them first
            expect = [set(scan.match(e)) for e in events]
            mpe = sum(map(len, expect)) / len(expect)
            # build and verify every matcher, then time them in interleaved rounds so that a
            # slow patch of the machine hits all of them alike
            results: dict[str, dict] = {}
            timed: list[tuple[str, object, int]] = []
            for name in ORDER:
                base = {"workload": wl, "matcher": name, "n": n, "attrs": ATTRS}
                if name == "poset" and poset_fallback:
                    results[name] = {**base, "us_per_event": None, "skipped": True,
                                     "reason": "eventpy.runtime.matching._poset failed to import; "
                                               "MATCHERS['poset'] is the naive fallback"}
                    continue
                earlier = gave_up.get((wl, name))
                if earlier is not None:
                    results[name] = {**base, "us_per_event": None, "skipped": True,
                                     "reason": f"not attempted: indexing n={earlier} already "
                                               f"exceeded {args.build_limit:g} s"}
                    continue
                b = {"numpy-scan": scan_b, "naive": naive_b}.get(name)
                if b is None:
                    C.note(f"[{wl} n={n}] building {name} ...")
                    b = build(name, etype, filters, args.build_limit)
                if b.matcher is None:
                    if b.error:
                        reason = b.error
                    else:
                        reason = (f"indexing exceeded {args.build_limit:g} s "
                                  f"({b.indexed} of {n} subscriptions added in {b.seconds:.0f} s)")
                        gave_up[(wl, name)] = n
                    C.note(f"[{wl} n={n}] {name} skipped: {reason}")
                    results[name] = {**base, "us_per_event": None, "skipped": True,
                                     "reason": reason, "build_s": round(b.seconds, 3)}
                    continue
                m = b.matcher
                # correctness first, on about a second's worth of events (at least 50)
                per = per_event(m.match, events[:3])
                nver = max(50, min(len(events), int(1.0 / max(per, 1e-9))))
                try:
                    with C.no_gc():
                        t = C.perf()
                        verify(name, m, events[:nver], expect[:nver], oracle)
                        per = (C.perf() - t) / nver  # a steadier estimate for sizing the runs
                except Exception as e:
                    if name != "poset":
                        C.note(f"ABORT: correctness check failed at workload={wl} n={n}: {e}")
                        return 2
                    reason = f"wrong results: {e}" if isinstance(e, Mismatch) else \
                        f"match failed: {type(e).__name__}: {e}"
                    C.note(f"[{wl} n={n}] poset skipped: {reason}")
                    results[name] = {**base, "us_per_event": None, "skipped": True,
                                     "reason": reason[:300]}
                    continue
                k = max(20, min(len(events), int(budget / max(per, 1e-9))))
                results[name] = {**base, "us_per_event": None, "matches_per_event": round(mpe, 3),
                                 "build_s": round(b.seconds, 3), "events": k, "repeats": repeats,
                                 "verified_events": nver}
                timed.append((name, m, k))
            C.note(f"[{wl} n={n}] timing {', '.join(t[0] for t in timed)}: {repeats} rounds ...")
            times: dict[str, list[float]] = {name: [] for name, _, _ in timed}
            for r in range(repeats):
                for name, m, k in timed:
                    times[name].append(per_event(m.match, chunk(events, r, k)))
            for name in ORDER:
                row = results[name]
                if name in times:
                    row["us_per_event"] = round(C.median(times[name]) * 1e6, 3)
                    row["spread"] = round(C.spread(times[name]), 3)
                out(row)
            del scan, oracle, scan_b, naive_b, expect, filters, timed, results
            gc.collect()

    checks = make_checks(rows, args.quick)
    if args.json:
        for c in checks:
            C.emit_json(c)
    else:
        render(rows, checks, args)
    return 0


def _us(rows: list[dict], wl: str, matcher: str, n: int) -> float | None:
    for r in rows:
        if r["workload"] == wl and r["matcher"] == matcher and r["n"] == n:
            return r.get("us_per_event")
    return None


def make_checks(rows: list[dict], quick: bool) -> list[dict]:
    why = "needs n=100000 (full run, not --quick)" if quick else "a figure is missing (skipped)"
    if not quick:
        skipped = [f"{r['matcher']} {r['workload']} n={r['n']}: {r['reason']}" for r in rows
                   if r.get("skipped") and r["matcher"] != "poset"]
        why = "not measurable: " + skipped[0] if skipped else why
    checks = []
    for wl in WORKLOADS:
        naive, fast = _us(rows, wl, "naive", 100000), _us(rows, wl, "fastint", 100000)
        ratio = naive / fast if naive and fast else None
        checks.append(C.check(f"fastint vs naive, {wl}, n=100000", ">= 100x faster", ratio,
                              lambda x: x >= 100,
                              f"naive {C.fmt_us(naive)} us, fastint {C.fmt_us(fast)} us", why))
    a, b = _us(rows, "selective", "fastint", 10000), _us(rows, "selective", "fastint", 100000)
    growth = b / a if a and b else None
    checks.append(C.check("fastint selective growth n=10000 -> 100000", "<= 1.5x", growth,
                          lambda x: x <= 1.5, f"{C.fmt_us(a)} us -> {C.fmt_us(b)} us", why))
    scan, fast = _us(rows, "rein", "numpy-scan", 100000), _us(rows, "rein", "fastint", 100000)
    ratio = scan / fast if scan and fast else None
    checks.append(C.check("fastint vs numpy-scan, rein, n=100000",
                          "fastint no slower (>= 1.00x)", ratio, lambda x: x >= 1.0,
                          f"numpy-scan {C.fmt_us(scan)} us, fastint {C.fmt_us(fast)} us", why))
    return checks


def render(rows: list[dict], checks: list[dict], args) -> None:
    table = []
    for r in rows:
        naive = _us(rows, r["workload"], "naive", r["n"])
        scan = _us(rows, r["workload"], "numpy-scan", r["n"])
        us = r.get("us_per_event")
        if us is None:
            table.append((r["workload"], r["matcher"], f"{r['n']:,}", r["attrs"], "skipped", "-",
                          "-", "-", "-", "-", r.get("reason", "")))
            continue
        table.append((r["workload"], r["matcher"], f"{r['n']:,}", r["attrs"], C.fmt_us(us),
                      C.fmt_ratio(naive / us) if naive else "-",
                      C.fmt_ratio(scan / us) if scan else "-",
                      f"{r['matches_per_event']:.2f}", f"{r['build_s']:.2f}",
                      f"{r['events']}x{r['repeats']}", f"±{r['spread'] * 50:.0f}%"))
    C.print_table(
        "Matching: microseconds per event (median of repeats)",
        [("workload", "left"), ("matcher", "left"), ("n", "right"), ("attrs", "right"),
         ("us/event", "right"), ("vs naive", "right"), ("vs numpy-scan", "right"),
         ("matches/ev", "right"), ("build s", "right"), ("events x reps", "right"),
         ("spread / note", "left")],
        table,
        caption=(f"{C.machine()}; {args.source}; seed {args.seed}. "
                 "'vs X' = X's time / this time (>1: faster)."
                 " spread = half the max-min range of the repeats, relative to the median."))
    C.print_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
