"""Pieces every workload generator uses: arrival times, the high-frequency update patterns of
000 §8.12, and the assembly of a time-sorted trace."""

from __future__ import annotations

import math
import random
from typing import Any, Callable

HF_PATTERNS = ("rising", "falling", "oscillating")


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
