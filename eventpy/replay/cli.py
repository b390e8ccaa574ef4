"""`eventpy replay CONFIG --out DIR [--master URL]`."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from . import _extra, outdir
from .config import ConfigError, load


def _python_error(text: str) -> str:
    """The last line of the last Python traceback inside a Spark error (the exception itself)."""
    tail = text.rsplit("Traceback (most recent call last):", 1)[-1] if "Traceback" in text else ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip() and not ln.startswith((" ", "\t"))]
    return lines[-1] if lines else ""


class SparkStartError(RuntimeError):
    """The Spark session did not start; the message is the one line for the user."""


def _missing_java() -> str | None:
    """Why pyspark's launcher finds no Java, or None: it runs $JAVA_HOME/bin/java when JAVA_HOME is
    set, else `java` from the PATH (spark-class), and without one says only that its gateway exited."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return None if Path(home, "bin", "java").exists() else f"JAVA_HOME is {home}, which has no bin/java"
    return None if shutil.which("java") else "there is no `java` on the PATH and JAVA_HOME is not set"


def _start_failure(exc: BaseException, master: str) -> str:
    text = str(exc)
    if "stopped SparkContext" in text:  # Spark gave up on the master (after ~60 s)
        return f"Spark did not start: is the master {master} reachable, and does it have workers?"
    no_java = _missing_java() if "JAVA_GATEWAY_EXITED" in text else None
    if no_java:
        return f"Spark did not start with master {master}: it needs Java (17, or 8 or 11): {no_java}"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return f"Spark did not start with master {master}: {first}"


def _failure_reason(exc: BaseException, master: str) -> str:
    """One line for a failed run: the Python error inside Spark's, or what a stopped context means."""
    if isinstance(exc, SparkStartError):
        return str(exc)
    text = str(exc)
    if "stopped SparkContext" in text:  # e.g. a master that never answered (Spark gives up after ~60 s)
        return f"Spark stopped before the job could run: is the master {master} reachable, and does it have workers?"
    return _python_error(text) or type(exc).__name__


MASTER_PREFIXES = ("spark://", "yarn", "mesos://", "k8s://")
# local, local[N], local[*], local[N,F], local-cluster[...]: not "localhost:7077", which Spark
# would refuse with a Java stack trace of its own
LOCAL_MASTER = re.compile(r"local(\[[^\]]*\]|-cluster\[[^\]]*\])?")


def _bad_master(master: str | None) -> str | None:
    """Why `--master` cannot be a Spark master URL, or None. Checked before Spark starts: for any
    other URL spark-submit prints a Java stack trace of its own before Python sees the error."""
    if master is None or master.startswith(MASTER_PREFIXES) or LOCAL_MASTER.fullmatch(master):
        return None
    return (f"--master {master!r} is not a Spark master URL; allowed: local[*], local[N], spark://HOST:PORT, "
            "yarn, mesos://HOST:PORT, k8s://HOST:PORT")


def replay(config_path: str, out: str, master: str | None = None, quiet: bool = False) -> int:
    from rich.console import Console

    console = Console(stderr=True, quiet=quiet)
    try:
        config = load(config_path)
    except ConfigError as exc:
        print(f"eventpy replay: {exc}", file=sys.stderr)
        return 2
    why = _bad_master(master)
    if why:
        print(f"eventpy replay: {why}", file=sys.stderr)
        return 2
    lacking = _extra.missing("pyspark", "matplotlib")  # the grid runs on Spark; the report draws plots
    if lacking:  # before anything is written: a wheel installed without [replay] is told how to add it
        print(f"eventpy replay: {_extra.missing_message(lacking)}", file=sys.stderr)
        return 2
    try:  # before Spark starts: a run that cannot write its results is not started
        outdir.check(out)
        Path(out).mkdir(parents=True, exist_ok=True)
        # a directory that exists but takes no files (read-only, /proc) passes mkdir; Spark found
        # out only after the traces were generated, and error.log could not be written either
        with tempfile.TemporaryFile(dir=out, prefix=".eventpy-write-check-"):
            pass
    except outdir.OutDirError as exc:
        print(f"eventpy replay: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        path = Path(out)
        why = ("it is a file, not a directory" if path.is_file() else "it is not a directory"
               if path.exists() and not path.is_dir() else exc.strerror or str(exc))
        print(f"eventpy replay: cannot write results to {out}: {why}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    console.print(f"[bold]{config.name}[/]: {len(config.traces())} traces, {len(config.points())} grid points")
    where = {"master": master or "local[*]"}  # the session's own URL once it has started
    try:
        rows, brokers = _run(config, Path(out), master, console, quiet, where)
    except KeyboardInterrupt:  # Ctrl-C: pyspark has cancelled the jobs; the JVM exits with us
        (Path(out) / "error.log").write_text("interrupted (SIGINT) before the run finished; "
                                             "the results in this directory are incomplete\n")
        print(f"eventpy replay: interrupted; {out} is incomplete", file=sys.stderr)
        return 130
    except Exception as exc:  # a Spark session that did not start or a failed Spark job: one line, the whole in a file
        log = Path(out) / "error.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(traceback.format_exception(exc)))  # with the causes (Spark's error)
        print(f"eventpy replay: the run failed: {_failure_reason(exc, where['master'])}\n"
              f"  (the whole error is in {log})", file=sys.stderr)
        return 1
    command = "eventpy replay " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if sys.argv[1:2] == ["replay"] \
        else f"eventpy replay {config_path} --out {out}"
    from .report import write_report
    report = write_report(config, rows, Path(out), command=command, master=where["master"],
                          wall=time.perf_counter() - started, brokers=brokers)
    console.print(_summary(rows))
    # the one line --quiet keeps: where the results are
    print(f"report: {report}  ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


def _run(config: Any, out: Path, master: str | None, console: Any, quiet: bool, where: dict) -> tuple[list, list]:
    """The Spark part of a replay, session start included (an unreachable master fails there)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .grid import busiest_brokers, run_grid
    from .spark import session

    try:
        spark = session(master)
    except Exception as exc:
        raise SparkStartError(_start_failure(exc, where["master"])) from exc
    where["master"] = spark.sparkContext.master
    columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False, disable=quiet) as progress:
        rows = run_grid(spark, config, out, progress)
        return rows, busiest_brokers(spark, out, rows)


def _summary(rows: list[dict[str, Any]]) -> Any:
    """The end-of-run table: one line per grid point, told apart by monitor and seed too; a figure
    the run has none of (a delay without samples) is —, as in report.md."""
    from rich import box
    from rich.table import Table

    from .report import fmt

    heads = ("rate", "subs", "mode", "matcher", "rum", "seed", "through-put", "delay ms", "spur-ious", "missed",
             "sub msgs")
    cells = [(fmt(r["update_rate"]), fmt(r["subscribers"]), r["mode"], r["matcher"], "on" if r.get("rum") else "off",
              str(r["seed"]), fmt(r["throughput"]), fmt(r["delay_ms"]), fmt(r["spurious"]), fmt(r["missed"]),
              fmt(r["sub_messages"])) for r in rows]
    # no vertical rules, and every column as wide as its widest cell (headers wrap instead): the
    # cells that tell the lines apart are never cut to "param…"
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False)
    for i, head in enumerate(heads):
        table.add_column(head.replace("-", "-\n"), justify="left" if head in ("mode", "matcher", "rum") else "right",
                         min_width=max([len(c[i]) for c in cells] + [3]))
    for c in cells:
        table.add_row(*c)
    return table
