"""tools/bench/overlay.py keeps working (a benchmark that cannot run is a defect): a tiny run
with real broker processes and the relay; it checks the output, never the speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_overlay_benchmark_runs_and_reports_every_key():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVENTPY_SECRET", None)
    done = subprocess.run([sys.executable, str(ROOT / "tools/bench/overlay.py"), "--json", "--events", "2000",
                           "--repeats", "1"], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    row, check = (json.loads(line) for line in done.stdout.splitlines()[:2])
    assert row["events"] == row["delivered"] == 2000
    assert row["events_per_s"] > 0 and row["relay_events_per_s"] > 0
    assert set(row["cpu_us_per_event"]) == {"b0", "b1", "b2", "publisher", "subscriber"}
    assert row["repeats"] == 1 and len(row["overlay_runs"]) == len(row["relay_runs"]) == 1
    assert check["result"] in ("PASS", "FAIL") and check["measured"] == row["ratio"]
