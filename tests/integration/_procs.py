"""Helpers for tests that run real processes: the repository root (for PYTHONPATH), a block of free
TCP ports for an overlay, and `python -m eventpy ...` as a subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port_block(k: int) -> int:
    for base in range(17200, 18000, 10):
        ok = True
        for p in range(base, base + k):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free ports")


def eventpy(*args: str, cwd: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eventpy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
