"""A replay configuration (TOML) and its grid.

    [replay]
    workload = "htm"                  # micro | overlay-micro | htm | at
    seeds = [1]
    modes = ["parametric", "resub"]
    matchers = ["fastint"]
    update_rates = [0, 25, 50, 100]   # the update-rate sweep, at the largest subscriber count
    subscribers = [400, 800]          # the subscriber sweep, at `subscribers_rate`
    subscribers_rate = 50             # default: the highest update rate
    monitors = [false, true]          # the runtime update monitor (000 §6) off and on; default off
    service = "measured"              # broker service time: "measured" CPU time, "calibrated" (a
                                      # cost model fitted to one measured run per mode and matcher:
                                      # reproducible within the run), or "model" (fixed costs)
    service_scale = 1                 # multiplies service times: emulate slower brokers (say so!)
    link_delay_ms = 10                # per link, as in 000 §8.6

    [workload]                        # passed to the generator (see eventpy.replay.workloads)
    duration = 2.0

[monitor] sets the monitor's knobs (window, freq_approx, min_history) when it is on.

A grid point is one (seed, update rate, subscribers, mode, matcher, monitor); points that share seed, rate
and subscribers replay the same trace.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runtime.matching import MATCHERS
from .workloads import SETTINGS, WORKLOADS, check_settings

MODES = ("parametric", "resub")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class TraceSpec:
    workload: str
    seed: int
    update_rate: float
    subscribers: int
    settings: tuple  # sorted (name, value) pairs of the [workload] table

    @property
    def trace_id(self) -> str:
        return f"{self.workload}-s{self.seed}-r{self.update_rate:g}-n{self.subscribers}"

    def generator_settings(self) -> dict[str, Any]:
        return {**dict(self.settings), "update_rate": self.update_rate, "subscribers": self.subscribers}


def mode_label(row: dict[str, Any]) -> str:
    """How a metrics row's mode is shown: "parametric+rum" is parametric with the update monitor."""
    return row["mode"] + ("+rum" if row.get("rum") else "")


@dataclass(frozen=True)
class Point:
    trace: TraceSpec
    mode: str
    matcher: str
    service: str
    link_delay: float
    rum: tuple | None = None  # with the update monitor: its knobs as sorted pairs (maybe none); None: without
    service_scale: float = 1.0

    @property
    def point_id(self) -> str:
        return f"{self.trace.trace_id}-{self.mode}-{self.matcher}" + ("-rum" if self.rum is not None else "")



@dataclass
class Config:
    name: str
    workload: str
    seeds: list[int]
    modes: list[str]
    matchers: list[str]
    update_rates: list[float]
    subscribers: list[int]
    subscribers_rate: float
    service: str
    link_delay: float
    settings: dict[str, Any] = field(default_factory=dict)
    monitors: list[bool] = field(default_factory=lambda: [False])
    service_scale: float = 1.0
    monitor: dict[str, Any] = field(default_factory=dict)

    def traces(self) -> list[TraceSpec]:
        settings = tuple(sorted(self.settings.items()))
        pairs = [(r, max(self.subscribers)) for r in self.update_rates]
        pairs += [(self.subscribers_rate, n) for n in self.subscribers]
        seen: dict[tuple, None] = {}
        for seed in self.seeds:
            for rate, n in pairs:
                seen.setdefault((seed, float(rate), int(n)), None)
        return [TraceSpec(self.workload, s, r, n, settings) for s, r, n in seen]

    def points(self) -> list[Point]:
        knobs = tuple(sorted(self.monitor.items()))
        return [Point(t, mode, matcher, self.service, self.link_delay, knobs if on else None,
                      self.service_scale)
                for t in self.traces() for mode in self.modes for matcher in self.matchers
                for on in self.monitors]


TABLES = ("replay", "workload", "monitor", "live")  # [live]: read by `--live` (eventpy.replay.live.config)
REPLAY_KEYS = {"workload", "seeds", "modes", "matchers", "update_rates", "subscribers", "subscribers_rate",
               "service", "link_delay_ms", "name", "monitors", "service_scale"}
