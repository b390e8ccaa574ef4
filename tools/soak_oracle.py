"""The soak harness's oracle and verdict (tools/soak.py calls `verdict(out_dir)`; it can also be run
again on a finished run: `python tools/soak_oracle.py runs/soak-1`).

What a subscriber is owed (README, Guarantees and Faults): a matching event published after its
subscription reached the publisher's broker, with its parameters as they are when the event is
published, delivered exactly once while the brokers between them stay up. The oracle reads that as:

* an event is owed to a subscription when it was published after the subscription's `confirm()`
  returned (in force at every broker), at least DELIVER_WINDOW before the subscription was closed,
  and the guard holds, evaluated in Python with the event's attributes, under *every* parameter
  version the subscriber had in force from SETTLE seconds before publication to SETTLE seconds
  after (coverage is owed once a parameter stops changing: a version that might still be on its
  way counts too; and the subscriber checks the guard again with the parameters it holds when
  the event arrives, so a change made just after publication rightly drops it: strictness);
* an owed event whose path (the publisher's broker to the subscriber's, along the tree) holds a
  broker that was stopped for a restart between one second before it stopped and EXCUSE seconds
  after it was back (links re-dialled, clients reconnected, subscriptions re-sent) may be lost: it
  is counted as `excused`, not missed;
* every delivery must hold its guard with the parameters the callback saw (strictness), arrive
  once and be an event some publisher logged; one that comes after the subscription's close()
  returned is counted apart (`after_close`): close() may return while a callback that had already
  passed its check starts (docs/concurrency.md).
"""

from __future__ import annotations

import bisect
import json
import math
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

SETTLE = 1.5          # seconds a parameter version may take to be in force at every broker
DELIVER_WINDOW = 3.0  # an event published this close to a close may arrive after it
EXCUSE = 15.0         # seconds after a restarted broker is back during which losses are excused
WARMUP = 0.15         # the share of a process's samples left out of its memory slope

GUARDS = {
    "win": lambda e, p: p["lo"] <= e["x"] < p["hi"],
    "set": lambda e, p: e["kind"] in p["kinds"] and e["x"] < p["hi"],
    "sw": lambda e, p: p["active"] and e["x"] >= p["lo"],
    "gen": lambda e, p: p["lo"] <= e["x"] < p["lo"] + p["hi"],
    "all": lambda e, p: p["active"] and e["kind"] in p["kinds"] and p["lo"] <= e["x"] < p["hi"],
}


def read_jsonl(path: Path) -> list[dict]:
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a process killed mid-line: its last line only
                pass
    return out


def tree_path(links: list[list[str]], a: str, b: str) -> set[str]:
    """The brokers on the way from a to b in the overlay's tree, both ends included."""
    adj = defaultdict(list)
    for x, y in links:
        adj[x].append(y)
        adj[y].append(x)
    prev = {a: None}
    todo = [a]
    while todo:
        n = todo.pop()
        for m in adj[n]:
            if m not in prev:
                prev[m] = n
                todo.append(m)
    path, n = set(), b
    while n is not None:
        path.add(n)
        n = prev.get(n)
    return path


class Sub:
    def __init__(self, rec: dict, broker: str) -> None:
        self.sid, self.guard, self.hot, self.broker = rec["sid"], rec["g"], rec.get("hot"), broker
        self.t_sub = rec["t"]
        self.versions = [(rec["t"], _params(rec["p"]))]  # (time called, parameters), in order
        self.t_conf = None
        self.t_close = self.t_close_end = math.inf
        self.got: Counter = Counter()

    def in_force(self, t0: float, t1: float) -> list[dict]:
        """Every parameter version in force at some moment of [t0, t1]."""
        times = [v[0] for v in self.versions]
        i = max(0, bisect.bisect_right(times, t0) - 1)
        j = bisect.bisect_right(times, t1)
        return [p for _, p in self.versions[i:j]]


