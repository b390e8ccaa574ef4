"""One buggy client against a shared broker: the broker's memory (RSS) and another client's event
latency while it runs (README: *A real overlay*, **Per-client limits**).

A real `eventpy broker` on 127.0.0.1 (a free port); a *victim* process publishes an event every
20 ms to its own subscription and measures each one's latency; a *bad* process, started 3 s in,
does one of:

  subs     subscribes --subs times without closing (a loop that leaks subscriptions)
  upds     updates 100 subscriptions in a tight loop
  bigset   updates a 60,000-member set parameter one member at a time
  noread   subscribes to everything (raw socket), then never reads, while a third process floods
           events

With --max-subscriptions N (or --max-set-members N) the broker runs with that per-client limit:
the bad client's subscribe then raises eventpy.LimitExceeded, which it reports and stops at.

    python tools/bench/client_caps.py subs --subs 200000
    python tools/bench/client_caps.py subs --subs 200000 --max-subscriptions 10000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eventpy.runtime._ports import free_port

VICTIM = r'''
import sys, time, eventpy
node = eventpy.connect(sys.argv[1], name="victim")
T = eventpy.EventType("team.Ping", t=float, k=int)
node.advertise(T)
lat = []
node.subscribe(T, "k >= 0", on_event=lambda e: lat.append(time.time() - e.t))
eventpy.drain(timeout=10)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    node.publish(T, t=time.time(), k=1)
    time.sleep(0.02)
eventpy.drain(timeout=30)
lat.sort()
print("LAT", len(lat), lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3, lat[-1] * 1e3, flush=True)
'''

BAD = {
    "subs": r'''
import sys, time, eventpy
node = eventpy.connect(sys.argv[1], name="bad")
Q = eventpy.EventType("bad.Quote", price=float)
n = 0
try:
    for n in range(int(sys.argv[2])):
        node.subscribe(Q, "price < limit", params={"limit": float(n)})
except eventpy.LimitExceeded as e:
    print("BAD refused after", n, "subscriptions:", e, flush=True)
eventpy.drain(timeout=120)
print("BAD made", n, flush=True)
''',
    "upds": r'''
import sys, time, eventpy
node = eventpy.connect(sys.argv[1], name="bad")
Q = eventpy.EventType("bad.Quote", price=float)
subs = [node.subscribe(Q, "price < limit", params={"limit": 0.0}) for _ in range(100)]
t0, n = time.time(), 0
while time.time() - t0 < float(sys.argv[3]):
    for s in subs:
        s.update(limit=float(n)); n += 1
print("BAD updates", n, "UPDs sent", eventpy.stats()["upd_sent"], flush=True)
''',
    "bigset": r'''
import sys, time, eventpy
node = eventpy.connect(sys.argv[1], name="bad")
Q = eventpy.EventType("bad.Quote", sym=str)
big = {f"s{i}" for i in range(60000)}
try:
    s = node.subscribe(Q, "sym in watch", params={"watch": big})
except eventpy.LimitExceeded as e:
    print("BAD refused:", e, flush=True)
    sys.exit(0)
t0, n = time.time(), 0
while time.time() - t0 < float(sys.argv[3]):
    big = big | {f"x{n}"}; n += 1
    s.update(watch=big)
print("BAD set updates", n, flush=True)
''',
    "noread": r'''
import socket, sys, time
from eventpy.runtime.wire import encode
from eventpy.runtime.messages import Hello, Adv, Sub
from eventpy.runtime.transports._handshake import PROTOCOL
host, port = sys.argv[1][len("tcp://"):].split(":")
s = socket.create_connection((host, int(port)))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(encode(Hello("bad", "client", PROTOCOL)))
s.sendall(encode(Adv("team.Ping", (("t", "float"), ("k", "int")), False)))
s.sendall(encode(Sub("team.Ping", 1, (((), -1, ()),), [])))
time.sleep(float(sys.argv[3]))
''',
}

FLOOD = r'''
import sys, time, eventpy
node = eventpy.connect(sys.argv[1], name="flood")
T = eventpy.EventType("team.Ping", t=float, k=int)
node.advertise(T)
eventpy.drain(timeout=10)
t0, n = time.time(), 0
while time.time() - t0 < float(sys.argv[2]):
    node.publish(T, t=0.0, k=-1); n += 1
print("FLOOD published", n, flush=True)
'''


def rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", choices=sorted(BAD))
    ap.add_argument("--subs", type=int, default=200_000, help="subscriptions the bad client makes (subs)")
    ap.add_argument("--seconds", type=float, default=12.0, help="how long the bad client runs (upds, bigset, noread)")
    ap.add_argument("--max-subscriptions", type=int, help="the broker's per-client limit (default: none)")
    ap.add_argument("--max-set-members", type=int, help="the broker's per-client limit (default: none)")
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as run:
        port = free_port()
        config = Path(run) / "overlay.toml"
        config.write_text(f'[brokers.b0]\nhost = "127.0.0.1"\nport = {port}\n')
        limits = [a for flag, v in (("--max-subscriptions", args.max_subscriptions),
                                    ("--max-set-members", args.max_set_members)) if v for a in (flag, str(v))]
        broker = subprocess.Popen([py, "-m", "eventpy", "broker", "--config", str(config), "--id", "b0", *limits],
                                  stderr=subprocess.DEVNULL)
        procs: list[subprocess.Popen] = []
        try:
            while not (Path(run) / "b0.pid").exists():
                time.sleep(0.05)
            url = f"tcp://127.0.0.1:{port}"
            start = rss_mb(broker.pid)
            victim_for = 3 + (args.seconds if args.scenario != "subs" else 60) + 3
            procs.append(subprocess.Popen([py, "-c", VICTIM, url, str(victim_for)], stdout=subprocess.PIPE, text=True))
            time.sleep(3)
            procs.append(subprocess.Popen([py, "-c", BAD[args.scenario], url, str(args.subs), str(args.seconds)],
                                          stdout=subprocess.PIPE, text=True))
            if args.scenario == "noread":
                time.sleep(1)
                procs.append(subprocess.Popen([py, "-c", FLOOD, url, str(args.seconds - 2)], stdout=subprocess.PIPE,
                                              text=True))
            peak = start
            while procs[1].poll() is None or procs[0].poll() is None:
                peak = max(peak, rss_mb(broker.pid))
                time.sleep(0.5)
            said = "".join(p.stdout.read() for p in procs if p.stdout)
            print(said, end="", file=sys.stderr)
            lat = next((line.split()[1:] for line in said.splitlines() if line.startswith("LAT")), None)
            row = {"scenario": args.scenario, "broker_rss_start_mb": start, "broker_rss_peak_mb": peak,
                   "limits": " ".join(limits) or "none"}
            if lat:
                row.update(victim_events=int(lat[0]), victim_p50_ms=round(float(lat[1]), 1),
                           victim_p99_ms=round(float(lat[2]), 1), victim_max_ms=round(float(lat[3]), 1))
            print(json.dumps(row))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
            broker.terminate()
            broker.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
