"""The broker-less overlay of paper 004 (eventpy.p2p) through the experiments of its §6: Figure 5 (a)-(i) and Figure 6.

    PYTHONPATH=. .venv/bin/python tools/bench/p2p.py [--quick] [--json] [--seed S] [--jobs 2] [--only conv,fig6]

The paper's figures are lost in its text; what is reproduced is each setup and the trends the text
states, as checks (FAIL: the trend did not show in this run; the detail says what was measured).
Every run is PeerSim-style (eventpy.p2p._network.Network): one cycle delivers the messages of the
previous one, runs each peer's connection management, publishes the cycle's events.

Parameters common to every run, and why:
* Event space: 4 integer attributes over [1, 128] (`Space.uniform(4)`). The paper uses up to 10;
  the cost of a peer grows with its dz-expressions, and 4 attributes already give 3 per peer at
  r = 4 and about 50 at r = 64.
* Publishers: 3, each advertising the whole space, out-degree m like every peer. 004 does not say
  how many; with whole-space advertisements every top-level subscriber must be a child of all
  three (Algorithm 1 line 4: covered by all relevant publishers), the hardest case for notified.
* Subscriptions: `W.subscription`, each side a uniform 5-50% of its domain, around a uniform
  centre (W1) or a hot-spot centre (W2: 4-6 hot spots, 80-20 Zipf, `W.Hotspots.draw`). Events
  follow the same distribution as the subscriptions (uniform in W1, the same hot spots in W2).
* Gossip: 8 descriptors per cycle, partial view 5% of the peers (§6), timeout 10 cycles (Algorithm
  3), rate window 10 cycles.
* Figure 5's runs: m = round(log2 n) (§6), r = 4, Δ uniform in 3..8 hops ("moderate delay
  requirements ... such that convergence can be achieved"), allowed false positives 100% of the
  event rate, i.e. coarsening is never refused: with 3 whole-space publishers a smaller allowance
  leaves part of the space without a top-level peer (Figure 6 measures that), 25 events per cycle.
* Figure 6: n = 150, S1 moderate Δ 3..8, S2 tight Δ 2..4 (with m = 6, 2 hops reach at most
  6 + 36 peers: not all tight peers fit), m = 6 and 12 as in the paper, allowed false positives
  0, 3.1, 6.2, 12.5, 25, 50% (the paper's points), 50 events per cycle (false positives are
  measured against the event rate: more events, finer shares), 150 cycles.

Measures:
* converged: `Network.converged()`, every cycle, all subscribers.
* notified: `Network.notified(sample)`, probe events, every 5 cycles on a sample of 100 (Figure
  5) or all subscribers every 10 cycles (Figure 6). Measuring does not change a run (notified()
  samples with its own generator).
* construction time: the first probe with at least 90% of the sample notified (the overlay never
  stays at exactly 100%: peers keep coarsening and re-parenting).
* CONNECT requests per peer (Figure 5 (c)): each subscriber's count when the overlay was built.
* actual false positives (Figure 6 (b)): the false positives a subscriber received per cycle over
  the last 50 cycles, divided by the events published per cycle, averaged over subscribers.

Sizes (full: about 5 minutes on 2 cores, 2-3x that on a loaded machine; `--quick`: 23 runs, 314 s of
runs on a loaded machine (2026-11-27), half that in wall time on 2 workers, most of it Figure 6's 0%
runs; too small for the trends):
* (a)-(c) n = 500, 250 cycles; (h) n = 125, 250, 500, 1000 (each run stops once built; 300 cycles
  at most; `--scale-n` for others): the paper's 7000 peers are out of reach in a few minutes, a
  cycle of 1000 peers takes ~0.15 s and a run ~40 s.
* (d)-(g) n = 300, 200 cycles of warm-up (built by then), then per churn level a copy of the
  warmed overlay: 0-5% of n leave and as many join every cycle for 100 cycles, or 10/25/40% leave
  and join at once and 100 quiet cycles follow.
* (i) W1, n = 150, r = 4, 8, 16, 32 (the first mapping's limit, Algorithm 4), 100 cycles: about
  3 to 11 dz-expressions per peer where the paper goes from 4 to 256. r = 64 (about 50 at join)
  took 157 s for 80 cycles when the gossip filter compared every pair of two peers' expressions
  (it now skips peers that cannot nest first); left out.
* parts: Figure 6's S1 with m = 6 again, with 8 publishers each advertising an eighth of the space
  (the sub-spaces of the first 3 splits) instead of 3 whole-space ones: 004 does not say how its
  publishers advertised, and this decides how many subscribers fit at the top. No check.
* Figure 6: the 0% runs cost 5-20x the others (peers refine towards their exact mappings, 17-25
  dz-expressions each).

The runs themselves are in `_p2p_runs.py`. Runs are independent and spread over `--jobs` worker
processes (the churn levels of one workload share one warm-up inside a worker).
"""

