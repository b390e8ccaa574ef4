"""A subscriber replaced while a publisher runs (README "Deploys"), on a real 3-broker overlay:
the new one started first, confirmed, then the old one closed: every event is delivered to one
of them at least, none twice to either, and the new one gets every event published after its
confirm()."""

from __future__ import annotations

import threading

import eventpy

Tick = eventpy.EventType("deploy.Tick", n=int)


def test_a_subscriber_replaced_new_first_misses_nothing_and_gets_nothing_twice(overlay):
    url = lambda i: f"tcp://127.0.0.1:{overlay.port + i}"  # noqa: E731
    pub = eventpy.connect(url(0), name="feed")
    pub.advertise(Tick)
    eventpy.drain(10)
    got = {"old": [], "new": []}
    old = eventpy.connect(url(2), name="svc-old")
    old.subscribe(Tick, "n >= 0", on_event=lambda e: got["old"].append(e.n)).confirm(10)
    published = []  # n of each event, appended after its publish returned
    stop = threading.Event()

    def feed() -> None:
        n = 0
        while not stop.is_set() or n < 300:
            pub.publish(Tick, n=n)
            published.append(n)
            n += 1
            stop.wait(0.001)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        while len(published) < 100:
            stop.wait(0.01)
        new = eventpy.connect(url(2), name="svc-new")
        new.subscribe(Tick, "n >= 0", on_event=lambda e: got["new"].append(e.n)).confirm(10)
        confirmed_at = len(published)  # the events published from here on are owed to the new one
        old.close()
        while len(published) < confirmed_at + 100:
            stop.wait(0.01)
    finally:
        stop.set()
        feeder.join(30)
    eventpy.drain(20)
    for who, ns in got.items():
        assert len(ns) == len(set(ns)), f"{who} got an event twice"
    assert set(range(len(published))) <= set(got["old"]) | set(got["new"])
    assert set(range(confirmed_at, len(published))) <= set(got["new"])
