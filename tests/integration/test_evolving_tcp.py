"""Evolving subscriptions over a real overlay of broker processes (3 in a line): the broker
holding the subscription filters with each event's publication time, and the brokers upstream
receive summaries that its timer recomputes as the subscription moves (paper 003)."""

from __future__ import annotations

import time

import eventpy

Pos = eventpy.EventType("evolving.Pos", x=float)


def test_a_moving_window_follows_its_motion_across_broker_processes(overlay):
    sub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    pub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}")
    pub_node.advertise(Pos)
    eventpy.drain(timeout=10)
    got: list[tuple[float, float]] = []
    since = time.time()
    sub = sub_node.subscribe(Pos, "x >= v * elapsed() - w and x <= v * elapsed() + w",
                             params={"v": 100.0, "w": 50.0},
                             on_event=lambda ev: got.append((ev.x, eventpy.event_info(ev)[2])))
    sub.confirm(timeout=10)  # the SUB and its first summary reached the publisher's broker
    pub_node.publish(Pos, x=400.0)  # near the start: far ahead of the window
    pub_node.publish(Pos, x=100.0 * (time.time() - since))  # where the window is now
    eventpy.drain(timeout=10)
    time.sleep(max(0.0, since + 4.0 - time.time()))  # four evolution horizons later
    pub_node.publish(Pos, x=0.0)  # left behind
    pub_node.publish(Pos, x=100.0 * (time.time() - since))  # where the window has moved to
    eventpy.drain(timeout=10)
    assert len(got) == 2, got  # the two at the window, not the two away from it
    for x, t_pub in got:  # each admitted by the guard at its publication time (strictness)
        assert abs(x - 100.0 * (t_pub - since)) <= 50.0, (x, t_pub - since)
    assert got[1][0] >= 350.0  # the second was published about four seconds in
    s = sub_node.stats()  # the subscriber sent one SUB and nothing more
    assert s["sub_sent"] == 1 and s["upd_sent"] == 0
