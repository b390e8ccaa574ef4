"""confirm() of an update right after a broker restart, on a real 3-broker overlay (README
"Knowing an update is in force", "Faults"): it returns once the overlay is back, or raises
UpdateNotConfirmed naming the broker, within its timeout; it never hangs."""

from __future__ import annotations

import os
import signal
import time

import pytest

import eventpy

from .test_faults import restart

Q = eventpy.EventType("confirmrestart.Tick", n=int)


@pytest.mark.parametrize("victim", ["b1", "b2"], ids=["middle broker", "subscriber's edge broker"])
def test_confirm_right_after_a_restart_returns_and_the_update_is_in_force(overlay, victim):
    sub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    pub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}")
    got = []
    sub = sub_node.subscribe(Q, "n > low", params={"low": 100}, on_event=lambda e: got.append(e.n))
    pub_node.advertise(Q)
    eventpy.drain(10)
    restart(overlay.run_dir, victim, overlay.env, overlay.dir)
    sub.update(low=5)
    started = time.monotonic()
    sub.confirm(timeout=30)  # the re-dial backoff of the neighbors: seconds
    assert time.monotonic() - started < 30
    pub_node.publish(Q, n=7)
    eventpy.drain(10)
    assert got == [7]


def test_confirm_while_the_edge_broker_is_down_names_it_within_the_timeout(overlay):
    sub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    sub = sub_node.subscribe(Q, "n > low", params={"low": 100})
    sub.confirm(timeout=10)
    os.kill(int((overlay.run_dir / "b2.pid").read_text()), signal.SIGKILL)
    sub.update(low=5)
    started = time.monotonic()
    with pytest.raises(eventpy.UpdateNotConfirmed) as caught:
        sub.confirm(timeout=2)
    assert time.monotonic() - started < 10  # 2 s and a loaded machine's slack, not a hang
    assert "b2" in str(caught.value) and "no connection to 127.0.0.1:" in str(caught.value), caught.value
