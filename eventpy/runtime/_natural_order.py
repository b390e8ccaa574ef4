"""Broker names in the order a reader counts them: `b2` before `b10`. `overlay up --brokers 12`
names them b0 ... b11, and a plain sort of the text listed b0, b1, b10, b11, b2 ..., so the
brokers of `overlay up` and `overlay status` did not read in the order they were numbered."""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural(name: str) -> tuple:
    """A sort key: the runs of digits compare as numbers, the rest as text. The parts alternate
    text, number, text ... for every name, so two keys always compare; the name itself breaks a
    tie (`b02` and `b2`), so the order is total."""
    parts = _DIGITS.split(name)
    return (*(int(p) if i % 2 else p for i, p in enumerate(parts)), name)