from __future__ import annotations

import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
from _p2p_runs import EXPERIMENTS, FULL, LEVEL, QUICK, Setup, log2m, run_all, tasks  # noqa: E402


# --- report -------------------------------------------------------------------------------------------
def pct(x: float | None, digits: int = 0) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f}%"


def cyc(x: int | None, cap: int) -> str:
    return f"> {cap}" if x is None else str(x)


def pts_check(name: str, target: str, measured: float | None, ok, detail: str, missing: str = "") -> dict:
    """A check whose figure is in percentage points (or a plain number), not a ratio."""
    c = C.check(name, target, measured, ok, detail, missing)
    c["unit"] = "pts"
    return c


def num_check(name: str, target: str, measured: float | None, ok, detail: str, missing: str = "") -> dict:
    c = C.check(name, target, measured, ok, detail, missing)
    c["unit"] = ""
    return c


def setup_json(s: Setup) -> dict:
    return {"n": s.n, "m": s.m, "workload": s.workload, "delays": list(s.delays), "fp_budget": s.fp, "r": s.r,
            "dims": s.dims, "publishers": 2 ** s.parts if s.parts else s.publishers, "parts": s.parts,
            "events_per_cycle": s.events}


def tail_mean(series: list[tuple[int, float]], k: int = 3) -> float:
    return statistics.mean(v for _, v in series[-k:])


BUCKETS = [(1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, 10 ** 9)]


def report_conv(res: dict, z: dict, out: dict) -> list[dict]:
    runs = {wl: res[("conv", (wl,))] for wl in ("W1", "W2")}
    cap = z["conv"]["cycles"]
    rows_json = []
    for wl, r in runs.items():
        rows_json.append({"experiment": "5ab convergence", **setup_json(r["setup"]), "built_at": r["built"],
                          "converged_at": r["converged_at"], "level": LEVEL,
                          "series": [[c, round(cv, 4), round(nt, 4)] for c, cv, nt in r["series"]],
                          "wall_s": round(r["wall"], 1)})
        conn = r["connects"]
        hist = {f"{lo}-{hi}" if hi < 10 ** 9 else f">{lo - 1}": round(sum(lo <= x <= hi for x in conn) / len(conn), 4)
                for lo, hi in BUCKETS}
        rows_json.append({"experiment": "5c control overhead", "workload": wl, "until_cycle": r["built"] or r["cycles"],
                          "connects_median": statistics.median(conn), "connects_p90": conn[int(0.9 * (len(conn) - 1))],
                          "connects_max": conn[-1], "connects_mean": statistics.mean(conn), "share_by_connects": hist})
    out["json"] += rows_json
    if out["tables"]:
        step = 10 if cap <= 120 else 20
        s1, s2 = runs["W1"]["series"], runs["W2"]["series"]
        by2 = {c: (cv, nt) for c, cv, nt in s2}
        marks = {runs["W1"]["built"], runs["W2"]["built"]}
        C.print_table(f"Figure 5 (a)/(b): converged and notified per cycle (n = {runs['W1']['setup'].n}, "
                      f"m = {runs['W1']['setup'].m})",
                      [("cycle", "right"), ("W1 converged", "right"), ("W1 notified", "right"),
                       ("W2 converged", "right"), ("W2 notified", "right")],
                      [(c, pct(cv), pct(nt), pct(by2.get(c, (None, None))[0]), pct(by2.get(c, (None, None))[1]))
                       for c, cv, nt in s1 if c % step == 0 or c in marks],
                      caption=f"notified: a sample of {z['conv']['sample']} subscribers (probe events); "
                              f"built = first probe with >= {LEVEL:.0%} notified")
        C.print_table("Figure 5 (a)/(b)/(c): construction time and CONNECT requests per peer until then",
                      [("workload", "left"), ("90% converged", "right"), ("built (90% notified)", "right"),
                       ("final conv.", "right"), ("final notified", "right"),
                       *[(f"{lo}-{hi}" if hi < 10 ** 9 else f">{lo - 1}", "right") for lo, hi in BUCKETS],
                       ("median", "right"), ("wall s", "right")],
                      [(wl, cyc(r["converged_at"], cap), cyc(r["built"], cap), pct(r["series"][-1][1]),
                        pct(r["series"][-1][2]),
                        *[pct(j["share_by_connects"][k]) for k in j["share_by_connects"]],
                        f"{j['connects_median']:g}", f"{r['wall']:.0f}")
                       for (wl, r), j in zip(runs.items(), rows_json[1::2])],
                      caption="columns 1-1 .. >64: share of subscribers by CONNECT requests sent until the "
                              "overlay was built (Figure 5 (c))")
    checks = []
    below = []
    for wl, r in runs.items():
        before = [(cv, nt) for c, cv, nt in r["series"] if r["built"] is None or c < r["built"]]
        below.append((wl, sum(nt < cv for cv, nt in before), len(before)))
    share = min(b / n for _, b, n in below) if all(n for _, _, n in below) else None
    checks.append(C.check("notified below converged until built", "in 100% of the probes", share,
                          lambda x: x >= 1.0, "; ".join(f"{wl}: {b} of {n} probes" for wl, b, n in below)))
    b1, b2 = runs["W1"]["built"], runs["W2"]["built"]
    ratio = None if b1 is None and b2 is None else (float("inf") if b2 is None else b2 / b1 if b1 else 0.0)
    checks.append(C.check("W2 construction time > W1", "> 1x", ratio, lambda x: x > 1.0,
                          f"W1 built at {cyc(b1, cap)}, W2 at {cyc(b2, cap)} cycles",
                          f"neither built within {cap} cycles"))
    return checks


