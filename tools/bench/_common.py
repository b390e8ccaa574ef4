"""Shared plumbing of the benchmark commands: arguments, timing, output (rich table or JSON lines).

Only results go to stdout. With --json that is one JSON object per line and nothing else; progress
notes go to stderr in both modes.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `python tools/bench/x.py` without PYTHONPATH=.; PYTHONPATH wins
    sys.path.append(str(ROOT))

SEED = 20240611
BUILD_LIMIT_S = 60.0

perf = time.perf_counter


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="smaller sizes and shorter measurements")
    p.add_argument("--json", action="store_true", help="one JSON object per line on stdout, nothing else")
    p.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED})")
    p.add_argument("--build-limit", type=float, default=BUILD_LIMIT_S, metavar="S",
                   help=f"give up building an index after S seconds (default {BUILD_LIMIT_S:g})")
    return p


def note(msg: str) -> None:
    """A progress line on stderr (never on stdout, which carries results only)."""
    print(msg, file=sys.stderr, flush=True)


def emit_json(obj: dict) -> None:
    print(json.dumps(obj, sort_keys=False), flush=True)


class no_gc:
    """Timed regions run with the cyclic collector off (as `timeit` does), after a collection."""

    def __enter__(self) -> None:
        gc.collect()
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: Any) -> None:
        if self._was:
            gc.enable()


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def spread(xs: Sequence[float]) -> float:
    """(max - min) / median of repeated measurements: how stable the median is."""
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / m if m else 0.0


def fmt_us(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_ratio(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "-"
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.1f}x"
    return f"{x:.2f}x"


def fmt_measured(x: float, unit: str = "x") -> str:
    """A check's figure: a ratio ("x", the default), percentage points ("pts") or a plain number ("")."""
    if unit == "x":
        return fmt_ratio(x)
    if math.isinf(x) or math.isnan(x):
        return str(x)
    if unit == "pts":
        return f"{x:+.1f} pts"
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}"


def machine() -> str:
    import os

    import numpy

    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {numpy.__version__}")


def source_state() -> str:
    """Which eventpy was measured: its commit, and whether eventpy/ had uncommitted changes."""
    import subprocess

    import eventpy

    pkg = Path(eventpy.__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(pkg), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(pkg), "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"eventpy from {pkg}"
    return f"eventpy @ {head}" + (" + uncommitted changes in eventpy/" if dirty else "")


# -- checks ------------------------------------------------------------------------------------------
def check(name: str, target: str, measured: float | None, ok: Callable[[float], bool],
          detail: str = "", missing: str = "") -> dict:
    """A target the project must reach, evaluated on figures measured in this run."""
    if measured is None:
        return {"check": name, "target": target, "measured": None, "status": "SKIP", "pass": None,
                "detail": missing or "not measured in this run"}
    passed = bool(ok(measured))
    return {"check": name, "target": target, "measured": round(measured, 3),
            "status": "PASS" if passed else "FAIL", "pass": passed, "detail": detail}


def print_table(title: str, columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[Any]],
                caption: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, caption=caption, caption_justify="left")
    for header, justify in columns:
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*[str(c) for c in row])
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # piped or captured: wide enough to keep rows on one line
    console.print(table)


def print_checks(checks: Sequence[dict]) -> None:
    rows = []
    for c in checks:
        colour = {"PASS": "green", "FAIL": "red", "SKIP": "yellow"}[c["status"]]
        measured = "-" if c["measured"] is None else fmt_measured(c["measured"], c.get("unit", "x"))
        rows.append((c["check"], c["target"], measured, f"[{colour}]{c['status']}[/{colour}]", c["detail"]))
    print_table("Targets (measured in this run)",
                [("check", "left"), ("target", "left"), ("measured", "right"), ("result", "center"),
                 ("detail", "left")], rows)
