"""Cost of eventpyc against a bare libcst parse and code generation of the same file, in one run.

    PYTHONPATH=. .venv/bin/python tools/bench/compile.py [--json] [--repeats N]

Inputs: the examples, and standard-library modules of several sizes with an event class appended
(so that every pass runs: lowering, Python's own syntax check, guard checks, the libcst rewrite).
Target (the language issue): eventpyc within 2x of `libcst.parse_module(text).code` on the same
file (for an .epy file, on its lowered text: libcst cannot read the extension constructs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import libcst  # noqa: E402

from corpus_check import EVENT_CLASS  # noqa: E402
from eventpy.compiler import compile_source  # noqa: E402
from eventpy.compiler._lower import lower  # noqa: E402

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ["textwrap.py", "argparse.py", "typing.py", "inspect.py"]


def inputs() -> list[tuple[str, str]]:
    out = [(p.name, p.read_text()) for p in sorted((ROOT / "examples").glob("*.epy"))]
    for name in MODULES:
        text = (STDLIB / name).read_text()
        out.append((f"{name}+event class", text.rstrip("\n") + "\n" + EVENT_CLASS))
    return out


def timed(fn, text: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for name, text in inputs():
        plain = lower(text).text  # libcst cannot read the .epy constructs; the same file lowered
        bare = timed(lambda t: libcst.parse_module(t).code, plain, args.repeats)
        ours = timed(lambda t: compile_source(t, name), text, args.repeats)
        rows.append({"file": name, "lines": text.count("\n"), "libcst_ms": round(bare * 1e3, 2),
                     "eventpyc_ms": round(ours * 1e3, 2), "ratio": round(ours / bare, 2)})
    worst = max(r["ratio"] for r in rows)
    check = {"check": "eventpyc within 2x of a bare libcst parse + codegen", "target": "<= 2x",
             "measured": worst, "result": "PASS" if worst <= 2.0 else "FAIL"}
    if args.json:
        for r in rows + [check]:
            print(json.dumps(r))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="eventpyc vs libcst parse + codegen (median of %d)" % args.repeats)
    for col in ("file", "lines", "libcst ms", "eventpyc ms", "ratio"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["file"], str(r["lines"]), f"{r['libcst_ms']:.2f}", f"{r['eventpyc_ms']:.2f}", f"{r['ratio']:.2f}x")
    console = Console(width=100)
    console.print(table)
    console.print(f"{check['check']}: worst {worst:.2f}x -> {check['result']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