def report_scale(res: dict, z: dict, out: dict) -> list[dict]:
    cv = z["conv"]
    rows = []
    for n in z["scale"]["ns"]:
        row = {"n": n, "m": log2m(n)}
        for wl in ("W1", "W2"):
            r = res.get(("conv", (wl,))) if n == cv["n"] else res.get(("scale", (wl, n)))
            row[wl] = r["built"]
            row[wl + "_wall"] = r["wall"]
            row[wl + "_cap"] = cv["cycles"] if n == cv["n"] else z["scale"]["cycles"]
        rows.append(row)
        out["json"].append({"experiment": "5h scalability", "n": n, "m": row["m"], "W1_built_at": row["W1"],
                            "W2_built_at": row["W2"], "level": LEVEL, "W1_wall_s": round(row["W1_wall"], 1),
                            "W2_wall_s": round(row["W2_wall"], 1)})
    if out["tables"]:
        C.print_table("Figure 5 (h): construction time (cycles to 90% notified) against n, m = log2 n",
                      [("n", "right"), ("m", "right"), ("W1", "right"), ("W2", "right"), ("W1 wall s", "right"),
                       ("W2 wall s", "right")],
                      [(r["n"], r["m"], cyc(r["W1"], r["W1_cap"]), cyc(r["W2"], r["W2_cap"]), f"{r['W1_wall']:.0f}",
                        f"{r['W2_wall']:.0f}") for r in rows],
                      caption="a run stops once built; '> c': not built within c cycles")
    checks = []
    for wl in ("W1", "W2"):
        ts = [r[wl] for r in rows]
        if all(t is None for t in ts):
            m = None
        elif any(t is None for t in ts):
            m = float("inf")
        else:
            m = max(ts) / min(ts)
        checks.append(C.check(f"{wl} construction time flat in n ({rows[0]['n']}..{rows[-1]['n']})",
                              "max/min <= 1.5x", m, lambda x: x <= 1.5,
                              ", ".join(f"n={r['n']}: {cyc(r[wl], r[wl + '_cap'])}" for r in rows)
                              + " (paper: 'almost stays the same' up to 7000)"))
    both = [r for r in rows if r["W1"] is not None or r["W2"] is not None]
    higher = sum((r["W2"] is None) or (r["W1"] is not None and r["W2"] > r["W1"]) for r in both)
    checks.append(num_check("W2 construction time above W1 in general", "at more than half of the sizes",
                            higher / len(both) if both else None, lambda x: x > 0.5,
                            f"W2 > W1 at {higher} of {len(both)} sizes"))
    return checks


