"""`eventpy replay CONFIG --out DIR [--master URL]`."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from .config import ConfigError, load


def _python_error(text: str) -> str:
    """The last line of the last Python traceback inside a Spark error (the exception itself)."""
    tail = text.rsplit("Traceback (most recent call last):", 1)[-1] if "Traceback" in text else ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip() and not ln.startswith((" ", "\t"))]
    return lines[-1] if lines else ""


def _failure_reason(exc: BaseException, master: str) -> str:
    """One line for a failed run: the Python error inside Spark's, or what a stopped context means."""
    text = str(exc)
    if "stopped SparkContext" in text:  # e.g. a master that never answered (Spark gives up after ~60 s)
        return f"Spark stopped before the job could run: is the master {master} reachable, and does it have workers?"
    return _python_error(text) or type(exc).__name__


def replay(config_path: str, out: str, master: str | None = None, quiet: bool = False) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    console = Console(stderr=True, quiet=quiet)
    try:
        config = load(config_path)
    except ConfigError as exc:
        print(f"eventpy replay: {exc}", file=sys.stderr)
        return 2
    try:  # before Spark starts: a run that cannot write its results is not started
        Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "it is a file, not a directory" if Path(out).is_file() else exc.strerror or str(exc)
        print(f"eventpy replay: cannot write results to {out}: {why}", file=sys.stderr)
        return 2
    from .grid import busiest_brokers, run_grid
    from .report import write_report
    from .spark import session

    started = time.perf_counter()
    console.print(f"[bold]{config.name}[/]: {len(config.traces())} traces, {len(config.points())} grid points")
    spark = session(master)
    master_url = spark.sparkContext.master
    columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=False, disable=quiet) as progress:
            rows = run_grid(spark, config, Path(out), progress)
            brokers = busiest_brokers(spark, Path(out), rows)
    except Exception as exc:  # a failed Spark job: the Python error in one line, the whole in a file
        log = Path(out) / "error.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"{type(exc).__name__}: {exc}\n")
        print(f"eventpy replay: the run failed: {_failure_reason(exc, master_url)}\n"
              f"  (the whole error is in {log})", file=sys.stderr)
        return 1
    command = "eventpy replay " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if sys.argv[1:2] == ["replay"] \
        else f"eventpy replay {config_path} --out {out}"
    report = write_report(config, rows, Path(out), command=command, master=master_url,
                          wall=time.perf_counter() - started, brokers=brokers)
    table = Table("rate", "subs", "mode", "matcher", "throughput", "delay ms", "spurious", "missed", "sub msgs")
    for r in rows:
        table.add_row(f"{r['update_rate']:g}", str(r["subscribers"]), r["mode"], r["matcher"],
                      f"{r['throughput']:.3g}", f"{r['delay_ms']:.3g}", str(r["spurious"]), str(r["missed"]),
                      str(r["sub_messages"]))
    console.print(table)
    console.print(f"report: {report}  ({time.perf_counter() - started:.0f} s)")
    return 0
