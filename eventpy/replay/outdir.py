"""The `--out` directory of a replay: what a run writes there, and clearing it for the next run.

A run replaces its own outputs only. Spark cannot write a Parquet directory that exists, so
`deliveries/`, `truth/`, `traces/<table>/`, `metrics.parquet` and `brokers.parquet` must go before a
run; a file in them that Spark did not write (a user's notes, say) is refused in one line, before
Spark starts, rather than deleted. Anything else in the directory (beside the outputs, or in
`traces/` beside the tables) is left alone."""

from __future__ import annotations

import shutil
from pathlib import Path

from .trace import TABLE_SCHEMAS

SPARK_DIRS = ("deliveries", "truth", "metrics.parquet", "brokers.parquet",
              *(f"traces/{t}" for t in TABLE_SCHEMAS))
FILES = ("calibration.json", "report.md", "error.log")  # error.log: of an earlier failed run


class OutDirError(ValueError):
    pass


def _spark_file(path: Path) -> bool:
    """A file (or Spark's scratch directory) of a Parquet directory written by Spark."""
    name = path.name
    if name == "_temporary":  # left by a job that failed or was interrupted
        return path.is_dir()
    return path.is_file() and (name.startswith(("part-", ".part-")) or name in ("_SUCCESS", "._SUCCESS.crc"))


def foreign(out: Path) -> Path | None:
    """The first path under the outputs of `out` that a replay did not write, or None."""
    for sub in SPARK_DIRS:
        d = out / sub
        if d.is_dir():
            stray = next((p for p in sorted(d.iterdir()) if not _spark_file(p)), None)
            if stray is not None:
                return stray
        elif d.exists():
            return d
    traces = out / "traces"  # other entries of traces/ are not in Spark's way: left alone
    return traces if traces.exists() and not traces.is_dir() else None


def check(out: str) -> None:
    """Before Spark starts: can a run write to `out` without removing anything it did not write?"""
    if not out.strip():
        raise OutDirError("--out is empty; give a directory for the results")
    stray = foreign(Path(out))
    if stray is not None:
        raise OutDirError(f"cannot write results to {out}: {stray} was not written by eventpy replay, and a "
                          "run replaces that directory; move it, or give another --out")


def clear(out: Path) -> None:
    """Remove the outputs of an earlier run (only those) from `out`."""
    check(str(out))
    for sub in SPARK_DIRS:
        shutil.rmtree(out / sub, ignore_errors=True)
    for name in FILES:
        (out / name).unlink(missing_ok=True)