def report_churn(res: dict, z: dict, out: dict) -> list[dict]:
    every = z["conv"]["every"]
    checks = []
    cont = {wl: res[("churn", (wl, "continuous"))] for wl in ("W1", "W2")}
    mass = {wl: res[("churn", (wl, "massive"))] for wl in ("W1", "W2")}
    crow = []
    for wl, r in cont.items():
        for run in r["runs"]:
            cv = [v for _, v in run["converged"]]
            nt = [v for _, v in run["notified"]]
            row = {"experiment": "5de continuous churn", **setup_json(r["setup"]), "warm": r["warm"],
                   "churn": run["level"], "per_cycle": run["k"], "cycles": len(cv),
                   "converged_mean": statistics.mean(cv), "converged_std": statistics.pstdev(cv),
                   "notified_mean": statistics.mean(nt), "notified_std": statistics.pstdev(nt)}
            crow.append(row)
            out["json"].append(row)
    mrow = []
    for wl, r in mass.items():
        for run in r["runs"]:
            nt = run["notified"]
            lo = min(nt, key=lambda x: x[1])
            back = next((c for c, v in nt if c >= lo[0] and v >= r["warm_notified"] - 0.05), None)
            row = {"experiment": "5fg massive churn", **setup_json(r["setup"]), "warm": r["warm"],
                   "churn": run["level"], "replaced": run["k"], "before_converged": r["warm_converged"],
                   "before_notified": r["warm_notified"], "first_notified": nt[0][1], "min_notified": lo[1],
                   "min_at": lo[0], "recovered_at": back, "final_converged": tail_mean(run["converged"]),
                   "final_notified": tail_mean(nt), "min_converged": min(v for _, v in run["converged"]),
                   "series": [[c, round(v, 4)] for c, v in nt]}
            mrow.append(row)
            out["json"].append(row)
    if out["tables"]:
        n = cont["W1"]["setup"].n
        C.print_table(f"Figure 5 (d)/(e): continuous churn (n = {n}, m = {cont['W1']['setup'].m}, after "
                      f"{cont['W1']['warm']} cycles; then {z['churn']['cycles']} cycles of churn)",
                      [("workload", "left"), ("churn/cycle", "right"), ("peers/cycle", "right"),
                       ("converged mean ± std", "right"), ("notified mean ± std", "right")],
                      [(r["workload"], pct(r["churn"], 1), r["per_cycle"],
                        f"{pct(r['converged_mean'], 1)} ± {pct(r['converged_std'], 1)}",
                        f"{pct(r['notified_mean'], 1)} ± {pct(r['notified_std'], 1)}") for r in crow],
                      caption=f"converged every cycle, notified every {every} cycles (a sample of "
                              f"{z['conv']['sample']}); wall {cont['W1']['wall']:.0f} s + {cont['W2']['wall']:.0f} s")
        C.print_table("Figure 5 (f)/(g): massive churn after the warm-up (that share leaves and as many join at once)",
                      [("workload", "left"), ("churn", "right"), ("before conv./notif.", "right"),
                       (f"notified at +{every}", "right"), ("lowest notified (cycle)", "right"),
                       ("back within 5 pts at", "right"), ("lowest conv.", "right"),
                       ("final conv./notif.", "right")],
                      [(r["workload"], pct(r["churn"]), f"{pct(r['before_converged'])} / {pct(r['before_notified'])}",
                        pct(r["first_notified"]), f"{pct(r['min_notified'])} ({r['min_at']})",
                        cyc(r["recovered_at"], z["churn"]["recovery"]), pct(r["min_converged"]),
                        f"{pct(r['final_converged'])} / {pct(r['final_notified'])}") for r in mrow],
                      caption=f"cycles counted from the churn; final: mean of the last 3 probes; wall "
                              f"{mass['W1']['wall']:.0f} s + {mass['W2']['wall']:.0f} s")
    for wl in ("W1", "W2"):
        rs = [r for r in crow if r["workload"] == wl]
        lo, hi = rs[0], rs[-1]
        for what in ("converged", "notified"):
            d = 100 * (lo[what + "_mean"] - hi[what + "_mean"])
            checks.append(pts_check(f"{wl}: {what} degrades with continuous churn", "> 0 pts lower at the most churn",
                                    d, lambda x: x > 0,
                                    f"{pct(lo[what + '_mean'], 1)} at {pct(lo['churn'], 1)} -> "
                                    f"{pct(hi[what + '_mean'], 1)} at {pct(hi['churn'], 1)}/cycle"))
    churned = [lv for lv in z["churn"]["levels"] if lv > 0]
    gaps = [100 * (a["notified_mean"] - b["notified_mean"]) for a in crow for b in crow
            if a["workload"] == "W1" and b["workload"] == "W2" and a["churn"] == b["churn"] and a["churn"] in churned]
    checks.append(pts_check("W2 notified below W1 under churn", "> 0 pts (mean over churn levels)",
                            statistics.mean(gaps) if gaps else None, lambda x: x > 0,
                            "W1 - W2 per level: " + ", ".join(f"{g:+.1f}" for g in gaps)))
    for wl in ("W1", "W2"):
        worst = max((r for r in mrow if r["workload"] == wl), key=lambda r: r["churn"])
        d = 100 * (worst["final_notified"] - worst["before_notified"])
        checks.append(pts_check(f"{wl}: recovers from {pct(worst['churn'])} massive churn",
                                f"final notified >= before - 5 pts within {z['churn']['recovery']} cycles", d,
                                lambda x: x >= -5,
                                f"before {pct(worst['before_notified'])}, lowest {pct(worst['min_notified'])}, "
                                f"final {pct(worst['final_notified'])}"))
    return checks