def _params(p: dict) -> dict:
    return {**p, "kinds": set(p["kinds"])} if "kinds" in p else p


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def slope_per_hour(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (time s, value) in value per hour."""
    if len(points) < 3:
        return float("nan")
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    return float("nan") if den == 0 else 3600 * sum((t - mt) * (v - mv) for t, v in points) / den


def load(out: Path) -> dict:
    cfg = tomllib.loads((out / "run" / "overlay.toml").read_text())
    url_to_broker = {f"tcp://{b['host']}:{b['port']}": n for n, b in cfg["brokers"].items()}
    restarts = [e for e in read_jsonl(out / "events.jsonl") if e.get("k") == "restart"]
    pubs, subs, deliveries, counters, objects = {}, {}, [], [], {}
    for log in sorted((out / "clients").glob("*.jsonl")):
        broker = None
        name = log.stem
        recs = read_jsonl(log)
        logged = Counter()
        stats_sum = Counter()
        for r in recs:
            k = r["k"]
            if k == "node":
                broker = url_to_broker[r["b"]]
            elif k == "p":
                pubs[(name, r["seq"])] = {"t": r["t"], "x": r["x"], "kind": r["kind"], "b": broker}
                logged["published"] += 1
            elif k == "sub":
                subs[r["sid"]] = Sub(r, broker)
            elif k == "conf":
                subs[r["sid"]].t_conf = r["t"]
            elif k == "upd":
                subs[r["sid"]].versions.append((r["t"], _params(r["p"])))
            elif k == "close":
                subs[r["sid"]].t_close, subs[r["sid"]].t_close_end = r["t"], r["t1"]
            elif k == "d":
                deliveries.append(r)
                logged["delivered"] += 1
            elif k == "objects":
                objects.setdefault(name, []).append((r["t"], r["n"]))
            elif k == "nodeclose":
                stats_sum.update({c: r["stats"].get(c, 0) for c in ("published", "delivered")})
        counters.append({"client": name, "logged": dict(logged), "node_stats": dict(stats_sum)})
    return {"links": cfg["links"], "restarts": restarts, "pubs": pubs, "subs": subs,
            "deliveries": deliveries, "counters": counters,
            "objects": {n: {"first": pts[min(1, len(pts) - 1)][1], "last": pts[-1][1],
                            "per_h": round(slope_per_hour(pts[max(1, int(len(pts) * WARMUP)):]), 1)}
                        for n, pts in objects.items()}}


def check_deliveries(d: dict) -> dict:
    pubs, subs = d["pubs"], d["subs"]
    res = Counter()
    examples = defaultdict(list)
    lat_by_minute = defaultdict(list)
    quiet_by_minute = defaultdict(list)  # events published away from any restart (held events arrive late)
    windows = [(r["t_stop"] - 1.0, r["t_ready"] + EXCUSE) for r in d["restarts"]]
    t0 = min((p["t"] for p in pubs.values()), default=0.0)
    for r in d["deliveries"]:
        s = subs.get(r["sid"])
        key = (r["pub"], r["seq"])
        ev = pubs.get(key)
        if s is None or ev is None:
            res["phantom"] += 1
            examples["phantom"].append(r)
            continue
        s.got[key] += 1
        if s.got[key] == 2:
            res["duplicated"] += 1
            examples["duplicated"].append(r)
        minute, ms = int((ev["t"] - t0) // 60), 1000 * (r["tr"] - ev["t"])
        lat_by_minute[minute].append(ms)
        if not any(w0 <= ev["t"] <= w1 for w0, w1 in windows):
            quiet_by_minute[minute].append(ms)
        if r["tr"] > s.t_close_end:
            res["after_close"] += 1
            examples["after_close"].append(r)
        if r["p"] is not None and not GUARDS[s.guard](ev, _params(r["p"])):
            res["strictness"] += 1
            examples["strictness"].append(r)
    return {"counts": res, "examples": examples, "lat_by_minute": lat_by_minute, "quiet_by_minute": quiet_by_minute}


def check_owed(d: dict) -> dict:
    pubs, subs, links = d["pubs"], d["subs"], d["links"]
    by_time = sorted((ev["t"], key) for key, ev in pubs.items())
    times = [t for t, _ in by_time]
    windows = [(r["broker"], r["t_stop"] - 1.0, r["t_ready"] + EXCUSE) for r in d["restarts"]]
    paths: dict[tuple[str, str], set[str]] = {}
    res = Counter()
    examples = defaultdict(list)
    for s in subs.values():
        if s.t_conf is None:
            continue
        lo = bisect.bisect_left(times, s.t_conf)
        hi = bisect.bisect_left(times, s.t_close - DELIVER_WINDOW)
        for t, key in by_time[lo:hi]:
            ev = pubs[key]
            versions = s.in_force(max(s.t_conf, t - SETTLE), t + SETTLE)
            if not all(GUARDS[s.guard](ev, p) for p in versions):
                continue
            res["owed"] += 1
            if s.got[key]:
                continue
            path = paths.setdefault((ev["b"], s.broker), tree_path(links, ev["b"], s.broker))
            if any(b in path and w0 <= t <= w1 for b, w0, w1 in windows):
                res["excused"] += 1
            else:
                res["missed"] += 1
                examples["missed"].append({"sid": s.sid, "pub": key[0], "seq": key[1], "t": t,
                                           "pub_broker": ev["b"], "sub_broker": s.broker})
    return {"counts": res, "examples": examples}


def memory(out: Path) -> dict:
    """Per process (a broker's or client's pid): RSS samples, slope in MB per hour."""
    series = defaultdict(list)
    handles = defaultdict(list)  # (threads, fds) per sample
    logs = defaultdict(list)
    counters_back = []
    last_stats = {}
    for s in read_jsonl(out / "samples.jsonl"):
        for kind in ("brokers", "clients"):
            for name, v in s[kind].items():
                if v.get("rss_kb"):
                    series[(kind, name, v["pid"])].append((s["t"], v["rss_kb"] / 1024))
                    handles[(kind, name, v["pid"])].append((v.get("threads"), v.get("fds")))
        for name, v in s["brokers"].items():
            if "log_bytes" in v:
                logs[name].append((s["t"], v["log_bytes"] / 1024))
            stats, pid = v.get("stats") or {}, v.get("pid")
            prev = last_stats.get(name)
            if prev and prev[0] == pid:  # one broker process: its counters only grow
                went_back = sorted(c for c, n in stats.items() if n < prev[1].get(c, 0))
                if went_back:
                    counters_back.append({"broker": name, "t": s["t"], "counters": went_back})
            if stats:
                last_stats[name] = (pid, stats)
    procs = []
    for (kind, name, pid), pts in sorted(series.items()):
        kept = pts[max(1, int(len(pts) * WARMUP)):]  # the first: a process still importing
        procs.append({"kind": kind, "name": name, "pid": pid, "samples": len(pts),
                      "rss_first_mb": round(pts[0][1], 1), "rss_last_mb": round(pts[-1][1], 1),
                      "minutes": round((pts[-1][0] - pts[0][0]) / 60, 1),
                      "slope_mb_per_h": round(slope_per_hour(kept), 2),
                      "threads": [handles[(kind, name, pid)][i][0] for i in (1 if len(pts) > 1 else 0, -1)],
                      "fds": [handles[(kind, name, pid)][i][1] for i in (1 if len(pts) > 1 else 0, -1)]})
    log_growth = {n: {"kb_last": round(p[-1][1], 1), "kb_per_h": round(slope_per_hour(p), 1)}
                  for n, p in logs.items()}
    return {"processes": procs, "logs": log_growth, "counters_went_back": counters_back}


def by_minute(lists: dict[int, list[float]]) -> list[dict]:
    return [{"minute": m, "n": len(lists[m]), "p50_ms": round(percentile(lists[m], 0.5), 1),
             "p99_ms": round(percentile(lists[m], 0.99), 1)} for m in sorted(lists)]


def verdict(out: Path) -> dict:
    d = load(out)
    got = check_deliveries(d)
    owed = check_owed(d)
    mem = memory(out)
    lat = by_minute(got["lat_by_minute"])
    quiet = by_minute(got["quiet_by_minute"])
    full = [x for x in quiet if x["n"] >= 20]  # drift: away from restarts, minutes with enough events
    third = max(1, len(full) // 3)
    counters_ok = all(c["logged"].get(k, 0) == c["node_stats"].get(k, 0)
                      for c in d["counters"] for k in ("published", "delivered"))
    v = {
        "events_published": len(d["pubs"]), "deliveries": len(d["deliveries"]),
        "subscriptions": len(d["subs"]), "restarts": len(d["restarts"]),
        **{k: owed["counts"][k] for k in ("owed", "missed", "excused")},
        **{k: got["counts"][k] for k in ("duplicated", "phantom", "after_close", "strictness")},
        "latency_by_minute": lat, "latency_by_minute_away_from_restarts": quiet,
        "latency_p50_drift_ms": round(percentile([x["p50_ms"] for x in full[-third:]], 0.5)
                                      - percentile([x["p50_ms"] for x in full[:third]], 0.5), 1) if full else None,
        "latency_p99_slope_ms_per_h": round(slope_per_hour([(60 * x["minute"], x["p99_ms"]) for x in full]), 1),
        "memory": mem["processes"], "broker_logs": mem["logs"],
        "broker_counters_went_back": mem["counters_went_back"],
        "client_objects": d["objects"], "client_counters": d["counters"], "client_counters_add_up": counters_ok,
        "examples": {k: v[:5] for k, v in {**got["examples"], **owed["examples"]}.items()},
    }
    return v


def summary(v: dict) -> str:
    lines = [f"published {v['events_published']}, delivered {v['deliveries']}, subscriptions "
             f"{v['subscriptions']}, broker restarts {v['restarts']}",
             f"owed {v['owed']}: missed {v['missed']}, excused (path down) {v['excused']}; duplicated "
             f"{v['duplicated']}, phantom {v['phantom']}, after close (documented race) {v['after_close']}, strictness "
             f"violations {v['strictness']}",
             f"client counters add up: {v['client_counters_add_up']}; broker counters that went back "
             f"within one process: {len(v['broker_counters_went_back'])}",
             f"latency p50 drift (last third - first third of minutes, away from restarts): {v['latency_p50_drift_ms']} ms; "
             f"p99 slope {v['latency_p99_slope_ms_per_h']} ms/h",
             "latency by minute (p50/p99 ms): " + ", ".join(
                 f"{x['minute']}:{x['p50_ms']}/{x['p99_ms']}" for x in v["latency_by_minute"]),
             "  events published away from restarts: " + ", ".join(
                 f"{x['minute']}:{x['p50_ms']}/{x['p99_ms']}" for x in v["latency_by_minute_away_from_restarts"]),
             "memory (RSS MB first -> last over minutes, slope MB/h after warm-up):"]
    for p in v["memory"]:
        lines.append(f"  {p['kind'][:-1]} {p['name']} pid {p['pid']}: {p['rss_first_mb']} -> "
                     f"{p['rss_last_mb']} over {p['minutes']} min, {p['slope_mb_per_h']} MB/h; threads "
                     f"{p['threads'][0]} -> {p['threads'][1]}, fds {p['fds'][0]} -> {p['fds'][1]}")
    lines.append("client objects tracked by the GC (first -> last, per hour): " + ", ".join(
        f"{n} {o['first']} -> {o['last']} ({o['per_h']}/h)" for n, o in sorted(v["client_objects"].items())))
    lines.append("broker logs (KB, KB/h): " + ", ".join(
        f"{n} {g['kb_last']} ({g['kb_per_h']}/h)" for n, g in sorted(v["broker_logs"].items())))
    return "\n".join(lines)


if __name__ == "__main__":
    out = Path(sys.argv[1])
    v = verdict(out)
    (out / "verdict.json").write_text(json.dumps(v, indent=1, default=str))
    print(summary(v))
