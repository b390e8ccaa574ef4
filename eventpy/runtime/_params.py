"""What a subscription's parameters may be: their kinds (a parameter keeps its kind across
updates), the members of a set parameter against the attribute they are tested with, and the
timeouts of the waiting calls. Shared by the Python API and the language runtime."""

from __future__ import annotations

from typing import Any


def param_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "num"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (set, frozenset)):
        return "set"
    raise TypeError(f"parameter values must be int, float, str, bool or a set, got {type(v).__name__}")


KIND_OF_TYPE = {int: "num", float: "num", str: "str", bool: "bool", set: "set", frozenset: "set"}  # annotations


def param_type(v: Any) -> type:
    return {"bool": bool, "num": float, "str": str, "set": frozenset}[param_kind(v)]


def freeze(v: Any) -> Any:
    return frozenset(v) if isinstance(v, (set, frozenset)) else v


KIND_NAMES = {"num": "a number", "str": "a str", "bool": "a bool", "set": "a set"}


def check_timeout(what: str, timeout: Any) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{what} needs a positive timeout in seconds, not {timeout!r}")


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