def report_indeg(res: dict, z: dict, out: dict) -> list[dict]:
    rows = [res[("indeg", (r,))] for r in z["indeg"]["rs"]]
    for r in rows:
        out["json"].append({"experiment": "5i in-degree", **setup_json(r["setup"]), "dz_initial": r["dz_initial"],
                            "dz": r["dz"], "in_degree": r["in_degree"], "converged": r["converged"],
                            "notified": r["notified"], "wall_s": round(r["wall"], 1)})
    if out["tables"]:
        C.print_table(f"Figure 5 (i): average in-degree against dz-expressions per peer (W1, n = {rows[0]['setup'].n}, "
                      f"m = {rows[0]['setup'].m}, after {z['indeg']['cycles']} cycles)",
                      [("r", "right"), ("dz/peer at join", "right"), ("dz/peer", "right"), ("in-degree", "right"),
                       ("converged", "right"), ("notified", "right"), ("wall s", "right")],
                      [(r["setup"].r, f"{r['dz_initial']:.1f}", f"{r['dz']:.1f}", f"{r['in_degree']:.2f}",
                        pct(r["converged"]), pct(r["notified"]), f"{r['wall']:.0f}") for r in rows],
                      caption="r: the first mapping's limit (Algorithm 4); dz/peer and in-degree averaged over "
                              "the subscribers at the end (peers coarsen what finds no parent)")
    lo, hi = min(rows, key=lambda r: r["dz"]), max(rows, key=lambda r: r["dz"])
    g = hi["in_degree"] - lo["in_degree"]
    return [num_check("in-degree growth, fewest -> most dz/peer", "> 0 and < 4 (paper: +1.2..3.1)", g,
                      lambda x: 0 < x < 4,
                      f"dz/peer {lo['dz']:.1f} -> {hi['dz']:.1f} (paper 4 -> 256): in-degree "
                      f"{lo['in_degree']:.2f} -> {hi['in_degree']:.2f}")]


