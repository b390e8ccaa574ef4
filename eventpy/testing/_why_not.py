"""`why_not(target, event, **attrs)`: why a subscriber would not get an event, in a test's words.

A test that expected a delivery and got none fails with `assert [] == [9.0]`; the guard, the
values its parameters hold now and whether the subscription is still open are what the
developer looks for next (README, Troubleshooting), so a test can assert on them instead.
"""

from __future__ import annotations

from typing import Any

from ..guards import SUBSCRIBED_AT
from ..runtime._lang_fields import nodes_left_by, subscriptions_of
from ..runtime._sub_args import event_type_of
from ..runtime.api import Subscription
from ..runtime.model import EventType


def _subscriptions(target: Any, event: Any) -> list[Subscription]:
    __tracebackhide__ = True  # (see why_not)
    subs = [target] if isinstance(target, Subscription) else subscriptions_of(target)
    if not subs:
        if nodes_left_by(target):
            return []  # an object closed with close(): said by the caller
        raise TypeError(f"why_not takes a Subscription or an object of an .epy class with event methods, "
                        f"not {type(target).__name__}")
    if event is None:
        if len({s.event_type.name for s in subs}) > 1:
            names = ", ".join(sorted({s.event_type.name for s in subs}))
            raise TypeError(f"this {type(target).__name__} listens to several event types ({names}): "
                            "name the event method, why_not(obj, Class.method, ...)")
        return subs
    etype = event if isinstance(event, EventType) else event_type_of(event, "why_not")
    mine = [s for s in subs if s.event_type.name == etype.name]
    if not mine:
        raise TypeError(f"this {type(target).__name__} does not listen to {etype.name}")
    return mine


def _shown(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(values.items())) or "none"


def why_not(target: Any, event: Any = None, /, **attrs: Any) -> str | None:
    """None if `target` (a Subscription, or an object of an .epy class) would get an event with
    these attributes published now; else why not, as a sentence naming the guard and the values
    its parameters hold. `event`: the event method (`Class.method`) or EventType, needed when the
    object listens to several. Attributes of the wrong type or missing raise TypeError."""
    # a mistake in the call is the test's: pytest shows it at the test's line, not in these frames
    __tracebackhide__ = True
    subs = _subscriptions(target, event)
    if not subs or all(s.closed for s in subs):
        return (f"{type(target).__name__ if not isinstance(target, Subscription) else 'the subscription'} is "
                "closed: it gets no event (closed with close(), or its node was shut down: an object made "
                "before the test's fresh overlay started, at import time say, is closed by it)")
    reasons = []
    for sub in subs:
        if sub.closed:
            continue
        state = sub._state
        try:
            values = state.etype.values_from(attrs)
        except (TypeError, ValueError) as e:  # raised here, in one sentence, not from the schema's frames
            mistake = TypeError if isinstance(e, TypeError) else ValueError
            raise mistake(f"why_not: {e}: no such event can be published, so none reaches it") from None
        now = sub._node._local.core.clock()  # an event published now: elapsed() as it would read
        if state.plan.holds(values, state.values, now):
            return None
        given = dict(zip(state.etype.attrs, values))
        params = dict(sub.params)
        if SUBSCRIBED_AT in state.env:  # where a moving guard is now is half of the answer
            params["elapsed()"] = round(now - state.env[SUBSCRIBED_AT], 6)
        reasons.append(f"the guard {sub.guard!r} of {state.etype.name} does not admit {_shown(given)} "
                       f"with its parameters as they are now: {_shown(params)}")
    return "; ".join(reasons)
