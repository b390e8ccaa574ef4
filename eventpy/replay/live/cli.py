"""`eventpy replay CONFIG --out DIR --live`: the `[live]` table of a replay configuration, every
engine on the same scaled trace(s), written as `live.parquet` (with the replay's Spark session) and
`live.md`. An engine that cannot run here (a missing server) or fails is reported and skipped."""

from __future__ import annotations

import shlex
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from .. import _extra
from ..cli import _bad_master
from ..config import ConfigError, no_such_file, parse
from . import make_engine, unavailable
from .config import parse_live

LIVE_COLUMNS = (
    "engine string, workload string, seed long, update_rate double, subscribers long, subscriptions long, "
    "speed double, published long, updates long, arrivals long, delivered long, useful long, wanted long, "
    "missed long, false_positives long, duplicates long, spurious long, throughput double, "
    "latency_p50_ms double, latency_p99_ms double, delay_ms double, delay_samples long, "
    "bytes_to_subscribers long, bytes_from_subscribers long, sub_messages long, span_s double, "
    "publish_s double, lag_ms double, setup_s double, wall_s double"
)


def replay_live(config_path: str, out: str, master: str | None = None, quiet: bool = False) -> int:
    from rich.console import Console

    from ..workloads import generate
    from .driver import run_live
    from .report import write_live_report

    console = Console(stderr=True, quiet=quiet, width=max(130, Console(stderr=True).width))
    path = Path(config_path)
    try:
        raw = tomllib.loads(path.read_text())
        grid = parse(raw, name=path.stem, where=str(path))
        live = parse_live(raw, grid, where=str(path))
    except FileNotFoundError:
        print(f"eventpy replay: {no_such_file(path)}", file=sys.stderr)
        return 2
    except (ConfigError, tomllib.TOMLDecodeError) as exc:
        print(f"eventpy replay: {exc}", file=sys.stderr)
        return 2
    why = _bad_master(master)  # before the engines run, not minutes later when Spark writes live.parquet
    if why:
        print(f"eventpy replay: {why}", file=sys.stderr)
        return 2
    lacking = _extra.missing("pyspark")  # likewise: live.parquet is written with Spark
    if lacking:
        print(f"eventpy replay: {_extra.missing_message(lacking)}", file=sys.stderr)
        return 2
    out_dir = Path(out)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "it is a file, not a directory" if out_dir.is_file() else exc.strerror or str(exc)
        print(f"eventpy replay: cannot write results to {out}: {why}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    failures: list[str] = []
    brokers = 0
    for rate in live.update_rates:
        trace = generate(grid.workload, live.seed, live.generator_settings(rate))
        brokers = len(trace.topology.brokers)
        for name in live.engines:
            why = unavailable(name)
            if why:
                failures.append(f"{name}: {why}")
                console.print(f"[yellow]{name}[/]: skipped, {why}")
                continue
            console.print(f"{name} at {rate:g} updates/s ...", end=" ")
            try:
                result = run_live(trace, make_engine(name), speed=live.speed, max_events=live.max_events,
                                  max_subscriptions=live.max_subscriptions, quiet=live.quiet, timeout=live.timeout)
            except Exception as exc:  # one engine's failure must not lose the others' results
                failures.append(f"{name} at {rate:g}/s: {type(exc).__name__}: {exc}")
                console.print(f"[red]failed[/]: {exc}")
                continue
            m = {**result.metrics, "update_rate": rate}
            rows.append(m)
            console.print(f"{m['wall_s']:.1f} s, {m['delivered']} delivered, lag {m['lag_ms']:.0f} ms")
    if rows:
        _write_parquet(rows, out_dir / "live.parquet", master)
    command = ("eventpy replay " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if sys.argv[1:2] == ["replay"]
               else f"eventpy replay {config_path} --out {out} --live")
    report = write_live_report(rows, out_dir, command=command, name=grid.name, brokers=brokers,
                               wall=time.perf_counter() - started, failures=failures)
    console.print(summary_table(rows))
    console.print(f"report: {report}  ({time.perf_counter() - started:.0f} s)")
    return 0 if rows and not failures else 1


SUMMARY = (("rate", "update_rate"), ("engine", "engine"), ("delay ms", "delay_ms"),
           ("bytes to subs", "bytes_to_subscribers"), ("throughput", "throughput"), ("p50 ms", "latency_p50_ms"),
           ("p99 ms", "latency_p99_ms"), ("missed", "missed"), ("spurious", "spurious"),
           ("sub msgs", "sub_messages"), ("lag ms", "lag_ms"))


def summary_table(rows: list[dict[str, Any]]) -> Any:
    """The end-of-run table, its cells written as live.md writes them (a delay without samples,
    at update rate 0, is — there, not nan)."""
    from rich.table import Table

    from ..report import fmt

    table = Table(*(head for head, _ in SUMMARY))
    for r in rows:
        table.add_row(*(fmt(r[key]) for _, key in SUMMARY))
    return table


def _write_parquet(rows: list[dict[str, Any]], path: Path, master: str | None) -> None:
    from ..spark import session

    columns = [c.split() for c in LIVE_COLUMNS.split(", ")]
    cast = {"double": float, "long": int, "string": str}
    spark = session(master)
    df = spark.createDataFrame([tuple(cast[t](r[n]) for n, t in columns) for r in rows], LIVE_COLUMNS)
    df.coalesce(1).write.mode("overwrite").parquet(str(path))