GRID_SETTINGS = {"subscribers": "subscribers", "update_rate": "update_rates"}  # generator setting -> its axis
MAX_SEED = 2**63 - 1  # metrics.parquet stores the seed as a Spark long


def no_such_file(path: Path) -> str:
    """The error for a configuration that is not there. README's commands name examples/replay/,
    which a wheel does not install: a user who ran one outside a checkout is told where they are."""
    if "examples" in path.parts and "replay" in path.parts:
        return (f"{path}: no such file (the example configurations of examples/replay/ come with EventPy's "
                "repository and sdist, not with the installed package: run in a checkout or give a copy)")
    return f"{path}: no such file"


def load(path: str | Path) -> Config:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(no_such_file(path)) from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; give a replay TOML file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text (UTF-8) file; give a replay TOML file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return parse(raw, name=path.stem, where=str(path))


def _finite(v: Any) -> bool:
    """A TOML number that can be a rate, a delay or a scale: bool is not one, nor inf or nan."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _number(where: str, r: dict, key: str, default: float, positive: bool = False) -> float:
    v = r.get(key, default)
    if not _finite(v) or v < 0 or (positive and v == 0):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError(f"{where}: [replay] {key} must be a finite number {bound}, not {v!r}")
    return float(v)


def parse(raw: dict[str, Any], name: str = "replay", where: str = "config") -> Config:
    unknown_tables = set(raw) - set(TABLES)
    if unknown_tables:  # a misspelt [workload] or [monitor] would otherwise be ignored silently
        raise ConfigError(f"{where}: unknown table(s) {', '.join(sorted(unknown_tables))}; "
                          f"a replay file has {', '.join(f'[{t}]' for t in TABLES)}")
    r = raw.get("replay")
    if not isinstance(r, dict):
        raise ConfigError(f"{where}: needs a [replay] table")
    unknown = set(r) - REPLAY_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [replay]: {', '.join(sorted(unknown))}")
    workload = r.get("workload")
    if workload not in WORKLOADS:
        raise ConfigError(f"{where}: [replay] workload must be one of {', '.join(WORKLOADS)}, not {workload!r}")

    def listed(key: str, default: list, kind: type, allowed: tuple | None = None) -> list:
        # what the user may write, in the message: a wrong value is told with what would be right
        what = ", ".join(allowed) if allowed else {int: "integers", float: "numbers", str: "names"}[kind]
        value = r.get(key, default)
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where}: [replay] {key} must be a non-empty list of {what}, not {value!r}")
        for v in value:
            if kind is float and isinstance(v, int) and not isinstance(v, bool):
                continue
            if not isinstance(v, kind) or isinstance(v, bool) or (allowed and v not in allowed):
                raise ConfigError(f"{where}: [replay] {key} has {v!r}; allowed: {what}")
        _refuse_repeats(where, key, value)
        return value

    rates = listed("update_rates", [0], float)
    for x in rates:  # inf never ends the generator's loop; nan compares false with everything
        if not _finite(x) or x < 0:
            raise ConfigError(f"{where}: [replay] update_rates has {x!r}; allowed: finite numbers >= 0")
    seeds = listed("seeds", [1], int)
    for x in seeds:
        if not 0 <= x <= MAX_SEED:
            raise ConfigError(f"{where}: [replay] seeds has {x}; allowed: integers from 0 to 2**63 - 1")
    service = r.get("service", "measured")
    if service not in ("measured", "calibrated", "model"):
        raise ConfigError(f"{where}: [replay] service must be 'measured', 'calibrated' or 'model', not {service!r}")
    monitors = r.get("monitors", [False])
    if not isinstance(monitors, list) or not monitors:
        raise ConfigError(f"{where}: [replay] monitors must be a non-empty list of true, false, not {monitors!r}")
    for m in monitors:
        if not isinstance(m, bool):
            raise ConfigError(f"{where}: [replay] monitors has {m!r}; allowed: true, false")
    _refuse_repeats(where, "monitors", monitors)  # as every other grid axis (README)
    monitor = _monitor_knobs(raw.get("monitor", {}), where)
    settings = _workload_settings(raw.get("workload", {}), where)
    subscribers = listed("subscribers", [_default_subscribers(workload)], int)
    # here, not in a Spark task: a bad value is the user's mistake, said in one line with its table
    # (a bare "micro: duration must be > 0" did not say where, and the list of settings a typo got
    # offered subscribers and update_rate, which [workload] then refuses)
    takes = sorted(set(SETTINGS[workload]) - set(GRID_SETTINGS))
    for key in settings:
        if key not in SETTINGS[workload]:
            raise ConfigError(f"{where}: [workload] {key}: {workload} has no such setting; it takes {', '.join(takes)}")
    try:
        check_settings(workload, settings)
    except ValueError as exc:
        raise ConfigError(f"{where}: [workload] {exc}") from None
    for n in subscribers:
        try:
            check_settings(workload, {"subscribers": n})
        except ValueError as exc:
            raise ConfigError(f"{where}: [replay] subscribers has {n!r}: {exc}") from None
    title = r.get("name", name)
    if not isinstance(title, str) or not title.strip():
        raise ConfigError(f"{where}: [replay] name must be a non-empty string, not {title!r}")
    return Config(
        name=title,
        workload=workload,
        seeds=seeds,
        modes=listed("modes", list(MODES), str, MODES),
        matchers=listed("matchers", ["fastint"], str, tuple(MATCHERS)),
        update_rates=[float(x) for x in rates],
        subscribers=subscribers,
        subscribers_rate=_number(where, r, "subscribers_rate", max(rates)),
        service=service,
        link_delay=_number(where, r, "link_delay_ms", 10) / 1000.0,
        settings=dict(settings),
        monitors=list(monitors),
        service_scale=_number(where, r, "service_scale", 1, positive=True),
        monitor=monitor,
    )


def _monitor_knobs(monitor: Any, where: str) -> dict[str, Any]:
    """[monitor]: checked for type here (UpdateMonitor compares, and '>' between str and int is no
    message for a user), then for range by UpdateMonitor itself."""
    unknown = sorted(set(monitor) - {"window", "freq_approx", "min_history"}) if isinstance(monitor, dict) else []
    if not isinstance(monitor, dict) or unknown:  # the misspelt key named, as in [replay]
        what = f"unknown key(s) {', '.join(unknown)}; " if unknown else ""
        raise ConfigError(f"{where}: [monitor] {what}it takes window, freq_approx and min_history")
    for key in ("window", "freq_approx"):
        if key in monitor and not _finite(monitor[key]):
            raise ConfigError(f"{where}: [monitor] {key} must be a finite number > 0, not {monitor[key]!r}")
    history = monitor.get("min_history", 4)
    if not isinstance(history, int) or isinstance(history, bool):
        raise ConfigError(f"{where}: [monitor] min_history must be an integer >= 4, not {history!r}")
    try:
        from ..runtime.client import UpdateMonitor
        UpdateMonitor(**monitor)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: [monitor]: {exc}") from None
    return dict(monitor)


def _workload_settings(settings: Any, where: str) -> dict[str, Any]:
    if not isinstance(settings, dict):
        raise ConfigError(f"{where}: [workload] must be a table")
    for key, grid_key in GRID_SETTINGS.items():
        if key in settings:
            raise ConfigError(f"{where}: [workload] {key} is set by the grid: use [replay] {grid_key}")
    for key, value in settings.items():  # the generators bound most settings below only: inf would pass
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{where}: [workload] {key} must be a finite number, not {value!r}")
    return settings


def _refuse_repeats(where: str, key: str, values: list) -> None:
    """A value listed twice would make two grid points with one id, whose deliveries then merge
    (and show as duplicates); 0 and 0.0 are the same rate."""
    seen: set = set()
    for v in values:
        if v in seen:
            raise ConfigError(f"{where}: [replay] {key} lists {v!r} twice; each value may appear once")
        seen.add(v)


def _default_subscribers(workload: str) -> int:
    return {"micro": 10, "overlay-micro": 200, "htm": 800, "at": 150}[workload]
