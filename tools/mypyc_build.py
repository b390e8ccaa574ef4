"""Build a copy of the package with the broker's UPD path compiled by mypyc, for measurements.

    .venv/bin/pip install mypy setuptools
    .venv/bin/python tools/mypyc_build.py /tmp/eventpy-mypyc          # ~2 min on 2 cores
    PYTHONPATH=/tmp/eventpy-mypyc .venv/bin/python tools/bench/updates.py --matchers fastint --json

The sources stay the one truth: the modules below are compiled from the same .py files that
run interpreted. The build goes to a copy of `eventpy/` in OUT, never next to the sources: a
compiled module there would shadow its .py, and an edit to the .py would silently not run.
Not part of the install (BENCHMARKS.md, "Compiling the UPD path with mypyc", says why).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The UPD path (profiled: these leave ~5 interpreted calls per UPD, Upstream._propagate and
# the Broker's other mixins among them). Each passes `mypy` as it stands.
MODULES = [
    "eventpy/runtime/broker/_broker.py",
    "eventpy/runtime/broker/_state.py",
    "eventpy/runtime/broker/_summary.py",
    "eventpy/runtime/broker/_summaries_other.py",
    "eventpy/runtime/broker/_link_lub.py",
    "eventpy/runtime/matching/_fastint.py",
    "eventpy/runtime/matching/_fastint_ordered.py",
    "eventpy/runtime/matching/_fastint_enum.py",
    "eventpy/runtime/model/_constraints.py",
]

_SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify
# (the modules they import are read for their types, but their own mypy errors are not ours here)
setup(name="eventpy-mypyc", packages=[],
      ext_modules=mypycify(["--follow-imports=silent", *sys.argv.pop(1).split(",")], opt_level="3"))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="directory for the copy (replaced)")
    args = ap.parse_args()
    out: Path = args.out.resolve()
    if out == ROOT or out == ROOT / "eventpy":
        ap.error("OUT must not be the source tree")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(ROOT / "eventpy", out / "eventpy", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (out / "setup.py").write_text(_SETUP)
    done = subprocess.run([sys.executable, "setup.py", ",".join(MODULES), "build_ext", "--inplace"], cwd=out,
                          stdout=subprocess.DEVNULL)
    if done.returncode:
        print("mypyc build failed (run it again without stdout redirected to see why)", file=sys.stderr)
        return done.returncode
    print(f"compiled {len(MODULES)} modules into {out}; use PYTHONPATH={out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
