"""A randomized oracle check of the TCP overlay with compiled objects, across processes.

`eventpy overlay up` starts a few brokers (line, star, tree or random); client processes
(client.py) attach to random brokers, make Watch objects (watch.epy: five event methods whose
guards read fields) and publish. Rounds, chosen at random:

* stable: every client stores fields and drains, then every client publishes and drains; each
  object must then have received exactly the events its guard admits with its fields of the round
  (the oracle evaluates every guard in Python): no missed event, no extra one, no duplicate;
* chaos: stores and publications at once in every client; no duplicate, every body finds its
  guard true (a failed check while a store of the same object was under way is the known race of
  docs/concurrency.md, counted apart), and objects nobody stored get exactly their events;
* churn: some objects closed, new ones made, then a stable round.

    PYTHONPATH=. .venv/bin/python tools/hunt/overlay_oracle/drive.py --seed 3 --topology star

Exit status 1 when anything but the known race was seen. This is a bug hunt, not a test (it runs
many processes for tens of seconds); loop it over seeds and configurations.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
from eventpy.runtime._ports import free_port_block  # noqa: E402
GUARDS = {
    "e1": lambda f, a, b, s: a >= f["lo"] and a < f["hi"],
    "e2": lambda f, a, b, s: b == f["k"] or a > f["hi"],
    "e3": lambda f, a, b, s: s == f["name"] and b <= f["k"],
    "e4": lambda f, a, b, s: a > f["lo"] * 2 and b != f["k"],
    "e5": lambda f, a, b, s: s in f["names"] and a < f["hi"],
}
NAMES = ["IBM", "SAP", "HP", "MSFT", "ORCL"]


def free_block(k: int) -> int:
    try:
        return free_port_block(k, 19000, 20000, scatter=False)  # (the tests scan 17200-18000)
    except RuntimeError as e:
        raise SystemExit(str(e)) from None


def new_fields(r: random.Random) -> dict:
    lo = round(r.uniform(0, 50), 1)
    return {"lo": lo, "hi": round(lo + r.uniform(0, 60), 1), "k": r.randint(0, 9), "name": r.choice(NAMES),
            "names": sorted(r.sample(NAMES, r.randint(0, 3)))}


def change(r: random.Random, f: dict) -> tuple[str, object]:
    """One store, applied to the oracle's copy `f`: (field or set operation, value)."""
    which = r.choice(["lo", "hi", "k", "name", "names_add", "names_discard", "names", "lo", "hi"])
    if which == "lo":
        v = f["lo"] = round(r.uniform(0, 50), 1)
    elif which == "hi":
        v = f["hi"] = round(r.uniform(0, 110), 1)
    elif which == "k":
        v = f["k"] = r.randint(0, 9)
    elif which == "name":
        v = f["name"] = r.choice(NAMES)
    elif which == "names_add":
        v = r.choice(NAMES)
        f["names"] = sorted(set(f["names"]) | {v})
    elif which == "names_discard":
        v = r.choice(NAMES)
        f["names"] = sorted(set(f["names"]) - {v})
    else:
        v = f["names"] = sorted(r.sample(NAMES, r.randint(0, 3)))
    return which, v


class Clients:
    def __init__(self, procs: list) -> None:
        self.procs = procs

    def ask(self, cmds: list) -> list:
        """Send each client its command (None: nothing), then read every answer."""
        for p, cmd in zip(self.procs, cmds):
            if cmd is not None:
                p.stdin.write(json.dumps(cmd) + "\n")
                p.stdin.flush()
        answers = []
        for p, cmd in zip(self.procs, cmds):
            if cmd is None:
                answers.append(None)
                continue
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"a client died on {cmd['op']}")
            answer = json.loads(line)
            if "error" in answer:
                raise SystemExit(f"a client failed on {cmd['op']}: {answer['error']}\n{answer['tb']}")
            answers.append(answer)
        return answers

    def all(self, cmd: dict) -> list:
        return self.ask([cmd] * len(self.procs))


