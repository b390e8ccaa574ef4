"""`eventpy.elapsed(target)`: what a guard's elapsed() would read for an event published now.

A program that re-anchors a motion (`self.x0, self.vx = pos - vx * t, vx` when it turns at t)
needs t on the clock elapsed() counts on: from its subscription, on the overlay's clock. Its own
`time.time()` taken in `__init__` is not that moment: the first object of a program connects the
default node before it subscribes (over TCP, a tenth of a second later), and the window would
land that many seconds' motion away from where the object is (paper 003 §III-B).
"""

from __future__ import annotations

from typing import Any

from ..guards import SUBSCRIBED_AT
from ._boundary import callers_mistake
from .api import Subscription
from .lang import subscriptions_of
from ._lang_fields import nodes_left_by


def elapsed(target: Any) -> float:
    """Seconds from the subscription of `target` (a Subscription, or an object of an .epy class,
    whose subscriptions share one moment) to now, on the overlay's clock: the value elapsed() has
    in its guard for an event published now."""
    try:
        return _elapsed(target)
    except (TypeError, ValueError, RuntimeError) as e:  # the program's mistake: from its line (_boundary)
        callers_mistake(e)
        raise


def _elapsed(target: Any) -> float:
    if isinstance(target, Subscription):
        subs = [target]
    else:
        subs = subscriptions_of(target)
        if not subs:
            if nodes_left_by(target):
                raise RuntimeError(f"this {type(target).__name__} is closed: elapsed() is measured for a "
                                   "subscribed object")
            raise TypeError(f"elapsed takes a Subscription or an object of an .epy class with event "
                            f"methods, not {type(target).__name__}")
    if any(s._state.closed for s in subs):
        raise RuntimeError("the subscription is closed: elapsed() is measured for a live one")
    origins = [s._state.env[SUBSCRIBED_AT] for s in subs if SUBSCRIBED_AT in s._state.env]
    if not origins:
        raise ValueError("no guard of this subscription reads elapsed(); there is no time to measure")
    return subs[0]._node._local.core.clock() - min(origins)
