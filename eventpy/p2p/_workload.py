"""The workloads of 004 §6: subscriptions uniform (W1) or skewed (W2, an 80-20 Zipfian spread
over 4-6 hot spots), events uniform or skewed the same way, delay requirements moderate or tight.
All draws come from one seeded random.Random."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ._space import Box, Space


@dataclass
class Hotspots:
    """Centres of the hot spots and their Zipf weights (1/k): with probability `share` a draw
    comes from a hot spot (chosen by weight), else from the whole space (80-20 by default)."""

    centres: list[tuple[float, ...]]
    weights: list[float]
    share: float = 0.8
    spread: float = 0.06  # standard deviation around a centre, as a share of each domain

    @classmethod
    def draw(cls, space: Space, rng: random.Random, count: int | None = None, share: float = 0.8) -> Hotspots:
        count = count or rng.randint(4, 6)
        centres = [tuple(rng.uniform(d.lo, d.hi) for d in space.dims) for _ in range(count)]
        return cls(centres, [1.0 / (k + 1) for k in range(count)], share)

    def centre(self, space: Space, rng: random.Random) -> tuple[float, ...]:
        if rng.random() >= self.share:
            return tuple(rng.uniform(d.lo, d.hi) for d in space.dims)
        c = rng.choices(self.centres, self.weights)[0]
        return tuple(min(max(rng.gauss(v, self.spread * (d.hi - d.lo)), d.lo), d.hi - 1e-9)
                     for v, d in zip(c, space.dims))


def subscription(space: Space, rng: random.Random, hot: Hotspots | None = None,
                 width: tuple[float, float] = (0.05, 0.5)) -> Box:
    """A box: around a uniform centre (W1) or a hot-spot centre (W2), each side a uniform share
    `width` of its domain; integer sides hold whole values."""
    centre = hot.centre(space, rng) if hot else tuple(rng.uniform(d.lo, d.hi) for d in space.dims)
    ranges = {}
    for c, d in zip(centre, space.dims):
        w = rng.uniform(*width) * (d.hi - d.lo)
        lo, hi = max(d.lo, c - w / 2), min(d.hi, c + w / 2)
        if d.integer:
            lo, hi = math.floor(lo), max(math.floor(lo), math.ceil(hi) - 1)
            hi = min(hi, d.hi - 1)
        ranges[d.name] = (lo, hi)
    return space.box(ranges)


def event(space: Space, rng: random.Random, hot: Hotspots | None = None) -> tuple[float, ...]:
    """A point: uniform, or near a hot spot (skewed); integer attributes take whole values."""
    c = hot.centre(space, rng) if hot else tuple(rng.uniform(d.lo, d.hi) for d in space.dims)
    return tuple(float(min(math.floor(v), d.hi - 1)) if d.integer else v for v, d in zip(c, space.dims))
