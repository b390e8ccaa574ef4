"""Workload generators: `generate(name, seed, settings)` builds a `Trace` deterministically."""

from __future__ import annotations

from typing import Any, Callable

from ..trace import Trace
from . import at as _at, htm as _htm, micro as _micro
from ._common import check
from .at import at
from .htm import htm
from .micro import micro, overlay_micro

WORKLOADS: dict[str, Callable[[int, dict[str, Any]], Trace]] = {
    "micro": micro,
    "overlay-micro": overlay_micro,
    "htm": htm,
    "at": at,
}
# the settings each generator takes, with their types and ranges
SETTINGS: dict[str, dict[str, tuple]] = {"micro": _micro.SETTINGS, "overlay-micro": _micro.SETTINGS,
                                         "htm": _htm.SETTINGS, "at": _at.SETTINGS}
# checks across settings, run after each setting is checked on its own
RELATIONS: dict[str, Callable[[dict[str, Any]], None]] = {"at": _at.check_relations}


def check_settings(name: str, settings: dict[str, Any]) -> None:
    """ValueError naming a setting the workload does not take, or a value it cannot use."""
    check(name, SETTINGS[name], settings)
    if name in RELATIONS:
        RELATIONS[name](settings)


def generate(name: str, seed: int, settings: dict[str, Any] | None = None) -> Trace:
    """The trace of workload `name` for `seed`; `settings` are the generator's (its docstring,
    SETTINGS), checked as a replay file's [workload] table is: a misspelled one (`update_rte`)
    or a value out of range is a ValueError, not a trace made with the default."""
    try:
        make = WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; one of {', '.join(WORKLOADS)}") from None
    settings = dict(settings or {})
    check_settings(name, settings)
    trace = make(int(seed), settings)
    trace.check()
    return trace


__all__ = ["SETTINGS", "WORKLOADS", "check_settings", "generate"]