def run(a: argparse.Namespace, run_dir: str) -> tuple[list[str], int]:
    r = random.Random(a.seed)
    port = free_block(a.brokers)
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}"}
    up = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "up", "--brokers", str(a.brokers),
                         "--topology", a.topology, "--port", str(port), "--run-dir", run_dir, "--mode", a.mode,
                         "--matcher", a.matcher, "--summary", a.summary], env=env, capture_output=True, text=True)
    if up.returncode:
        raise SystemExit(f"overlay up failed: {up.stderr}")
    procs = []
    problems: list[str] = []
    races = 0
    try:
        for _ in range(a.clients):
            procs.append(subprocess.Popen(
                [sys.executable, str(HERE / "client.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                env={**env, "EVENTPY_BROKER": f"tcp://127.0.0.1:{port + r.randrange(a.brokers)}"}))
        clients = Clients(procs)
        fields: dict[tuple[int, str], dict] = {}
        serial = [0]

        def make(c: int, n: int) -> dict:
            objs = {}
            for _ in range(n):
                oid = f"o{serial[0]}"
                serial[0] += 1
                fields[(c, oid)] = new_fields(r)
                objs[oid] = dict(fields[(c, oid)])
            return {"op": "new", "objs": objs}

        n = len(procs)
        clients.ask([make(c, a.objs) for c in range(n)])
        eid = 0
        for rnd in range(a.rounds):
            kind = r.choice(["stable", "stable", "chaos", "churn"])
            if kind == "churn":
                closing = []
                for c in range(n):
                    mine = [oid for (cc, oid) in fields if cc == c]
                    gone = r.sample(mine, min(len(mine), r.randint(0, 2)))
                    for oid in gone:
                        del fields[(c, oid)]
                    closing.append({"op": "close", "ids": gone})
                clients.ask(closing)
                clients.ask([make(c, r.randint(0, 2)) for c in range(n)])
                kind = "stable"
            stored, updates, events = set(), [], []
            for c in range(n):
                mine = []
                for (cc, oid), f in fields.items():
                    if cc == c and r.random() < 0.5:
                        for _ in range(r.randint(1, 3)):
                            mine.append([oid, *change(r, f)])
                            stored.add((c, oid))
                updates.append(mine)
                evs = []
                for _ in range(r.randint(0, a.events)):
                    evs.append([r.choice(list(GUARDS)), round(r.uniform(0, 110), 1), r.randint(0, 9), r.choice(NAMES), eid])
                    eid += 1
                events.append(evs)
            if kind == "stable":
                clients.ask([{"op": "upd", "updates": u} for u in updates])
                clients.ask([{"op": "pub", "events": e} for e in events])
            else:
                clients.ask([{"op": "chaos", "updates": u, "events": e} for u, e in zip(updates, events)])
            clients.all({"op": "upd", "updates": []})  # every client drains again: all callbacks done
            published = [e for es in events for e in es]
            for c, rep in enumerate(clients.all({"op": "report"})):
                for oid, bad in rep["bad"].items():
                    for m, e, what in bad:
                        if what == "race":
                            races += 1
                        else:
                            problems.append(f"round {rnd} {kind}: STRICTNESS client {c} {oid}: {m} event {e}")
                for oid, got in rep["got"].items():
                    seen = Counter(map(tuple, got))
                    dups = [k for k, count in seen.items() if count > 1]
                    if dups:
                        problems.append(f"round {rnd} {kind}: DUPLICATES client {c} {oid}: {dups[:5]}")
                    if kind == "chaos" and (c, oid) in stored:
                        continue  # its fields moved while events flew: strictness and duplicates only
                    f = fields[(c, oid)]
                    want = {(m, e) for m, av, bv, sv, e in published if GUARDS[m](f, av, bv, sv)}
                    if want - set(seen):
                        problems.append(f"round {rnd} {kind}: MISSED client {c} {oid} {f}: "
                                        f"{sorted(want - set(seen))[:5]} ({len(want - set(seen))})")
                    if set(seen) - want:
                        problems.append(f"round {rnd} {kind}: EXTRA client {c} {oid} {f}: {sorted(set(seen) - want)[:5]}")
            print(f"round {rnd} {kind}: {len(published)} events, {sum(map(len, updates))} stores, "
                  f"{len(problems)} problems, {races} races so far", file=sys.stderr)
        clients.all({"op": "quit"})
    finally:
        for p in procs:
            try:
                p.stdin.close()
                p.wait(10)
            except Exception:
                p.kill()
        down = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "down", "--run-dir", run_dir], env=env,
                              capture_output=True)
        if down.returncode:  # (a tree that cannot even import eventpy, say): stop the brokers by their pids
            for pid_file in Path(run_dir).glob("*.pid"):
                try:
                    os.kill(int(pid_file.read_text()), signal.SIGTERM)
                except (OSError, ValueError):
                    pass
    return problems, races


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--brokers", type=int, default=5)
    ap.add_argument("--topology", default="tree", help="line, star, tree or random (default tree)")
    ap.add_argument("--mode", default="parametric", choices=["parametric", "resub"])
    ap.add_argument("--matcher", default="fastint", choices=["fastint", "poset", "naive"])
    ap.add_argument("--summary", default="attribute", choices=["attribute", "poset"])
    ap.add_argument("--clients", type=int, default=4, help="client processes (default 4)")
    ap.add_argument("--objs", type=int, default=6, help="objects per client at the start (default 6)")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--events", type=int, default=60, help="at most this many events per client and round")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="eventpy-hunt-") as run_dir:
        problems, races = run(a, run_dir)
    for p in problems[:30]:
        print(p)
    print(f"seed {a.seed} {a.topology} {a.mode} {a.matcher} {a.summary}: {len(problems)} problems, "
          f"{races} bodies during a store of their object (the known race)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
