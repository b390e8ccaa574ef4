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
    return _port_block(k, 17200, 18000)


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
