"""The real 3-broker overlay shared by the integration tests."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NamedTuple

import pytest

import eventpy

from ._procs import ROOT, eventpy as run_eventpy, free_port_block


class Overlay(NamedTuple):
    port: int  # b0 listens on port, b1 on port + 1, b2 on port + 2
    run_dir: Path  # overlay.toml, <broker>.pid, <broker>.log, <broker>.status.json
    env: dict  # PYTHONPATH = the test's directory, then the repository
    dir: Path  # the test's tmp_path, the working directory of the processes


def _pids(run_dir: Path) -> set[int]:
    pids = set()
    for f in run_dir.glob("*.pid"):
        try:
            pids.add(int(f.read_text()))
        except (OSError, ValueError):
            pass
    return pids


def _logs(run_dir: Path) -> str:
    return "".join(f.read_text(errors="replace") for f in run_dir.glob("*.log"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has stopped
    except OSError:
        return False


@pytest.fixture
def overlay(tmp_path):
    """`eventpy overlay up`: 3 brokers in a line on a free block of ports; no embedded overlay or
    node left over from another test. At teardown `eventpy overlay down` must leave no broker
    process behind (including one a test restarted)."""
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    run_dir = tmp_path / "run"
    for attempt in range(3):
        # a block found free can be taken before the brokers bind it (the other xdist worker's
        # overlay picked the same block at the same moment, once in a CI run): another block
        port = free_port_block(3)
        up = run_eventpy("overlay", "up", "--brokers", "3", "--topology", "line", "--port", str(port),
                         "--run-dir", str(run_dir), cwd=tmp_path, env=env)
        if up.returncode == 0 or "already in use" not in up.stderr + _logs(run_dir):
            break
    pids = _pids(run_dir)
    try:
        assert up.returncode == 0, up.stderr
        eventpy.shutdown()
        yield Overlay(port, run_dir, env, tmp_path)
    finally:
        try:
            eventpy.shutdown()
        finally:
            pids |= _pids(run_dir)  # a broker restarted by the test has a new pid
            down = run_eventpy("overlay", "down", "--run-dir", str(run_dir), cwd=tmp_path, env=env)
    assert down.returncode == 0, down.stderr
    time.sleep(0.2)
    for pid in pids:
        assert not _alive(pid), f"broker {pid} still running after down"
