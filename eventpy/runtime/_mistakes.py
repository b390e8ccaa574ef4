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
