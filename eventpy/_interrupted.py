"""Ctrl-C while an `eventpy` or `eventpyc` command starts (its imports: the runtime, numpy,
lark, pyspark take up to seconds) or works: one line and exit status 130, as a shell reports a
command that SIGINT stopped. The KeyboardInterrupt used to reach the top and print a traceback
of the import machinery, which reads like a crash of eventpy.

A command that has something to say about an interruption (`overlay up` stops the brokers it
started, `replay` marks its results incomplete, `run` shows the program's own traceback) catches
it first. A Ctrl-C before `main()` runs (Python's start, `import eventpy`: a few milliseconds,
kept light by tests/test_startup.py) is Python's own to report."""

from __future__ import annotations

import sys

INTERRUPTED = 130  # 128 + SIGINT


def interrupted(prog: str) -> int:
    """Say that `prog` was interrupted, in one line on stderr; the exit status to return."""
    try:
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
    except (OSError, KeyboardInterrupt):  # stderr closed, or a second Ctrl-C: the status says it
        pass
    return INTERRUPTED
