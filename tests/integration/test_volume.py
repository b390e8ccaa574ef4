"""Volume through a real 3-broker overlay: a publisher process streams 100,000 events (with drain
barriers in the middle of the stream) to one subscriber node on the other edge holding three
subscriptions, one of them raised again and again while the events flow. The reader decodes
reads in slices and hands them to the delivery threads once per read; whatever the slicing,
batching and barriers do, the static subscriptions get exactly the oracle's events in order, and
the parametric one gets each event at most once, in order, never one its guard rejects when it is
delivered (strictness)."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time

import eventpy

N = 100_000
Tick = eventpy.EventType("volume.Tick", n=int, price=float, firm=str)

PUBLISHER = r'''
import random, sys
import eventpy
node = eventpy.connect(sys.argv[1])
Tick = eventpy.EventType("volume.Tick", n=int, price=float, firm=str)
node.advertise(Tick)
eventpy.drain(30)
print("ready", flush=True)
sys.stdin.readline()
rng = random.Random(7)
for i in range(int(sys.argv[2])):
    node.publish(Tick, n=i, price=rng.random() * 100, firm=rng.choice("ABCD"))
    if i % 30_000 == 0:
        eventpy.drain(60)  # barriers in the middle of the stream
eventpy.drain(120)
print("done", flush=True)
'''


def oracle() -> tuple[list[int], list[int]]:
    rng = random.Random(7)
    either, every = [], []
    for i in range(N):
        price, firm = rng.random() * 100, rng.choice("ABCD")
        if price > 90.0 or firm == "B":
            either.append(i)
        every.append(i)
    return either, every


def test_a_long_stream_is_exact_in_order_and_strict_under_updates(overlay):
    node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    got: dict[str, list[int]] = {"limit": [], "either": [], "every": []}
    limit = [0.0]  # only rises, and rises before the UPD is sent: the local filter's value <= it
    rejected = []

    def on_limited(ev: eventpy.Event) -> None:
        if not (ev.firm == "A" and ev.price < limit[0]):
            rejected.append(ev.n)
        got["limit"].append(ev.n)

    limited = node.subscribe(Tick, "firm == 'A' and price < lim", params={"lim": 0.0}, on_event=on_limited)
    node.subscribe(Tick, "price > 90.0 or firm == 'B'", on_event=lambda ev: got["either"].append(ev.n))
    node.subscribe(Tick, "True", on_event=lambda ev: got["every"].append(ev.n))
    eventpy.drain(30)

    pub = subprocess.Popen([sys.executable, "-c", PUBLISHER, f"tcp://127.0.0.1:{overlay.port}", str(N)],
                           env=overlay.env, cwd=overlay.dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True)
    try:
        assert pub.stdout.readline().strip() == "ready"
        stop = threading.Event()

        def raise_limit() -> None:
            value = 0.0
            while not stop.is_set() and value < 100.0:
                value += 0.1
                limit[0] = value
                limited.update(lim=value)
                time.sleep(0.002)

        raiser = threading.Thread(target=raise_limit)
        raiser.start()
        pub.stdin.write("go\n")
        pub.stdin.flush()
        assert pub.stdout.readline().strip() == "done"
        assert pub.wait(60) == 0
        stop.set()
        raiser.join()
        eventpy.drain(60)
    finally:
        if pub.poll() is None:
            pub.kill()
        pub.communicate()  # reaps it and closes its pipes

    either, every = oracle()
    assert got["every"] == every  # exact, in order, once each
    assert got["either"] == either
    limited_got = got["limit"]
    assert rejected == []  # strictness
    assert limited_got and limited_got == sorted(set(limited_got))  # some, in order, no duplicates
    assert node.stats()["upd_sent"] > 0
