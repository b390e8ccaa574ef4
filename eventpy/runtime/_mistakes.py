"""Warnings for mistakes that would otherwise show as nothing at all: a subscription that can
never receive an event says so once, when it is made. A correct program logs none of them."""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger("eventpy.subscribe")

_MAX_WARNED = 1024  # guard texts remembered; past it a program that makes guards on the fly stops hearing
_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


def warn_never_holds(etype: Any, plan: Any) -> None:
    """Log once per event type and guard text that the guard's static bounds contradict each
    other in every alternative (`n > 5 and n < 3`): whatever its parameters become, the
    subscription receives nothing (the brokers are not even told of it)."""
    if not plan.never_holds:
        return
    key = (etype.name, plan.source)
    with _lock:
        if key in _warned or len(_warned) >= _MAX_WARNED:
            return
        _warned.add(key)
    log.warning("the guard %r of %s can never hold (%s admits no value), so this subscription "
                "receives nothing", plan.source, etype.name, "; ".join(plan.contradictions))


_KNOWN_VARIABLES = ("EVENTPY_BROKER", "EVENTPY_RUM", "EVENTPY_SECRET", "EVENTPY_SPARK_LOGS", "EVENTPY_SPARK_MEMORY")
_said_embedded = False


def warn_misspelt_broker_variable(environ: Any) -> None:
    """Once per process, when connect() takes the embedded overlay although the environment
    holds a variable that looks like EVENTPY_BROKER (EVENTPY_BROKERS, eventpy_broker): the
    program then runs on an overlay of its own, and its events reach no other process."""
    global _said_embedded
    if _said_embedded:
        return
    import difflib

    for name in environ:
        if name in _KNOWN_VARIABLES or not name.upper().startswith(("EVENTPY", "EVENT_PY")):
            continue
        if difflib.get_close_matches(name.upper(), ["EVENTPY_BROKER"], n=1, cutoff=0.8):
            _said_embedded = True
            log.warning("%s is set, but EventPy reads EVENTPY_BROKER: this process runs on an embedded "
                        "overlay of its own, which no other process reaches", name)
            return
