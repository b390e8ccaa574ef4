"""Cost of eventpyc against a bare libcst parse and code generation of the same file, in one run.

    PYTHONPATH=. .venv/bin/python tools/bench/compile.py [--json] [--repeats N]

Inputs: the examples, and standard-library modules of several sizes with an event class appended
(so that every pass runs: lowering, Python's own syntax check, guard checks, the libcst rewrite).
Target (the language issue): eventpyc within 2x of `libcst.parse_module(text).code` on the same
file (for an .epy file, on its lowered text: libcst cannot read the extension constructs).
"""

from __future__ import annotations

import argparse
import gc
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


def alternated(sides: list, repeats: int) -> list[float]:
    """Median seconds of each (fn, text) side, the sides timed in turn within each repeat (a slow
    spell of the machine hits both), each with the collector off and a collection before it."""
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(repeats):
        for k, (fn, text) in enumerate(sides):
            gc.collect()
            gc.disable()
            try:
                t = time.perf_counter()
                fn(text)
                times[k].append(time.perf_counter() - t)
            finally:
                gc.enable()
    return [statistics.median(ts) for ts in times]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line on stdout, nothing else")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each, alternated (default 5)")
    args = ap.parse_args()
    rows = []
    for name, text in inputs():
        plain = lower(text).text  # libcst cannot read the .epy constructs; the same file lowered
        bare, ours = alternated([(lambda t: libcst.parse_module(t).code, plain),
                                 (lambda t: compile_source(t, name), text)], args.repeats)
        # what was timed did its work: libcst gives the text back, eventpyc's output is Python
        if libcst.parse_module(plain).code != plain:
            raise AssertionError(f"{name}: libcst did not give the text back")
        compile(compile_source(text, name), name, "exec", dont_inherit=True)
        rows.append({"file": name, "lines": text.count("\n"), "libcst_ms": round(bare * 1e3, 2),
                     "eventpyc_ms": round(ours * 1e3, 2), "ratio": round(ours / bare, 2), "_ratio": ours / bare})
    worst = max(r.pop("_ratio") for r in rows)  # the verdict on the unrounded ratio
    check = {"check": "eventpyc within 2x of a bare libcst parse + codegen", "target": "<= 2x",
             "measured": round(worst, 2), "result": "PASS" if worst <= 2.0 else "FAIL"}
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
