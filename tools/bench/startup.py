"""What starting eventpy costs: wall time of fresh processes running `import eventpy` and the light
commands, for this checkout and optionally another one (`--against`), interleaved in one run.

    PYTHONPATH=. .venv/bin/python tools/bench/startup.py [--against /work/main] [--repeats 7] [--json]

Each command runs as its console script runs it (`from eventpy.__main__ import main`), with
PYTHONPATH set to the checkout measured. `overlay status (3 brokers)` reads an overlay this
checkout starts on free ports (`overlay up --port 0`) and stops at the end. The figure is the
median of the repeats; `spread` is half their max-min range. tests/test_startup.py guards what
the light paths import; this measures what that is worth.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EVENTPY = "import sys; from eventpy.__main__ import main; sys.exit(main())"
EVENTPYC = "import sys; from eventpy.compiler.cli import main; sys.exit(main())"


def commands(run_dir: Path, empty: Path) -> dict[str, list[str]]:
    return {
        "python -c pass": ["-c", "pass"],
        "import eventpy": ["-c", "import eventpy"],
        "eventpy --version": ["-c", EVENTPY, "--version"],
        "eventpy --help": ["-c", EVENTPY, "--help"],
        "eventpy overlay status (none)": ["-c", EVENTPY, "overlay", "status", "--run-dir", str(empty)],
        "eventpy overlay status (3 brokers)": ["-c", EVENTPY, "overlay", "status", "--run-dir", str(run_dir)],
        "eventpy overlay down (none)": ["-c", EVENTPY, "overlay", "down", "--run-dir", str(empty)],
        "eventpyc --version": ["-c", EVENTPYC, "--version"],
        "import eventpy.testing.pytest_plugin": ["-c", "import eventpy.testing.pytest_plugin"],
        "import pytest (its own cost)": ["-c", "import pytest"],
    }


def timed(args: list[str], checkout: Path, cwd: str) -> float:
    # cwd: a directory of neither checkout (`python -c` puts the current directory first on sys.path)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout to measure beside this one (e.g. /work/main)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="one JSON object per line on stdout")
    args = parser.parse_args()
    checkouts = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    with tempfile.TemporaryDirectory() as tmp:
        run_dir, empty = Path(tmp, "run"), Path(tmp, "none")
        up = subprocess.run([sys.executable, "-c", EVENTPY, "overlay", "up", "--port", "0", "--run-dir", str(run_dir)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp, capture_output=True, text=True,
                            timeout=120)
        if up.returncode != 0:
            print(up.stderr, file=sys.stderr)
            return 1
        try:
            cmds = commands(run_dir, empty)
            times: dict[tuple[str, str], list[float]] = {(c, k): [] for c in cmds for k in checkouts}
            for _ in range(args.repeats):  # interleaved: a slow stretch of the machine hits every figure alike
                for name, argv in cmds.items():
                    for key, checkout in checkouts.items():
                        times[name, key].append(timed(argv, checkout, tmp))
        finally:
            subprocess.run([sys.executable, "-c", EVENTPY, "overlay", "down", "--run-dir", str(run_dir)],
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp, capture_output=True, timeout=120)
    for name in cmds:
        row: dict = {"command": name}
        for key in checkouts:
            ts = times[name, key]
            row[f"{key}_ms"] = round(statistics.median(ts) * 1e3, 1)
            row[f"{key}_spread_ms"] = round((max(ts) - min(ts)) / 2 * 1e3, 1)
        if "against" in checkouts:
            row["ratio"] = round(row["this_ms"] / row["against_ms"], 2)
        if args.json:
            print(json.dumps(row))
        else:
            figures = "  ".join(f"{key} {row[f'{key}_ms']:7.1f} ms ±{row[f'{key}_spread_ms']:.1f}" for key in checkouts)
            print(f"{name:40} {figures}" + (f"  ratio {row['ratio']:.2f}" if "ratio" in row else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
