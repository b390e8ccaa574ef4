"""Faults on a real overlay: kill a broker, restart it; neighbors re-dial, clients reconnect and
re-subscribe with their current parameters, and afterwards coverage holds again with no
duplicates (events in flight during the crash may be lost)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import eventpy

from ._procs import eventpy as run_eventpy

Q = eventpy.EventType("faults.Quote", firm=str, price=float, n=int)


def restart(run_dir: Path, name: str, env: dict, cwd: Path) -> None:
    pid_file = run_dir / f"{name}.pid"
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    (run_dir / f"{name}.status.json").unlink(missing_ok=True)
    time.sleep(0.3)
    with open(run_dir / f"{name}.log", "ab") as log:  # the broker keeps its own descriptor
        proc = subprocess.Popen([sys.executable, "-m", "eventpy", "broker", "--config", str(run_dir / "overlay.toml"),
                                 "--id", name], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        statuses = {}
        for f in run_dir.glob("*.status.json"):
            try:
                statuses[f.name.split(".")[0]] = json.loads(f.read_text())
            except (OSError, ValueError):
                pass
        if len(statuses) == 3 and all(s.get("ready") for s in statuses.values()) and \
                statuses[name]["pid"] == proc.pid:
            # the broker wrote its pid file itself: `overlay status` and `overlay down` see it
            assert pid_file.read_text() == str(proc.pid)
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} did not rejoin the overlay")


def wait_for(cond, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("victim", ["b1", "b2"], ids=["middle broker", "subscriber's edge broker"])
def test_recovery_restores_coverage_without_duplicates(overlay, victim):
    port, run_dir, env, cwd = overlay.port, overlay.run_dir, overlay.env, overlay.dir
    sub_node = eventpy.connect(f"tcp://127.0.0.1:{port + 2}")
    pub_node = eventpy.connect(f"tcp://127.0.0.1:{port}")
    got: list[int] = []
    sub = sub_node.subscribe(Q, "firm == 'IBM' and price < limit", params={"limit": 50.0},
                             on_event=lambda e: got.append(e.n))
    pub_node.advertise(Q)
    eventpy.drain(10)

    def publish(batch):
        for firm, price, n in batch:
            pub_node.publish(Q, firm=firm, price=price, n=n)

    batch1 = [("IBM", 10.0 * k, k) for k in range(10)]
    publish(batch1)
    eventpy.drain(10)
    assert got == [n for _, p, n in batch1 if p < 50.0]

    restart(run_dir, victim, env, cwd)
    sub.update(limit=80.0)  # a change made around the fault must be in force after recovery
    if victim == "b2":
        assert wait_for(lambda: sub_node.stats()["resyncs"] >= 1), "the subscriber did not reconnect"
    assert wait_for(lambda: _drains()), "the overlay did not settle after the restart"

    before = len(got)
    batch2 = [("IBM", 10.0 * k + 1, 100 + k) for k in range(10)] + [("HP", 1.0, 999)]
    publish(batch2)
    eventpy.drain(10)
    assert got[before:] == [n for f, p, n in batch2 if f == "IBM" and p < 80.0]
    assert len(got) == len(set(got)), "an event was delivered twice"


def _drains() -> bool:
    try:
        eventpy.drain(2)
        return True
    except TimeoutError:
        return False


def test_an_overlay_whose_brokers_all_died_can_be_started_again(overlay):
    """`status` says they are not alive (a zombie is not alive either), and `up` in the same run
    directory removes their pid files instead of refusing."""
    for f in overlay.run_dir.glob("*.pid"):
        os.kill(int(f.read_text()), signal.SIGKILL)
    time.sleep(0.3)
    status = run_eventpy("overlay", "status", "--run-dir", str(overlay.run_dir), cwd=overlay.dir, env=overlay.env)
    rows = [ln for ln in status.stdout.splitlines() if ln.startswith("│ b")]
    assert len(rows) == 3 and all("│ no " in ln for ln in rows), status.stdout
    up = run_eventpy("overlay", "up", "--brokers", "3", "--port", str(overlay.port), "--run-dir",
                     str(overlay.run_dir), cwd=overlay.dir, env=overlay.env)
    assert up.returncode == 0, up.stderr
    assert "removed 3 pid file(s) of brokers no longer running" in up.stdout
    node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")  # the new overlay serves
    got = []
    node.subscribe(Q, "True", on_event=lambda ev: got.append(ev.n))
    pub = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}")
    pub.advertise(Q)
    eventpy.drain(10)
    pub.publish(Q, firm="IBM", price=1.0, n=7)
    eventpy.drain(10)
    assert got == [7]
