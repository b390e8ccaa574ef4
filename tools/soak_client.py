"""One churning client process of the soak harness (tools/soak.py starts these; not run by hand).

    soak_client.py sub|pub --name NAME --brokers URL,URL,... --log FILE --seed N --stop FILE [...]

It runs until the stop file appears, then finishes cleanly (publishers drain, subscribers wait
for the last events) and exits. Everything the oracle needs goes to --log, one JSON object a line,
with wall-clock times (`time.time()`, shared by every process of the machine):

* sub: `node` (connected to broker URL), `sub` (subscribed: guard template, parameters), `conf`
  (its confirm returned: in force at every broker), `upd` (parameters after an update, with the
  time the update was called), `close` (begin and end of the close), `d` (a delivery: which
  subscription, publisher, sequence number, receive time, the parameters the callback saw),
  `nodeclose`, `stats` (the node's counters, at each node close and at the end);
* pub: `node`, `ready` (advertised and drained), `p` (published: sequence, time, attributes),
  `nodeclose`, `stats`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import threading
import time

import eventpy

TICK = eventpy.EventType("soak.Tick", pub=str, seq=int, x=float, kind=str, t=float)
KINDS = ("a", "b", "c", "d")
# the guards a subscriber picks from; tools/soak_oracle.py evaluates the same ones in Python
GUARDS = {
    "win": "x >= lo and x < hi",
    "set": "kind in kinds and x < hi",
    "sw": "active and x >= lo",
    "gen": "x >= lo and x < lo + hi",
    "all": "active and kind in kinds and x >= lo and x < hi",
}


class Log:
    """Lines of JSON from the main thread and the delivery threads, in one file."""

    def __init__(self, path: str) -> None:
        self._f = open(path, "a", buffering=1 << 16)
        self._lock = threading.Lock()

    def __call__(self, **rec) -> None:
        line = json.dumps(rec, separators=(",", ":"))
        with self._lock:
            self._f.write(line + "\n")

    def close(self) -> None:
        with self._lock:
            self._f.close()


def plain(params) -> dict:
    """Parameters as JSON holds them (a set as a sorted list)."""
    return {k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in params.items()}


class ObjectCount:
    """Every 30 s, the number of objects the garbage collector tracks in this process: a sharper
    sign of a leak than the RSS, which the allocator keeps."""

    def __init__(self, log: Log) -> None:
        self.log, self.next = log, time.time()

    def __call__(self) -> None:
        if time.time() >= self.next:
            self.next += 30.0
            gc.collect()  # live objects, not garbage the collector has not reached yet (a sawtooth)
            self.log(k="objects", t=time.time(), n=len(gc.get_objects()))


def stopping(args) -> bool:
    return os.path.exists(args.stop)


def connect(args, r: random.Random, log: Log, incarnation: int):
    url = r.choice(args.brokers.split(","))
    while True:
        try:
            node = eventpy.connect(url, name=f"{args.name}-{incarnation}")
            break
        except ConnectionError as e:  # its broker is being restarted: try again shortly
            log(k="connect_failed", t=time.time(), b=url, err=str(e)[:200])
            time.sleep(0.5)
    log(k="node", t=time.time(), b=url, inc=incarnation)
    return node


# ---- subscribers ---------------------------------------------------------------------------

def new_params(r: random.Random) -> dict:
    lo = round(r.uniform(0, 80), 2)
    return {"lo": lo, "hi": round(lo + r.uniform(5, 40), 2), "active": r.random() < 0.8,
            "kinds": frozenset(r.sample(KINDS, r.randint(1, 3)))}


def change(r: random.Random, p: dict, guard: str) -> dict:
    """One parameter change of the kind the guard reads: a window move, a set member, a switch."""
    moves = ["win"] + (["set"] if "kinds" in GUARDS[guard] else []) + (["sw"] if "active" in GUARDS[guard] else [])
    move = r.choice(moves)
    if move == "win":
        lo = round(min(95.0, max(0.0, p["lo"] + r.uniform(-8, 8))), 2)
        return {"lo": lo, "hi": round(lo + r.uniform(5, 40), 2)}
    if move == "set":
        k = r.choice(KINDS)
        return {"kinds": p["kinds"] - {k} if k in p["kinds"] else p["kinds"] | {k}}
    return {"active": not p["active"]}


class Subscriber:
    def __init__(self, args, r: random.Random, log: Log) -> None:
        self.args, self.r, self.log = args, r, log
        self.node = None
        self.incarnation = 0
        self.subs: dict[str, dict] = {}  # sid -> {"sub", "guard", "params", "hot"}
        self.count = 0

    def on_event(self, sid: str):
        def got(ev) -> None:
            sub = self.subs.get(sid)
            p = plain(sub["sub"].params) if sub else None
            self.log(k="d", sid=sid, pub=ev.pub, seq=ev.seq, tr=time.time(), p=p)
        return got

    def subscribe(self) -> None:
        self.count += 1
        sid = f"{self.args.name}.s{self.count}"
        guard = self.r.choice(list(GUARDS))
        params = new_params(self.r)
        t = time.time()
        sub = self.node.subscribe(TICK, GUARDS[guard], params=params, on_event=self.on_event(sid))
        self.subs[sid] = {"sub": sub, "guard": guard, "params": params, "hot": self.r.random() < 0.5}
        self.log(k="sub", sid=sid, t=t, g=guard, p=plain(params), hot=self.subs[sid]["hot"],
                 inc=self.incarnation)
        while not stopping(self.args):  # in force at every broker before it is owed anything
            try:
                sub.confirm(timeout=10.0)
                self.log(k="conf", sid=sid, t=time.time())
                return
            except (TimeoutError, RuntimeError) as e:  # UpdateNotConfirmed is a TimeoutError
                self.log(k="conf_failed", sid=sid, t=time.time(), err=str(e)[:200])

    def close_sub(self, sid: str) -> None:
        s = self.subs[sid]
        t0 = time.time()
        s["sub"].close()
        self.log(k="close", sid=sid, t=t0, t1=time.time())
        del self.subs[sid]

    def update(self, sid: str) -> None:
        s = self.subs[sid]
        delta = change(self.r, s["params"], s["guard"])
        t = time.time()
        s["sub"].update(**delta)
        s["params"] = {**s["params"], **delta}
        self.log(k="upd", sid=sid, t=t, p=plain(s["params"]))

    def node_up(self) -> None:
        self.incarnation += 1
        self.node = connect(self.args, self.r, self.log, self.incarnation)
        for _ in range(self.args.subs):
            self.subscribe()

    def node_down(self) -> None:
        for sid in list(self.subs):
            self.close_sub(sid)
        stats = dict(self.node.stats())
        self.node.close()
        self.log(k="nodeclose", t=time.time(), stats=stats)

    def run(self) -> None:
        a, r = self.args, self.r
        self.node_up()
        next_node_churn = time.time() + r.uniform(0.5, 1.5) * a.node_churn
        next_sub_churn = time.time() + r.expovariate(1 / a.sub_churn)
        calm_next = {}
        count = ObjectCount(self.log)
        while not stopping(a):
            count()
            now = time.time()
            if now >= next_node_churn:
                self.node_down()
                time.sleep(r.uniform(0.2, 2.0))
                self.node_up()
                next_node_churn = time.time() + r.uniform(0.5, 1.5) * a.node_churn
                continue
            if now >= next_sub_churn and self.subs:
                self.close_sub(r.choice(list(self.subs)))
                self.subscribe()
                next_sub_churn = time.time() + r.expovariate(1 / a.sub_churn)
                continue
            for sid, s in list(self.subs.items()):
                if s["hot"]:  # high-rate updates: every tick
                    self.update(sid)
                elif now >= calm_next.setdefault(sid, now + r.uniform(1, 6)):
                    self.update(sid)
                    calm_next[sid] = now + r.uniform(1, 6)
            time.sleep(a.tick)
        time.sleep(a.linger)  # events published before the publishers stopped are still owed
        self.node_down()


# ---- publishers ----------------------------------------------------------------------------

class Publisher:
    def __init__(self, args, r: random.Random, log: Log) -> None:
        self.args, self.r, self.log = args, r, log
        self.seq = 0
        self.incarnation = 0

    def node_up(self):
        self.incarnation += 1
        node = connect(self.args, self.r, self.log, self.incarnation)
        node.advertise(TICK)
        while True:  # subscriptions come back along the advertisement before the first event
            try:
                eventpy.drain(10.0)
                break
            except TimeoutError as e:
                self.log(k="drain_failed", t=time.time(), err=str(e)[:200])
        self.log(k="ready", t=time.time(), inc=self.incarnation)
        return node

    def run(self) -> None:
        a, r = self.args, self.r
        node = self.node_up()
        period = 1.0 / a.rate
        next_at = time.time()
        leave_at = time.time() + r.uniform(0.5, 1.5) * a.node_churn
        count = ObjectCount(self.log)
        while not stopping(a):
            count()
            if time.time() >= leave_at:  # leave and come back, maybe at another broker
                stats = dict(node.stats())
                node.close()
                self.log(k="nodeclose", t=time.time(), stats=stats)
                time.sleep(r.uniform(0.5, 3.0))
                node = self.node_up()
                leave_at = time.time() + r.uniform(0.5, 1.5) * a.node_churn
                next_at = time.time()
            self.seq += 1
            x, kind = round(r.uniform(0, 100), 2), r.choice(KINDS)
            t = time.time()
            node.publish(TICK, pub=a.name, seq=self.seq, x=x, kind=kind, t=t)
            self.log(k="p", seq=self.seq, t=t, x=x, kind=kind, inc=self.incarnation)
            next_at += period
            delay = next_at - time.time()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1.0:  # fell behind (a loaded machine): keep the rate, not a burst
                next_at = time.time()
        try:
            eventpy.drain(20.0)
        except TimeoutError as e:
            self.log(k="drain_failed", t=time.time(), err=str(e)[:200])
        stats = dict(node.stats())
        node.close()
        self.log(k="nodeclose", t=time.time(), stats=stats)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("role", choices=["sub", "pub"])
    ap.add_argument("--name", required=True)
    ap.add_argument("--brokers", required=True, help="broker URLs to pick from, comma-separated")
    ap.add_argument("--log", required=True)
    ap.add_argument("--stop", required=True, help="the run stops once this file exists")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--subs", type=int, default=4, help="subscriptions held at once (sub)")
    ap.add_argument("--tick", type=float, default=0.1, help="seconds between update rounds (sub)")
    ap.add_argument("--sub-churn", type=float, default=20.0, help="mean seconds between a close + resubscribe")
    ap.add_argument("--node-churn", type=float, default=120.0, help="about how often the node leaves and comes back")
    ap.add_argument("--rate", type=float, default=20.0, help="events per second (pub)")
    ap.add_argument("--linger", type=float, default=8.0, help="seconds a subscriber waits after the stop")
    a = ap.parse_args(argv)
    log = Log(a.log)
    r = random.Random(a.seed)
    log(k="start", t=time.time(), pid=os.getpid(), role=a.role, name=a.name)
    try:
        (Subscriber if a.role == "sub" else Publisher)(a, r, log).run()
    finally:
        log(k="end", t=time.time(), stats=dict(eventpy.stats()))
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
