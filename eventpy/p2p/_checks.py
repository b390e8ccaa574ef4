"""Checks of the numbers a user gives the broker-less overlay: one line saying what is wrong and
what to give instead, raised where the value is given (a string delay used to fail deep inside a
comparison, and 1.5 hops or an out-degree of 2.5 went through unnoticed)."""

from __future__ import annotations

import math
from typing import Any


def whole_number(name: str, value: Any, what: str, least: int = 1) -> None:
    """`value` must be an int (not a bool) of at least `least`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is {what}: a whole number of at least {least}, not {value!r}")
    if value < least:
        raise ValueError(f"{name} is {what}: at least {least}, not {value}")


def share(name: str, value: Any, what: str) -> None:
    """`value` must be a number from 0 to 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} is {what}: a number from 0 to 1, not {value!r}")
    if not 0.0 <= value <= 1.0:  # NaN fails this too
        raise ValueError(f"{name} is {what}: from 0 to 1, not {value!r}")


def positive_share(name: str, value: Any, what: str) -> None:
    """`value` must be a number above 0 and at most 1."""
    share(name, value, what)
    if value == 0:
        raise ValueError(f"{name} is {what}: above 0, not {value!r}")


__all__ = ["positive_share", "share", "whole_number"]
