"""`overlay status` after a broker was killed (SIGKILL, as by the OOM killer): the row said
`alive: no` but kept the dead broker's last links ("b0 (broker), b2 (broker)") and its last rate
("msgs/s now 206.7"), as if it still served, and nothing said what to do."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ._procs import eventpy as run_eventpy


def _gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_status_shows_a_killed_broker_without_its_old_links_and_says_how_to_restart_it(overlay):
    pid = int((overlay.run_dir / "b1.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    status = run_eventpy("overlay", "status", "--run-dir", str(overlay.run_dir), cwd=overlay.dir, env=overlay.env)
    assert status.returncode == 3, status.stderr  # a health check can tell (it was 0)
    rows = {ln.split("│")[1].strip(): [c.strip() for c in ln.split("│")[2:-1]]
            for ln in status.stdout.splitlines() if ln.startswith("│ b")}
    # columns after the name: address, pid, alive, links, subscriptions, received, sent, now, avg
    assert rows["b1"][2] == "no" and rows["b1"][3] == "—" and rows["b1"][7] == "—", status.stdout
    assert rows["b0"][2] == "yes" and rows["b2"][2] == "yes", status.stdout
    assert (f"broker b1 is not running (pid {pid} is gone" in status.stdout
            and f"eventpy broker --config {overlay.run_dir / 'overlay.toml'} --id b1" in status.stdout), status.stdout


def test_status_tells_a_broker_that_stopped_serving_from_one_that_runs(overlay):
    """A broker stopped with SIGSTOP (or stuck) showed 'alive: yes' with its links and its last
    rate, exactly as a broker that serves; its clients' drains timed out naming it. Its status
    file, written every second while it serves, says how long it has been silent."""
    pid = int((overlay.run_dir / "b1.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 60
        while True:  # until its status file is older than the 5 s status allows
            status = run_eventpy("overlay", "status", "--run-dir", str(overlay.run_dir), cwd=overlay.dir,
                                 env=overlay.env)
            if "hung?" in status.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        os.kill(pid, signal.SIGCONT)
    rows = {ln.split("│")[1].strip(): [c.strip() for c in ln.split("│")[2:-1]]
            for ln in status.stdout.splitlines() if ln.startswith("│ b")}
    assert rows["b1"][2].startswith("hung? (") and rows["b0"][2] == "yes", status.stdout
    assert status.returncode == 3
    assert f"broker b1 (pid {pid}) runs but has not written its status for" in status.stdout, status.stdout
