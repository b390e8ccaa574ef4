"""Pieces every workload generator uses: arrival times, the high-frequency update patterns of
000 §8.12, and the assembly of a time-sorted trace."""

from __future__ import annotations

import math
import random
from typing import Any, Callable

HF_PATTERNS = ("rising", "falling", "oscillating")


def stream(seed: int, *parts: Any) -> random.Random:
    """The random stream of one part of a workload (a publisher's events, a subscriber's updates),
    so that what one part draws does not depend on how much another draws: the events of a seed
    stay the same whatever the update rate or the number of subscribers, and the grid's points
    along those axes replay the same publications."""
    return random.Random("/".join(map(str, (seed, *parts))))


def arrivals(rng: random.Random, rate: float, duration: float, start: float = 0.0) -> list[float]:
    """Poisson arrival times at `rate` per second in [start, start + duration)."""
    out: list[float] = []
    if rate <= 0:
        return out
    t = start
    while (t := t + rng.expovariate(rate)) < start + duration:
        out.append(t)
    return out


def hf_values(pattern: str, start: float, step: float, times: list[float], rng: random.Random) -> list[float]:
    """Parameter values of a high-frequency subscription (000 §8.12) at `times`: a steady rise or
    fall by about `step` per update, or an oscillation of amplitude ~5 steps around `start`."""
    if pattern in ("rising", "falling"):
        sign, value, out = (1 if pattern == "rising" else -1), start, []
        for _ in times:  # strictly monotone: every step moves the same way
            value += sign * step * rng.uniform(0.5, 1.5)
            out.append(value)
        return out
    if pattern == "oscillating":
        period = rng.uniform(1.0, 2.0)
        return [start + 5 * step * math.sin(2 * math.pi * t / period) for t in times]
    raise ValueError(f"unknown high-frequency pattern {pattern!r}; one of {', '.join(HF_PATTERNS)}")


def sort_script(events: list[tuple], updates: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """Events sorted by time and numbered 0.. in that order; updates sorted by time."""
    events.sort(key=lambda r: r[0])
    numbered = [(t, eid, pub, et, vals) for eid, (t, pub, et, vals) in enumerate(events)]
    updates.sort(key=lambda r: (r[0], r[1]))
    return numbered, updates


def spread(total: int, buckets: list[Any]) -> dict[Any, int]:
    """`total` items over `buckets` as evenly as possible, in order."""
    n = len(buckets)
    return {b: total // n + (1 if i < total % n else 0) for i, b in enumerate(buckets)}


def option(settings: dict[str, Any], name: str, default: Any, cast: Callable = float) -> Any:
    return cast(settings.get(name, default))


# What a generator's settings may hold: name -> (type, smallest, whether the smallest is excluded,
# largest). Every `option` a generator reads is declared (tests/replay/test_workloads.py checks).
COUNT = (int, 1, False, math.inf)  # at least one
POSITIVE = (float, 0.0, True, math.inf)
NON_NEGATIVE = (float, 0.0, False, math.inf)
SHARE = (float, 0.0, False, 1.0)


def check(workload: str, declared: dict[str, tuple], settings: dict[str, Any]) -> None:
    """ValueError naming the first setting that is unknown, of the wrong type or out of range."""
    for name, value in settings.items():
        spec = declared.get(name)
        if spec is None:
            raise ValueError(f"{workload} has no setting {name!r}; it takes {', '.join(sorted(declared))}")
        kind, low, open_low, high = spec
        ok_type = isinstance(value, int) if kind is int else isinstance(value, (int, float))
        if not ok_type or isinstance(value, bool):
            raise ValueError(f"{workload}: {name} must be {'an integer' if kind is int else 'a number'}, "
                             f"not {value!r}")
        if not (value > low if open_low else value >= low) or value > high or value != value:
            bounds = f"{'>' if open_low else '>='} {low:g}" + (f" and <= {high:g}" if high < math.inf else "")
            raise ValueError(f"{workload}: {name} must be {bounds}, not {value!r}")
