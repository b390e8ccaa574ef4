"""Cost of compiling a guard with a large set literal (a watch list written into the source),
against Python's own parse of the same literal, in one run.

    PYTHONPATH=. .venv/bin/python tools/bench/set_literal.py [--json] [--repeats N]

For n constant string members: `compile_guard("firm in {...} and price < 10.0")` (what a
subscription or eventpyc pays for the guard) and `eventpyc`'s `compile_source` of a class whose
event method carries that guard, each against `ast.literal_eval` of the bare set literal (Python
reading the same text). The sides are alternated within each repeat; medians are printed.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile import alternated  # noqa: E402  (tools/bench/compile.py: the alternated timer)

from eventpy.compiler import compile_source  # noqa: E402
from eventpy.guards import compile_guard  # noqa: E402
from eventpy.runtime.model import EventType  # noqa: E402

Q = EventType("bench.Quote", firm=str, price=float)
SIZES = (1_000, 10_000, 100_000)


def program(guard: str) -> str:
    return ("class Watch:\n"
            f"    event def quote(self, firm: str, price: float) when {guard}:\n"
            "        pass\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line on stdout, nothing else")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each, alternated (default 3)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="members of each literal, comma-separated")
    args = ap.parse_args()
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        literal = "{" + ", ".join(repr(f"S{i}") for i in range(n)) + "}"
        guard = f"firm in {literal} and price < 10.0"
        base, guard_s, epy_s = alternated([(ast.literal_eval, literal),
                                           (lambda g: compile_guard(g, Q), guard),
                                           (lambda g: compile_source(program(g), "watch.epy"), guard)],
                                          args.repeats)
        plan = compile_guard(guard, Q)  # what was timed did its work: the last member matches
        values = [v.fn({}) for v in plan.vars]
        assert plan.holds((f"S{n - 1}", 1.0), values) and not plan.holds(("T", 1.0), values)
        rows.append({"members": n, "literal_eval_ms": round(base * 1e3, 1),
                     "compile_guard_ms": round(guard_s * 1e3, 1), "eventpyc_ms": round(epy_s * 1e3, 1),
                     "guard_ratio": round(guard_s / base, 1), "eventpyc_ratio": round(epy_s / base, 1)})
    for r in rows:
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{r['members']:>7,} members: literal_eval {r['literal_eval_ms']:8.1f} ms | compile_guard "
                  f"{r['compile_guard_ms']:8.1f} ms ({r['guard_ratio']}x) | eventpyc {r['eventpyc_ms']:8.1f} ms "
                  f"({r['eventpyc_ratio']}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
