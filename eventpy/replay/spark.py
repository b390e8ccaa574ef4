"""The Spark session of a replay: local[*] unless a master URL is given, bound to 127.0.0.1 with
its web UI off, quiet logs (EVENTPY_SPARK_LOGS=1 for Spark's own). One session per process (tests
share it through a fixture)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from ._extra import INSTALL_HINT

_lock = threading.Lock()
_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def session(master: str | None = None, app: str = "eventpy-replay") -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # executors must run the same interpreter as the driver (the project's virtual environment)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # `eventpy replay` says so before it starts; this is for the Python API
        raise RuntimeError(f"the replay needs pyspark: {INSTALL_HINT}") from exc
    with _lock:
        builder = (SparkSession.builder.appName(app)
                   .master(master or "local[*]")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
                   .config("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
                   .config("spark.sql.shuffle.partitions", "8")
                   # local mode runs the executors inside the driver's JVM; 1g (Spark's default) is
                   # too little for the joins of a paper-scale grid
                   .config("spark.driver.memory", os.environ.get("EVENTPY_SPARK_MEMORY", "4g"))
                   .config("spark.python.worker.reuse", "true"))
        verbose = os.environ.get("EVENTPY_SPARK_LOGS") == "1"
        if not verbose:  # quiet from the JVM's start (log4j2.properties beside this file)
            builder = builder.config("spark.driver.extraJavaOptions",
                                     f"-Dlog4j2.configurationFile={_LOG_CONFIG.as_uri()}")
        spark = builder.getOrCreate()
        if not verbose:
            # a failed task reaches the driver as an exception, which `eventpy replay` reports in
            # one line (and writes whole to the run's error.log); Spark's own ERROR lines would
            # repeat it as Java stack traces
            spark.sparkContext.setLogLevel("FATAL")
        return spark


def run_job(spark: Any, what: str, action: Callable[[], Any], progress: Any = None) -> Any:
    """Run a Spark action, reporting its tasks on a rich progress bar (when given)."""
    if progress is None:
        return action()
    sc = spark.sparkContext
    task = progress.add_task(what, total=None)
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = action()
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    tracker = sc.statusTracker()
    stages: dict[int, tuple[int, int]] = {}  # every stage seen while the action ran
    while worker.is_alive():
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info:
                stages[sid] = (info.numCompletedTasks, info.numTasks)
        done = sum(d for d, _ in stages.values())
        total = sum(t for _, t in stages.values())
        progress.update(task, completed=done, total=total or None)
        worker.join(0.2)
    total = sum(t for _, t in stages.values()) or 1
    progress.update(task, completed=total, total=total)
    if "error" in result:
        raise result["error"]
    return result.get("value")
