"""The benchmarks under tools/bench/ keep running (a benchmark that cannot run is a defect): their
quick modes, checked for output, never for speed. tools/bench/overlay.py has its own test with
real processes (tests/integration/test_bench_overlay.py); matching.py's quick mode takes over a
minute and is left to its own runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_bench(*args: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("args, check", [
    (("tools/bench/updates.py", "--quick", "--json", "--matchers", "fastint"), "fastint: resub/parametric at n=10000"),
    (("tools/bench/compile.py", "--json", "--repeats", "1"), "eventpyc within 2x of a bare libcst parse + codegen"),
])
def test_a_benchmark_runs_and_states_its_target(args, check):
    rows = run_bench(*args)
    assert any(r.get("check") == check for r in rows), rows[-3:]
    assert len(rows) > 2  # measurements, not only the verdict
