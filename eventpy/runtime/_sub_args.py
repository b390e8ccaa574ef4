"""The checks of `subscribe` and `update` arguments, shared by the Python API (`Node`,
`Subscription`) and the simulator's clients (`SimClient`, `SimSubscription`), so that a mistake
is refused with the same message in both instead of making, in the simulator, a subscription that
silently never matches (a numpy float parameter, a parameter renamed by a typo in `update`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..guards import SUBSCRIBED_AT, GuardPlan, compile_guard
from ._async_callbacks import check_not_async
from .model import EventType
from ._params import KIND_NAMES, check_members, check_value_range, freeze, param_kind, param_type, short


def event_type_of(x: Any, verb: str) -> EventType:
    """What `publish`, `subscribe` and `advertise` take: an EventType, or the event method of an
    .epy class (`Monitor.quote`), whose events are of the type the class publishes."""
    if isinstance(x, EventType):
        return x
    etype = getattr(getattr(x, "__self__", None), "etype", None)  # `Class.method` of an .epy class
    if isinstance(etype, EventType):
        return etype
    raise TypeError(f"{verb} needs an EventType or an event method of an .epy class, got {type(x).__name__}")


def checked_subscription(etype: Any, guard: Any, params: Any, on_event: Any,
                         plans: dict | None = None) -> tuple[dict[str, Any], GuardPlan]:
    """`subscribe`'s arguments: the frozen parameters and the compiled guard, or the error.
    `guard` may be a GuardPlan already compiled; `plans` caches compiled guards by their text,
    type and parameter kinds (a simulation that subscribes 10,000 times with one guard text)."""
    if not isinstance(guard, (str, GuardPlan)):
        raise TypeError(f"the guard is the text of a condition, such as \"price < limit\", not a "
                        f"{type(guard).__name__}")
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"params is a mapping of parameter names to values, not a {type(params).__name__}")
    if on_event is not None and not callable(on_event):
        raise TypeError("on_event must be callable")
    check_not_async(on_event)
    env = {k: freeze(v) for k, v in (params or {}).items()}
    types = {k: param_type(v) for k, v in env.items()}
    if isinstance(guard, GuardPlan):
        plan = guard
    else:
        key = (guard, etype, tuple(sorted(types.items(), key=lambda kv: kv[0])))
        plan = plans.get(key) if plans is not None else None
        if plan is None:
            plan = compile_guard(guard, etype, types)
            if plans is not None:
                plans[key] = plan
    for k, v in env.items():  # (the language checks its fields so before it subscribes)
        check_value_range(k, v)
        check_members(plan, k, v)
    return env, plan


def param_kinds(env: Mapping[str, Any]) -> dict[str, str]:
    """The kind of each of a subscription's parameters (a parameter keeps its kind in updates)."""
    return {k: param_kind(v) for k, v in env.items() if k != SUBSCRIBED_AT}


def checked_update(plan: GuardPlan, kinds: Mapping[str, str], params: Mapping[str, Any]) -> dict[str, Any]:
    """`update(**params)`'s values, frozen, or a TypeError (unknown parameter, another kind) or
    ValueError (out of range, a set member its attribute cannot equal)."""
    frozen = {}
    for k, v in params.items():
        kind = kinds.get(k)
        if kind is None:
            raise TypeError(f"unknown parameter {k!r}; this subscription has "
                            f"{', '.join(kinds) or 'no parameters'}")
        if param_kind(v) != kind:
            raise TypeError(f"parameter {k!r} must stay {KIND_NAMES[kind]}, got {type(v).__name__} {short(v)}")
        frozen[k] = f = freeze(v)
        check_value_range(k, f)  # before it is stored (the language checks a field so)
        if kind == "set":
            check_members(plan, k, f)
    return frozen
