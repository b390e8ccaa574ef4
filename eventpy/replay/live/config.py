"""The `[live]` table of a replay configuration: which engines, which trace, and how to scale it.

    [live]
    engines = ["eventpy-parametric", "eventpy-resub", "activemq", "redis"]
    update_rates = [0, 50]        # default: the grid's highest update rate
    subscribers = 200             # generator setting; default: the grid's largest
    seed = 1                      # default: the grid's first seed
    max_subscriptions = 60        # scale to one machine (spread over the trace's subscriptions)
    max_events = 1000             # the trace's first events
    speed = 1.0                   # trace seconds per wall-clock second
    quiet_s = 0.5                 # a run ends when nothing has arrived for this long
    timeout_s = 60                # per barrier / drain

    [live.workload]               # overrides of [workload] for the live traces (optional)
    publish_rate = 4.0

The grid's `eventpy replay CONFIG --out DIR` ignores this table; `--live` runs only it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import Config, ConfigError
from . import ENGINES

_KEYS = {"engines", "update_rates", "subscribers", "seed", "max_subscriptions", "max_events", "speed",
         "quiet_s", "timeout_s", "workload"}


@dataclass
class LiveConfig:
    engines: list[str]
    update_rates: list[float]
    subscribers: int
    seed: int
    max_subscriptions: int | None
    max_events: int | None
    speed: float
    quiet: float
    timeout: float
    settings: dict[str, Any] = field(default_factory=dict)  # generator settings but rate and subscribers

    def generator_settings(self, rate: float) -> dict[str, Any]:
        return {**self.settings, "update_rate": rate, "subscribers": self.subscribers}


def parse_live(raw: dict[str, Any], grid: Config, where: str = "config") -> LiveConfig:
    live = raw.get("live")
    if not isinstance(live, dict):
        raise ConfigError(f"{where}: --live needs a [live] table (engines, scale)")
    unknown = set(live) - _KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [live]: {', '.join(sorted(unknown))}")
    engines = live.get("engines", list(ENGINES))
    if not isinstance(engines, list) or not engines or any(e not in ENGINES for e in engines):
        raise ConfigError(f"{where}: [live] engines must be a non-empty list of {', '.join(ENGINES)}")
    rates = live.get("update_rates", [max(grid.update_rates)])
    if not isinstance(rates, list) or not rates or any(not _number(r) or r < 0 for r in rates):
        raise ConfigError(f"{where}: [live] update_rates must be a non-empty list of rates >= 0")
    overrides = live.get("workload", {})
    if not isinstance(overrides, dict):
        raise ConfigError(f"{where}: [live.workload] must be a table")

    def count(key: str, default: Any) -> Any:
        v = live.get(key, default)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            raise ConfigError(f"{where}: [live] {key} must be a positive integer")
        return v

    def positive(key: str, default: float) -> float:
        v = live.get(key, default)
        if not _number(v) or v <= 0:
            raise ConfigError(f"{where}: [live] {key} must be a positive number")
        return float(v)

    return LiveConfig(
        engines=list(engines), update_rates=[float(r) for r in rates],
        subscribers=count("subscribers", max(grid.subscribers)), seed=_seed(live.get("seed", grid.seeds[0]), where),
        max_subscriptions=count("max_subscriptions", None), max_events=count("max_events", None),
        speed=positive("speed", 1.0), quiet=positive("quiet_s", 0.5), timeout=positive("timeout_s", 60.0),
        settings={**grid.settings, **overrides},
    )


def _seed(v: Any, where: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ConfigError(f"{where}: [live] seed must be an integer >= 0")
    return v


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