def report_fig6(res: dict, z: dict, out: dict) -> list[dict]:
    f6 = z["fig6"]
    get = {k: v for (exp, k), v in res.items() if exp == "fig6"}
    rows = []
    for (scen, m, fp), r in sorted(get.items()):
        rows.append((scen, m, fp, r))
        out["json"].append({"experiment": "6 satisfaction", "scenario": scen, **setup_json(r["setup"]),
                            "notified": r["notified"], "notified_min": r["notified_min"],
                            "notified_max": r["notified_max"], "converged": r["converged"],
                            "fp_actual": r["fp_actual"], "dz": r["dz"], "connects": r["connects"],
                            "wall_s": round(r["wall"], 1)})
    if out["tables"]:
        C.print_table(f"Figure 6: notified and actual false positives against allowed false positives "
                      f"(n = {f6['n']}, {f6['cycles']} cycles)",
                      [("scenario", "left"), ("m", "right"), ("allowed FP", "right"), ("notified", "right"),
                       ("(min..max)", "right"), ("actual FP", "right"), ("converged", "right"),
                       ("dz/peer", "right"), ("CONNECT/peer", "right"), ("wall s", "right")],
                      [(f"{scen} Δ {'..'.join(map(str, r['setup'].delays))}", m, pct(fp, 1), pct(r["notified"], 1),
                        f"{pct(r['notified_min'])}..{pct(r['notified_max'])}", pct(r["fp_actual"], 2),
                        pct(r["converged"]), f"{r['dz']:.1f}", f"{r['connects']:.0f}", f"{r['wall']:.0f}")
                       for scen, m, fp, r in rows],
                      caption=f"notified: all subscribers, every 10 cycles of the last {f6['tail']}, averaged; actual "
                              f"FP: false positives a subscriber received per cycle in those cycles / events per cycle")
    checks = []
    nt = lambda s, m, fp: get[(s, m, fp)]["notified"] if (s, m, fp) in get else None  # noqa: E731
    fa = lambda s, m, fp: get[(s, m, fp)]["fp_actual"] if (s, m, fp) in get else None  # noqa: E731
    lo, hi = min(f6["fps"]), max(f6["fps"])
    a, b = nt("S1", 6, 0.0), nt("S1", 6, 0.062)
    checks.append(pts_check("S1 m=6: notified rises, 0% -> 6.2% allowed FP", "> 0 pts (paper: 65% -> 83%)",
                            None if a is None or b is None else 100 * (b - a), lambda x: x > 0,
                            f"{pct(a, 1)} -> {pct(b, 1)}", "0% or 6.2% not run"))
    a, b = fa("S1", 6, 0.0), fa("S1", 6, 0.062)
    checks.append(pts_check("S1 m=6: actual FP rise, 0% -> 6.2% allowed", "< 6.2 pts (paper: +1.2)",
                            None if a is None or b is None else 100 * (b - a), lambda x: x < 6.2,
                            f"{pct(a, 2)} -> {pct(b, 2)} of the event rate", "0% or 6.2% not run"))
    curves = [(s, m) for s in ("S1", "S2") for m in f6["ms"]]
    up = [(s, m) for s, m in curves if nt(s, m, hi) > nt(s, m, lo)]
    checks.append(num_check(f"notified rises with allowed FP ({pct(lo, 1)} -> {pct(hi)})",
                            f"on all {len(curves)} curves", len(up), lambda x: x == len(curves),
                            "; ".join(f"{s} m={m}: {pct(nt(s, m, lo))} -> {pct(nt(s, m, hi))}" for s, m in curves)))
    if len(f6["ms"]) >= 2:
        m0, m1 = min(f6["ms"]), max(f6["ms"])
        g2 = nt("S2", m1, hi) - nt("S2", m0, hi)
        g1 = nt("S1", m1, hi) - nt("S1", m0, hi)
        checks.append(pts_check(f"S2: m={m1} notifies more than m={m0} at {pct(hi)} allowed",
                                "> 0 pts (paper: 64% -> 82%)", 100 * g2, lambda x: x > 0,
                                f"{pct(nt('S2', m0, hi), 1)} -> {pct(nt('S2', m1, hi), 1)}"))
        checks.append(pts_check("out-degree matters more under tight delays", "gain of m in S2 > in S1",
                                100 * (g2 - g1), lambda x: x > 0,
                                f"m={m0} -> m={m1} at {pct(hi)}: S1 {100 * g1:+.1f} pts, S2 {100 * g2:+.1f} pts"))
    pairs = [(fa("S2", m, fp), fa("S1", m, fp)) for m in f6["ms"] for fp in f6["fps"] if fp > 0]
    d = statistics.mean(100 * (x - y) for x, y in pairs) if pairs else None
    checks.append(pts_check("overall FP higher in S2 than in S1", "> 0 pts (mean over m and allowed FP > 0)", d,
                            lambda x: x > 0,
                            "S2 - S1 per point: " + ", ".join(f"{100 * (x - y):+.1f}" for x, y in pairs)))
    return checks


