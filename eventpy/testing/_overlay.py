"""`fresh_overlay()`: one test's own embedded overlay, none of another test's state in it.

The embedded overlay, its nodes, `eventpy.stats()` and the default node of `.epy` objects belong
to the process, so a test run shares them between tests unless each test starts from nothing:
objects of an earlier test still receive events (and count in `stats()`), an event type declared
there with another schema is refused, a failing test never closes what it opened.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..runtime import api
from ..runtime._connect_args import _check_connect_args
from ..runtime._process import _lock, _nodes
from ..runtime.api import ENV_BROKER, Node
from ..runtime.embedded import EmbeddedOverlay


class LeftoverSubscriptions(UserWarning):
    """Subscriptions were open when a test's fresh overlay started: `fresh_overlay` closed them."""

    __module__ = "eventpy.testing"  # as the program names it: eventpy.testing.LeftoverSubscriptions


class CallbackErrors(AssertionError):
    """An event callback (an `event def` body, an `on_event`) raised during the test. The
    delivery threads only log it: without this the test would pass."""

    __module__ = "eventpy.testing"  # as the program names it: eventpy.testing.CallbackErrors


class TestOverlay:
    """What `fresh_overlay()` yields: `node`, the default node (the one `.epy` objects subscribe
    on and `Class.event(...)` publishes on); `clock`, the ManualClock given, or None; and
    `callback_errors`, the log of every callback that raised so far (clear it in a test that
    expects one)."""

    __test__ = False  # not a test class, whatever pytest makes of its name

    def __init__(self, node: Node, clock: Callable[[], float] | None, callback_errors: list[str]) -> None:
        self.node = node
        self.clock = clock
        self._errors = callback_errors  # the list the log handler fills: not replaced, only cleared

    @property
    def callback_errors(self) -> list[str]:
        return self._errors

    def __repr__(self) -> str:
        return f"<TestOverlay node={self.node.name} clock={self.clock!r}>"


class _Recorder(logging.Handler):
    """Keeps what `eventpy.delivery` logs about callbacks that raised, tracebacks included."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.into = into
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(self.format(record))


def _live_subscriptions() -> list[str]:
    """The event types of the subscriptions still open on this process's nodes."""
    with _lock:
        nodes = list(_nodes)
    names = []
    for node in nodes:
        with node._local.lock:
            names += [s.etype.name for s in node._local.core.subs.values() if not s.closed]
    return names


def _warn_leftovers(stacklevel: int) -> None:
    left = _live_subscriptions()
    if left:
        shown = ", ".join(sorted(set(left))[:5]) + (", ..." if len(set(left)) > 5 else "")
        warnings.warn(f"fresh_overlay closed {len(left)} subscription(s) opened before it ({shown}): objects made "
                      "at import time or outside the test get nothing from now on; make them in the test or "
                      "in a fixture", LeftoverSubscriptions, stacklevel=stacklevel)


def _start(options: dict[str, str], clock: Callable[[], float]) -> Node:
    """A new embedded overlay as the process's, and a node on it as the default node."""
    from .. import set_default_node  # (eventpy's __init__ imports this package's users lazily)

    with _lock:
        api._overlay = EmbeddedOverlay(**options, clock=clock)
    node = api.connect("embedded", **options)
    set_default_node(node)
    return node


@contextmanager
def fresh_overlay(*, mode: str | None = None, matcher: str | None = None, summary: str | None = None,
                  clock: Callable[[], float] | None = None, check_callbacks: bool = True) -> Iterator[TestOverlay]:
    """Run the block on an embedded overlay of its own: whatever ran before is shut down
    (`eventpy.shutdown()`; subscriptions still open are warned of, LeftoverSubscriptions), a new
    overlay starts with `mode`, `matcher` and `summary`, and its node is the default node; at the
    end everything is shut down again, also when the block raised. EVENTPY_BROKER is set aside
    meanwhile, so `eventpy.connect()` without a URL reaches this overlay too.

    `clock`: the overlay's clock (a ManualClock: elapsed(), publication times and the update
    monitor move only when the test advances it). `check_callbacks`: raise CallbackErrors at the
    end if a callback raised and the block did not clear `callback_errors` (the block's own
    exception, if any, is raised instead)."""
    _check_connect_args(None, mode, matcher, summary, None)
    if clock is not None and not callable(clock):
        raise TypeError(f"clock is a function returning seconds (a ManualClock), not {type(clock).__name__}")
    options = {k: v for k, v in (("mode", mode), ("matcher", matcher), ("summary", summary)) if v}
    _warn_leftovers(stacklevel=4)  # the `with` line (contextmanager's __enter__, then ours)
    api.shutdown()
    env_broker = os.environ.pop(ENV_BROKER, None)
    errors: list[str] = []
    recorder = _Recorder(errors)
    delivery_log = logging.getLogger("eventpy.delivery")
    delivery_log.addHandler(recorder)
    try:
        yield TestOverlay(_start(options, clock or time.time), clock, errors)
    finally:
        try:
            api.shutdown()
        finally:
            delivery_log.removeHandler(recorder)
            if env_broker is not None:
                os.environ[ENV_BROKER] = env_broker
    if check_callbacks and errors:
        raise CallbackErrors(f"{len(errors)} event callback(s) raised during the test (clear "
                             "callback_errors in a test that expects it):\n\n" + "\n\n".join(errors))
