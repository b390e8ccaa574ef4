"""One client process of tools/hunt/overlay_oracle/drive.py: JSON commands on stdin, one JSON
answer per command on stdout. It makes and closes Watch objects, stores their fields, publishes,
and reports what each object received."""

import json
import sys
import threading
import time
import traceback

import eventpy
import watch

stores = []  # (object id, start, end) of every store: a body's failed check during one is the known race


def store(obj, field, value):
    start = time.monotonic()
    if field == "names_add":
        obj.names.add(value)
    elif field == "names_discard":
        obj.names.discard(value)
    elif field == "names":
        obj.names = set(value)
    else:
        setattr(obj, field, value)
    stores.append((id(obj), start, time.monotonic()))


def publish(events):
    for method, a, b, s, eid in events:
        getattr(watch.Watch, method)(a, b, s, eid)


def main():
    node = eventpy.connect()
    for m in ("e1", "e2", "e3", "e4", "e5"):
        node.advertise(getattr(watch.Watch, m))
    objs = {}

    def reply(**kw):
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        try:
            if op == "new":
                for oid, f in cmd["objs"].items():
                    objs[oid] = watch.Watch(f["lo"], f["hi"], f["k"], f["name"], f["names"])
            elif op == "close":
                for oid in cmd["ids"]:
                    objs.pop(oid).close()
            elif op == "upd":
                for oid, f, v in cmd["updates"]:
                    store(objs[oid], f, v)
            elif op == "pub":
                publish(cmd["events"])
            elif op == "chaos":  # stores on this thread while another publishes
                t = threading.Thread(target=publish, args=(cmd["events"],))
                t.start()
                for oid, f, v in cmd["updates"]:
                    store(objs[oid], f, v)
                t.join()
            elif op == "report":
                got = {oid: o.got for oid, o in objs.items()}
                bad = {}
                for oid, o in objs.items():
                    for m, eid, at in o.bad:
                        race = any(s[0] == id(o) and s[1] <= at <= s[2] for s in stores)
                        bad.setdefault(oid, []).append([m, eid, "race" if race else "violation"])
                    o.got, o.bad = [], []
                stores.clear()
                reply(got=got, bad=bad)
                continue
            elif op == "quit":
                reply(ok=True)
                break
            eventpy.drain(30)
            reply(ok=True)
        except Exception as e:
            reply(error=f"{type(e).__name__}: {e}", tb=traceback.format_exc())
    eventpy.shutdown()


if __name__ == "__main__":
    main()
