"""One process of the hunt (drive.py): makes movers objects, changes them, publishes; JSON lines
on stdin/stdout. It reads each subscription's origin of elapsed() from the runtime for the oracle."""
import json
import os
import sys
import threading
import time

import eventpy
from eventpy.guards import SUBSCRIBED_AT
from eventpy.runtime.lang import subscriptions_of

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import movers  # noqa: E402

CLASSES = {"Car": movers.Car, "Truck": movers.Truck, "Player": movers.Player, "Chaser": movers.Chaser}
FIELDS = {"Car": ["x0", "vx", "r", "ttl"], "Truck": ["x0", "vx", "r", "ttl", "ymin"],
          "Player": ["x0", "y0", "vx", "vy", "r", "kinds"], "Chaser": ["x0", "vx", "ymax"]}


class Agent:
    def __init__(self):
        self.objs = {}
        self.closed = {}
        self.lock = threading.Lock()

    def describe(self, name, obj):
        cls = type(obj).__name__
        f = {k: (sorted(getattr(obj, k)) if k == "kinds" else getattr(obj, k)) for k in FIELDS[cls]}
        subs = {}
        for s in subscriptions_of(obj):
            subs[s._state.etype.name.split(".", 1)[1]] = s._state.env[SUBSCRIBED_AT]
        with obj.lock:
            got = list(obj.got)
        return {"cls": cls, "fields": f, "sub_at": subs, "got": got}

    def op_advertise(self, m):
        node = eventpy.default_node()
        for c in CLASSES.values():
            for meth in ("alert", "boom"):
                if meth in c.__dict__:
                    node.advertise(getattr(c, meth))
        eventpy.drain(timeout=20)
        return {}

    def op_make(self, m):
        args = m["args"]
        if m["cls"] == "Player":
            args = args[:-1] + [set(args[-1])]
        obj = CLASSES[m["cls"]](m["name"], *args)
        with self.lock:
            self.objs[m["name"]] = obj
        if m.get("confirm", True):
            eventpy.confirm(obj, timeout=20)
        return {"t": time.time(), **self.describe(m["name"], obj)}

    def op_turn(self, m):
        obj = self.objs[m["name"]]
        sub_at = min(s._state.env[SUBSCRIBED_AT] for s in subscriptions_of(obj))
        t_before = time.time()
        at = t_before - sub_at + m.get("lead", 0.0)
        obj.turn(at, *m["v"])
        t_after = time.time()
        if m.get("confirm", True):
            eventpy.confirm(obj, timeout=20)
        return {"t0": t_before, "t1": t_after, "at": at, **self.describe(m["name"], obj)}

    def op_set(self, m):
        obj = self.objs[m["name"]]
        t0 = time.time()
        v = set(m["value"]) if m["field"] == "kinds" else m["value"]
        setattr(obj, m["field"], v)
        t1 = time.time()
        if m.get("confirm", True):
            eventpy.confirm(obj, timeout=20)
        return {"t0": t0, "t1": t1, **self.describe(m["name"], obj)}

    def op_close(self, m):
        obj = self.objs.pop(m["name"])
        t0 = time.time()
        obj.close()
        t1 = time.time()
        self.closed[m["name"]] = obj
        return {"t0": t0, "t1": t1, **self.describe(m["name"], obj)}

    def op_state(self, m):
        out = {n: self.describe(n, o) for n, o in list(self.objs.items())}
        for n, o in self.closed.items():
            out[n] = {**self.describe(n, o), "closed": True}
        return out

    def op_publish(self, m):
        out = []
        start = time.time()
        for i, (cls, meth, x, y, kind, seq, at) in enumerate(m["events"]):
            wait = start + at - time.time()
            if wait > 0:
                time.sleep(wait)
            fn = getattr(CLASSES[cls], meth)
            t0 = time.time()
            fn(x, y, kind, seq)
            t1 = time.time()
            out.append([seq, t0, t1])
        return {"pubs": out}

    def op_drain(self, m):
        eventpy.drain(timeout=m.get("timeout", 30))
        return {}

    def op_stats(self, m):
        return eventpy.stats()

    def handle(self, m):
        return getattr(self, "op_" + m["op"])(m)


def main():
    agent = Agent()
    for line in sys.stdin:
        m = json.loads(line)
        try:
            r = {"ok": True, "r": agent.handle(m)}
        except Exception as e:  # reported to the driver
            import traceback
            r = {"ok": False, "error": f"{type(e).__name__}: {e}", "tb": traceback.format_exc()}
        sys.stdout.write(json.dumps(r) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
