"""A bug hunt for evolving subscriptions (paper 003): movers.epy's objects (moving windows, a 2-D
box, a one-sided bound, expiring guards, a subclass with its own guard) on the embedded overlay or
on a running TCP overlay, checked against an oracle that evaluates each guard with the fields in
force and elapsed() at each event's publication time (measured around the publish call: an event
whose guard differs at the two ends is left out).

* stable rounds: objects change (turns that re-anchor x0 and vx in one statement, field stores,
  closes, new objects), `eventpy.confirm` each, then events are published over a few seconds:
  each object must get exactly what its guard admits, once;
* chaos rounds (--chaos): the same changes while events flow: each delivery must be admitted by
  the fields before or after the change; objects nobody changed are checked exactly; objects made
  during the phase get every event published after their confirm returned.

    .venv/bin/python tools/hunt/evolving_oracle/drive.py --seed 3 --chaos          # embedded
    eventpy overlay up --brokers 3 --topology line --port 7450 --run-dir RUN       # then
    .venv/bin/python tools/hunt/evolving_oracle/drive.py --overlay tcp --port 7450 --chaos

With --overlay tcp, two subscriber processes attach to the last and the middle broker and the
publisher to the first (ports port, port+1, ...). Exit status 1 when a problem was seen.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PY = os.path.join(ROOT, ".venv", "bin", "python")

LISTENS = {"Car": ["Car.alert"], "Truck": ["Car.alert", "Truck.alert"], "Player": ["Player.boom"],
           "Chaser": ["Chaser.boom"]}


def guard(cls, f, x, y, kind, el):
    if cls == "Car":
        return abs(x - (f["x0"] + f["vx"] * el)) < f["r"] and el < f["ttl"] and kind != "noise"
    if cls == "Truck":
        return abs(x - (f["x0"] + f["vx"] * el)) < f["r"] and y >= f["ymin"] and kind != "noise"
    if cls == "Player":
        return (abs(x - (f["x0"] + f["vx"] * el)) < f["r"] and abs(y - (f["y0"] + f["vy"] * el)) <= f["r"]
                and kind in f["kinds"])
    if cls == "Chaser":
        return x >= f["x0"] + f["vx"] * el and y < f["ymax"]
    raise KeyError(cls)


class Proc:
    def __init__(self, name, env):
        self.name = name
        self.p = subprocess.Popen([PY, os.path.join(HERE, "agent.py")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env, text=True, cwd=HERE)

    def send(self, m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} died")
        r = json.loads(line)
        if not r["ok"]:
            raise RuntimeError(f"{self.name}: {r['error']}\n{r['tb']}")
        return r["r"]

    def call(self, **m):
        self.send(m)
        return self.recv()

    def stop(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


class Local:
    """The embedded overlay: one agent in this process, answering at once."""

    def __init__(self, name, agent):
        self.name, self.agent, self.pending = name, agent, []

    def call(self, **m):
        return json.loads(json.dumps(self.agent.handle(m)))

    def send(self, m):
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("r", self.call(**m)))
        t.start()
        self.pending.append((t, box))

    def recv(self):
        t, box = self.pending.pop(0)
        t.join()
        return box["r"]

    def stop(self):
        pass


def new_obj(rng, name):
    cls = rng.choice(["Car", "Car", "Truck", "Player", "Chaser"])
    x0 = rng.uniform(-50, 50)
    vx = rng.choice([0.0, rng.uniform(-20, 20), rng.uniform(-3, 3)])
    if cls == "Car":
        args = [x0, vx, rng.uniform(1, 6), rng.choice([1e9, rng.uniform(2, 12)])]
    elif cls == "Truck":
        args = [x0, vx, rng.uniform(1, 6), rng.choice([1e9, 5.0]), rng.uniform(-5, 5)]
    elif cls == "Player":
        args = [x0, rng.uniform(-50, 50), vx, rng.uniform(-10, 10), rng.uniform(1, 6),
                rng.sample(["a", "b", "noise"], rng.randint(1, 3))]
    else:
        args = [x0, vx, rng.uniform(-5, 5)]
    return {"op": "make", "cls": cls, "name": name, "args": args}


def event_near(rng, st, t_est, seq, at):
    cls = st["cls"]
    f = st["fields"]
    etype = rng.choice(LISTENS[cls])
    el = t_est - st["sub_at"][etype]
    kind = rng.choice(["a", "b", "noise"])
    if cls == "Chaser":
        x = f["x0"] + f["vx"] * el + rng.uniform(-5, 5)
        y = f["ymax"] + rng.uniform(-3, 3)
    else:
        r = f["r"]
        x = f["x0"] + f["vx"] * el + rng.uniform(-1.5 * r, 1.5 * r)
        y = (f["y0"] + f["vy"] * el + rng.uniform(-1.5 * r, 1.5 * r)) if cls == "Player" else rng.uniform(-6, 6)
    c, m = etype.split(".")
    return [c, m, x, y, kind, seq, at]


class Run:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.seq = 0
        self.names = 0
        self.problems = []
        self.events = {}  # seq -> (etype, x, y, kind, t0, t1)
        self.checked = Counter()

    def start(self):
        if self.args.overlay == "embedded":
            sys.path.insert(0, HERE)
            import agent as agent_mod
            a = agent_mod.Agent()
            self.subs = [Local("s0", a)]
            self.pub = Local("p", a)
        else:
            base = self.args.port
            n = self.args.brokers
            def env(port):
                e = dict(os.environ, EVENTPY_BROKER=f"tcp://127.0.0.1:{port}", PYTHONPATH=ROOT)
                return e
            self.subs = [Proc("s0", env(base + n - 1)), Proc("s1", env(base + (n - 1) // 2))]
            self.pub = Proc("p", env(base))

    def make(self, sub, confirm=True):
        name = f"o{self.names}"
        self.names += 1
        m = new_obj(self.rng, name)
        m["confirm"] = confirm
        return sub.call(**m)

    def states(self):
        out = {}
        for s in self.subs:
            for n, st in s.call(op="state").items():
                st["agent"] = s
                out[n] = st
        return out

    def plan_events(self, states, dur, n):
        live = [st for st in states.values() if not st.get("closed")]
        now = time.time() + 0.01
        evs = []
        for i in range(n):
            at = dur * i / n
            self.seq += 1
            if self.rng.random() < 0.15 or not live:  # anywhere
                c = self.rng.choice(["Car.alert", "Truck.alert", "Player.boom", "Chaser.boom"]).split(".")
                evs.append([c[0], c[1], self.rng.uniform(-300, 300), self.rng.uniform(-60, 60),
                            self.rng.choice(["a", "b", "noise"]), self.seq, at])
            else:
                evs.append(event_near(self.rng, self.rng.choice(live), now + at, self.seq, at))
        return evs

    def publish(self, evs):
        r = self.pub.call(op="publish", events=evs)
        for (c, m, x, y, kind, seq, at), (s2, t0, t1) in zip(evs, r["pubs"]):
            self.events[seq] = (f"{c}.{m}", x, y, kind, t0, t1)
        return [e[5] for e in evs]

    def drain(self):
        self.pub.call(op="drain")
        for s in self.subs:
            s.call(op="drain")

    def check_stable(self, before, after, seqs, label):
        """Objects unchanged over the phase got exactly what the guard admits at publication."""
        for name, st in after.items():
            b = before.get(name)
            if b is None or st.get("closed") or b.get("closed"):
                continue
            newgot = st["got"][len(b["got"]):]
            dup = [s for s, k in Counter(st["got"]).items() if k > 1]
            if dup:
                self.problems.append(f"{label} {name}: duplicates {dup}")
            got = set(newgot)
            for seq in seqs:
                etype, x, y, kind, t0, t1 = self.events[seq]
                if etype not in st["sub_at"]:
                    if seq in got:
                        self.problems.append(f"{label} {name} ({st['cls']}) got {seq} of {etype} it does not listen to")
                    continue
                sa = st["sub_at"][etype]
                g0 = guard(st["cls"], st["fields"], x, y, kind, t0 - sa)
                g1 = guard(st["cls"], st["fields"], x, y, kind, t1 - sa)
                if g0 != g1:
                    self.checked["ambiguous"] += 1
                    continue
                self.checked["expected" if g0 else "rejected"] += 1
                if g0 and seq not in got:
                    self.problems.append(f"{label} {name} ({st['cls']} {st['fields']}) MISSED {seq} {self.events[seq][:4]} el={t0 - sa:.3f}")
                if not g0 and seq in got:
                    self.problems.append(f"{label} {name} ({st['cls']} {st['fields']}) got FALSE {seq} {self.events[seq][:4]} el={t0 - sa:.3f}")

    def round_stable(self, k):
        before = self.states()
        evs = self.plan_events(before, self.args.phase, self.args.events)
        seqs = self.publish(evs)
        self.drain()
        after = self.states()
        self.check_stable(before, after, seqs, f"round {k}")
        return after

    def changes(self, states):
        live = [(n, st) for n, st in states.items() if not st.get("closed")]
        for n, st in live:
            r = self.rng.random()
            ag = st["agent"]
            if r < 0.3 and st["cls"] in ("Car", "Truck"):
                ag.call(op="turn", name=n, v=[self.rng.uniform(-20, 20)])
            elif r < 0.45 and st["cls"] == "Player":
                ag.call(op="turn", name=n, v=[self.rng.uniform(-20, 20), self.rng.uniform(-20, 20)])
            elif r < 0.55:
                fld = {"Car": "r", "Truck": "ymin", "Player": "kinds", "Chaser": "ymax"}[st["cls"]]
                val = (self.rng.sample(["a", "b", "noise"], 2) if fld == "kinds" else self.rng.uniform(-3, 6))
                ag.call(op="set", name=n, field=fld, value=val)
            elif r < 0.62:
                ag.call(op="close", name=n)
        for s in self.subs:
            for _ in range(self.rng.randint(0, 2)):
                self.make(s)

    def round_chaos(self, k):
        """Turns, field stores, new and closed objects while events flow: every delivery must be
        admitted by the fields before or after the change; unchanged objects are checked exactly;
        objects made during the phase get every event published after their confirm returned."""
        before = self.states()
        evs = self.plan_events(before, self.args.phase, self.args.events)
        self.pub.send({"op": "publish", "events": evs})
        time.sleep(self.args.phase * 0.3)
        live = [(n, st) for n, st in before.items() if not st.get("closed")]
        changed = {}
        made = {}
        for n, st in self.rng.sample(live, min(len(live), 4)):
            ag = st["agent"]
            if st["cls"] in ("Car", "Truck"):
                r = ag.call(op="turn", name=n, v=[self.rng.uniform(-20, 20)], confirm=False)
            elif st["cls"] == "Player":
                r = ag.call(op="turn", name=n, v=[self.rng.uniform(-20, 20), self.rng.uniform(-20, 20)], confirm=False)
            else:
                r = ag.call(op="set", name=n, field="ymax", value=self.rng.uniform(-3, 6), confirm=False)
            changed[n] = r
            time.sleep(0.1)
        for s in self.subs:
            r = self.make(s)
            made[self.names - 1] = r
        r = self.pub.recv()
        for (c, m, x, y, kind, seq, at), (s2, t0, t1) in zip(evs, r["pubs"]):
            self.events[seq] = (f"{c}.{m}", x, y, kind, t0, t1)
        seqs = [e[5] for e in evs]
        self.drain()
        after = self.states()
        label = f"chaos {k}"
        stable_before = {n: st for n, st in before.items() if n not in changed}
        self.check_stable(stable_before, after, seqs, label)
        for n, r in changed.items():
            st = after[n]
            got = st["got"][len(before[n]["got"]):]
            for seq in got:
                etype, x, y, kind, t0, t1 = self.events[seq]
                sa = st["sub_at"][etype]
                ok = any(guard(st["cls"], f, x, y, kind, t - sa) for f in (before[n]["fields"], st["fields"]) for t in (t0, t1))
                if not ok:
                    self.problems.append(f"{label} {n} changed: got FALSE {seq}")
            dup = [q for q, c in Counter(st["got"]).items() if c > 1]
            if dup:
                self.problems.append(f"{label} {n}: duplicates {dup}")
        for i, r in made.items():
            n = f"o{i}"
            st = after[n]
            got = set(st["got"])
            for seq in seqs:
                etype, x, y, kind, t0, t1 = self.events[seq]
                if etype not in st["sub_at"]:
                    continue
                sa = st["sub_at"][etype]
                g0 = guard(st["cls"], st["fields"], x, y, kind, t0 - sa)
                g1 = guard(st["cls"], st["fields"], x, y, kind, t1 - sa)
                if t0 < sa:
                    if seq in got:
                        self.problems.append(f"{label} new {n}: got {seq} published before it subscribed: t0-sa={t0 - sa:.6f} t1-sa={t1 - sa:.6f} guard={g0},{g1} {st['cls']} {st['fields']} {self.events[seq]}")
                    continue
                if g0 != g1:
                    continue
                if seq in got and not g0:
                    self.problems.append(f"{label} new {n}: got FALSE {seq}")
                if g0 and seq not in got and t0 > r["t"]:
                    self.problems.append(f"{label} new {n} ({st['cls']}): MISSED {seq} published {t0 - r['t']:.3f}s after confirm")

    def go(self):
        self.start()
        self.pub.call(op="advertise")
        for s in self.subs:
            for _ in range(self.args.objects):
                self.make(s)
        for k in range(self.args.rounds):
            st = self.round_stable(k)
            self.changes(st)
            if self.args.chaos:
                self.round_chaos(k)
        for s in self.subs + [self.pub]:
            s.stop()
        print(json.dumps(dict(self.checked)), len(self.events), "events")
        for p in self.problems[:60]:
            print("PROBLEM", p)
        print(f"{len(self.problems)} problems")
        return 1 if self.problems else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--overlay", default="embedded", choices=["embedded", "tcp"])
    ap.add_argument("--port", type=int, default=7450)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--objects", type=int, default=6)
    ap.add_argument("--events", type=int, default=150)
    ap.add_argument("--phase", type=float, default=3.0)
    ap.add_argument("--chaos", action="store_true")
    args = ap.parse_args()
    sys.exit(Run(args).go())


if __name__ == "__main__":
    main()