def report_parts(res: dict, z: dict, out: dict) -> list[dict]:
    """Figure 6's S1 again, with 2**parts publishers each advertising one part of the space instead
    of 3 whole-space ones: 004 does not say how its publishers advertised, and this decides how many
    subscribers can sit at the top. No check: the paper states nothing about it."""
    f6, pz = z["fig6"], z["parts"]
    get = {k[0]: v for (exp, k), v in res.items() if exp == "parts"}
    whole = {k[2]: v for (exp, k), v in res.items() if exp == "fig6" and k[:2] == ("S1", pz["m"])}
    for fp, r in sorted(get.items()):
        out["json"].append({"experiment": "6 satisfaction, publishers by part", "scenario": "S1",
                            **setup_json(r["setup"]), "notified": r["notified"],
                            "converged": r["converged"], "fp_actual": r["fp_actual"], "dz": r["dz"],
                            "wall_s": round(r["wall"], 1)})
    if out["tables"]:
        C.print_table(f"Figure 6, S1 m={pz['m']}: {2 ** pz['parts']} publishers each advertising a part of the space "
                      f"(n = {f6['n']}, {f6['cycles']} cycles)",
                      [("allowed FP", "right"), ("notified", "right"), ("3 whole-space publishers", "right"),
                       ("actual FP", "right"), ("converged", "right"), ("dz/peer", "right"), ("wall s", "right")],
                      [(pct(fp, 1), pct(r["notified"], 1),
                        pct(whole[fp]["notified"], 1) if fp in whole else "-", pct(r["fp_actual"], 2),
                        pct(r["converged"]), f"{r['dz']:.1f}", f"{r['wall']:.0f}") for fp, r in sorted(get.items())],
                      caption="the same subscribers, delays and events as Figure 6's S1; each event comes from "
                              "the publisher of its part")
    return []


def main() -> int:
    p = C.parser(__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="worker processes for the independent runs (default 2)")
    p.add_argument("--only", default=",".join(EXPERIMENTS),
                   help=f"experiments to run, of {','.join(EXPERIMENTS)} (scale includes conv)")
    p.add_argument("--scale-n", default=None, metavar="N,N,...",
                   help="subscriber counts of Figure 5 (h) (default 125,250,500,1000; --quick 60,120)")
    args = p.parse_args()
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    if only - set(EXPERIMENTS):
        p.error(f"unknown experiment(s) {', '.join(sorted(only - set(EXPERIMENTS)))}")
    if "scale" in only:
        only.add("conv")
    z = QUICK if args.quick else FULL
    if args.scale_n:
        z = {**z, "scale": {**z["scale"], "ns": sorted({int(x) for x in args.scale_n.split(",")})}}
    todo = tasks(z, args.seed, only)
    C.note(f"p2p.py: {len(todo)} runs on {args.jobs} worker(s) ...")
    t = C.perf()
    res = run_all(todo, args.jobs)
    wall = C.perf() - t
    out = {"json": [], "tables": not args.json}
    checks: list[dict] = []
    for exp, fn in (("conv", report_conv), ("scale", report_scale), ("churn", report_churn),
                    ("indeg", report_indeg), ("fig6", report_fig6), ("parts", report_parts)):
        if exp in only:
            checks += fn(res, z, out)
    if args.json:
        for row in out["json"]:
            C.emit_json({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
        C.emit_json({"experiment": "total", "runs": len(todo), "jobs": args.jobs, "wall_s": round(wall, 1),
                     "cpu_s": round(sum(r["wall"] for r in res.values()), 1)})
        for c in checks:
            C.emit_json(c)
    else:
        C.print_checks(checks)
        print(f"{C.machine()}; {C.source_state()}; seed {args.seed}; {len(todo)} runs on {args.jobs} worker(s): "
              f"{wall:.0f} s wall, {sum(r['wall'] for r in res.values()):.0f} s in the runs")
    return 0 if all(c["pass"] is not False for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
