"""Workload generators: `generate(name, seed, settings)` builds a `Trace` deterministically."""

from __future__ import annotations

from typing import Any, Callable

from ..trace import Trace
from .at import at
from .htm import htm
from .micro import micro, overlay_micro

WORKLOADS: dict[str, Callable[[int, dict[str, Any]], Trace]] = {
    "micro": micro,
    "overlay-micro": overlay_micro,
    "htm": htm,
    "at": at,
}


def generate(name: str, seed: int, settings: dict[str, Any] | None = None) -> Trace:
    try:
        make = WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; one of {', '.join(WORKLOADS)}") from None
    trace = make(int(seed), dict(settings or {}))
    trace.check()
    return trace


__all__ = ["WORKLOADS", "generate"]
