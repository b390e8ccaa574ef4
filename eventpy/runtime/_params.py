"""What a subscription's parameters may be: their kinds (a parameter keeps its kind across
updates), the members of a set parameter against the attribute they are tested with, and the
timeouts of the waiting calls. Shared by the Python API and the language runtime."""

from __future__ import annotations

import numbers
import threading
from typing import Any

from .messages import MAX_BUDGET


def plain(v: Any) -> Any:
    """`v` as the built-in value it stands for: a numpy number, an IntEnum or a str subclass
    (np.float64 *is* a float) reaches the guard's intervals, the matchers and the wire as the int,
    float or str they compare and carry by exact type; left as it was, a field of np.float64 made
    a subscription that never matched, silently. A bool, and anything else, is returned as is."""
    t = type(v)
    if t is int or t is float or t is str or t is bool:
        return v
    if isinstance(v, str):
        return str.__str__(v)  # the text itself (str() of a (str, Enum) member is "Cls.NAME")
    if t.__module__ == "numpy" and t.__name__ in ("bool_", "bool"):  # np.bool_ (numpy 2: np.bool)
        return bool(v)  # a switch set from `array.any()`; still not a number
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return v


def param_kind(v: Any) -> str:
    v = plain(v)
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float, numbers.Real)):
        return "num"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (set, frozenset)):
        return "set"
    raise TypeError(f"parameter values must be int, float, str, bool or a set, got {type(v).__module__}."
                    f"{type(v).__qualname__}" if type(v).__module__ != "builtins" else
                    f"parameter values must be int, float, str, bool or a set, got {type(v).__name__}")


KIND_OF_TYPE = {int: "num", float: "num", str: "str", bool: "bool", set: "set", frozenset: "set"}  # annotations


def param_type(v: Any) -> type:
    return {"bool": bool, "num": float, "str": str, "set": frozenset}[param_kind(v)]


def freeze(v: Any) -> Any:
    """A parameter's value as a subscription holds it: a set frozen, built-in members and values."""
    if isinstance(v, (set, frozenset)):
        return frozenset(plain(x) for x in v)
    return plain(v)


KIND_NAMES = {"num": "a number", "str": "a str", "bool": "a bool", "set": "a set"}


def check_timeout(what: str, timeout: Any) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{what} needs a positive timeout in seconds, not {timeout!r}")
    if not timeout <= threading.TIMEOUT_MAX:  # inf, 1e12: before, an OverflowError from the wait
        raise ValueError(f"{what} needs a finite timeout of at most {threading.TIMEOUT_MAX:g} seconds, "
                         f"not {timeout!r}")


def answer_budget(remaining: float) -> float:
    """The part of a waiter's `remaining` seconds that the edge broker may spend waiting for the
    brokers and clients it asks (drain, confirm), so that its answer naming a silent one arrives
    before the waiter gives up. The rest is slack for the answer's way back and for a late
    timer on a loaded machine: a tenth, and at least half a second when the waiter has a second
    (a 1 s drain kept 0.1 s, and a loaded CI machine lost the name in it)."""
    budget = remaining - max(0.1 * remaining, min(0.5, 0.5 * remaining))
    # no more than a broker takes: before, confirm(timeout=5000) over TCP sent a budget the broker
    # refused as a malformed frame, and the node reconnected and asked again, for the whole timeout
    return min(budget, MAX_BUDGET)


def check_members(plan: Any, name: str, value: Any, what: str = "") -> None:
    """A set parameter's members against the attributes the guard tests them with (`sym in
    names`): a member of another type could never match, so it is a mistake, said at once."""
    if not isinstance(value, (set, frozenset)):
        return
    schema = plan.etype.schema
    for var in plan.vars:
        if var.kind != "constraint" or var.attr is None or name not in var.deps:
            continue
        t = schema[var.attr]
        for x in value:
            if not (isinstance(x, t) if t in (str, bool) else
                    isinstance(x, (int, float)) and not isinstance(x, bool)):
                raise TypeError(f"{what or f'parameter {name!r}'}: member {x!r} ({type(x).__name__}) can never "
                                f"equal attribute {var.attr!r} ({t.__name__}), which the guard tests it against")


def short(value: Any) -> str:
    """A value as an error message quotes it: not a megabyte of it (a string is cut before repr,
    which would copy it all on every store). Not every long repr has a len(): an int of 100
    digits or a Decimal is shortened too (len() raised TypeError from the store itself)."""
    if isinstance(value, str) and len(value) > 80:
        return f"{value[:60]!r}... ({type(value).__name__} of {len(value)})"
    text = repr(value)
    if len(text) <= 80:
        return text
    size = f" of {len(value)}" if hasattr(type(value), "__len__") else ""
    return f"{text[:60]}... ({type(value).__name__}{size})"


INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # the ints msgpack carries: events and parameters


def check_value_range(name: str, v: Any) -> None:
    """Refuse what no guard can use (NaN) and what the wire cannot carry (an int beyond 64 bits:
    a parameter a predicate reads may travel as it is, into an evolving bound say)."""
    t = type(v)
    if t is float and v != v:
        raise ValueError(f"parameter {name!r} is NaN; no event attribute compares with NaN")
    if t is int and not INT_MIN <= v <= INT_MAX:
        raise ValueError(f"parameter {name!r} is {short(v)}, outside the 64-bit integers the overlay carries")

