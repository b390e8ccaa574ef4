"""Backpressure end to end: the publisher's edge broker stops (SIGSTOP); the publisher's socket and
then its bounded outbox fill, and publish gives up with TimeoutError instead of growing memory.
Once the broker continues, the subscriber receives exactly the events publish accepted, in order,
once each."""

from __future__ import annotations

import os
import signal
import time

import pytest

import eventpy

Tick = eventpy.EventType("bp.Tick", n=int)


def test_a_stopped_broker_makes_publish_wait_then_give_up_and_loses_nothing(overlay):
    got: list[int] = []
    sub = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    sub.subscribe(Tick, "True", on_event=lambda ev: got.append(ev.n))
    pub = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}")
    pub.advertise(Tick)
    eventpy.drain(10)
    pub._local.max_outbox, pub._local.publish_wait = 2000, 0.5
    b0 = int((overlay.run_dir / "b0.pid").read_text())
    os.kill(b0, signal.SIGSTOP)
    try:
        accepted = 0
        with pytest.raises(TimeoutError, match="not taking them"):
            for n in range(2_000_000):  # the kernel's socket buffers take some; then the outbox fills
                pub.publish(Tick, n=n)
                accepted += 1
        assert len(pub._local.core.outbox) <= 2000
    finally:
        os.kill(b0, signal.SIGCONT)
    deadline = time.monotonic() + 60
    while len(got) < accepted and time.monotonic() < deadline:
        time.sleep(0.05)
    eventpy.drain(30)
    assert got == list(range(accepted))
