"""Helpers for tests that run real processes: the repository root (for PYTHONPATH), a block of free
TCP ports for an overlay, and `python -m eventpy ...` as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from eventpy.runtime._ports import free_port_block as _port_block

ROOT = Path(__file__).resolve().parents[2]


def free_port_block(k: int) -> int:
    """The first port of `k` free ones, in the tests' range (the benchmarks and tools scan
    others), from a random block: test runs of several checkouts on one machine all began at
    17200, and one took the ports another had just found free ("port 17220 is already in use")."""
    first, last = _worker_share(17200, 18000)
    return _port_block(k, first, last)


def _worker_share(first: int, last: int) -> tuple[int, int]:
    """Under pytest-xdist (make test runs two workers), each worker scans its own share of the
    range: two workers that found the same block free at the same moment both started brokers
    on it ("address already in use", a test errored at setup in a CI run)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not (worker.startswith("gw") and worker[2:].isdigit()) or count < 2:
        return first, last
    share = (last - first) // count // 10 * 10
    start = first + int(worker[2:]) % count * share
    return start, start + share


def eventpy(*args: str, cwd: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eventpy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def env_with_root() -> dict:
    """The environment for an `eventpy` subprocess that imports this checkout."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def alive(pid: int) -> bool:
    """The process runs (a zombie, killed and not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
