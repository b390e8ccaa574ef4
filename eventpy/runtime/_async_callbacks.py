"""Event callbacks are plain functions run on EventPy's delivery threads, not on an asyncio loop.

An `async def` given as `on_event` used to be called there, its coroutine never awaited: the
event was counted as delivered and lost, with only Python's "coroutine ... was never awaited"
RuntimeWarning to show for it. A coroutine function is now refused at `subscribe` (a
TypeError saying how to hand events to a loop), and a callback that is not one but returns an
coroutine anyway (a lambda calling an `async def`) has it closed, unawaited, and the event
counted as a callback error with the same advice in the log (a Future or Task it returns is
its loop's to run, and left alone).
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import types
import weakref
from typing import Any, Callable

log = logging.getLogger("eventpy.delivery")

HOW_TO_HAND_OVER = (
    "event callbacks run on EventPy's delivery threads, not on an asyncio loop: subscribe with "
    "eventpy.aio (sub = aio.subscribe(node, etype, guard); async for event in sub: a bounded inbox "
    "of the loop), or give a plain function that hands each event to the loop, e.g. "
    "on_event=lambda e: loop.call_soon_threadsafe(queue.put_nowait, e), or "
    "on_event=lambda e: asyncio.run_coroutine_threadsafe(handler(e), loop) "
    "(loop = asyncio.get_running_loop(), taken on the loop)")


def is_coroutine_callable(f: Any) -> bool:
    """`f` is an `async def` function, a partial of one, or an object whose `__call__` is one."""
    while isinstance(f, functools.partial):
        f = f.func
    if inspect.iscoroutinefunction(f):
        return True
    call = getattr(type(f), "__call__", None)
    return not inspect.isroutine(f) and inspect.iscoroutinefunction(call)


def check_not_async(on_event: Any) -> None:
    """TypeError if `on_event` is a coroutine function (subscribe's check)."""
    if on_event is not None and is_coroutine_callable(on_event):
        name = getattr(on_event, "__qualname__", None) or type(on_event).__qualname__
        raise TypeError(f"on_event={name} is an async function, whose coroutine nothing would await "
                        f"(the events would be lost); {HOW_TO_HAND_OVER}")


def returned_awaitable(callback: Callable, event: object, result: Any) -> bool:
    """After a callback returned `result`: True (and the error logged, the coroutine closed so
    Python does not warn as well) if it is a coroutine nothing will await; the delivery then
    counts as a callback error. Called only with a result that is not None."""
    # a coroutine (the Coroutine protocol: __await__ and send), which runs only when awaited; not a
    # Future or Task, which its loop runs already. Per delivery whose callback returns something
    # (a lambda around call_soon_threadsafe returns a Handle): hasattr on the type is cheap
    kind = type(result)
    if not (hasattr(kind, "__await__") and hasattr(kind, "send")) and not (
            kind is types.GeneratorType and inspect.isawaitable(result)):  # a @types.coroutine's
        return False
    result.close()
    what = getattr(callback, "__eventpy_what__", None) or (
        f"the event callback {getattr(callback, '__qualname__', None) or callback!r}")
    log.error("%s returned %s, which nothing awaits: the event %r is dropped for this subscriber; %s",
              what, type(result).__name__, event, HOW_TO_HAND_OVER)
    return True


# callbacks already reported as handing events to a closed loop: said once each, not per event
_told_closed: "weakref.WeakSet[Callable]" = weakref.WeakSet()
_told_lock = threading.Lock()


def handed_to_a_closed_loop(e: BaseException, callback: Callable | None, event: object) -> bool:
    """True (and said once per callback, without a traceback) if `e` is asyncio's "Event loop is
    closed": the callback hands events to a loop whose program has ended (`asyncio.run`
    returned, or Ctrl-C stopped it) while events were still owed, as at exit, when the events
    delivered in the exit drain found the loop gone: one traceback per event, thousands of them,
    took the exit drain's whole 5 s."""
    if not (type(e) is RuntimeError and str(e) == "Event loop is closed"):
        return False
    if callback is not None:
        try:
            with _told_lock:
                if callback in _told_closed:
                    return True
                _told_closed.add(callback)
        except TypeError:  # not weakly referable: said every time, as any other error
            pass
    what = getattr(callback, "__eventpy_what__", None) or (
        f"the event callback {getattr(callback, '__qualname__', None) or callback!r}")
    log.error("%s hands events to an asyncio loop that is closed (the program's asyncio.run has "
              "returned): the event %r and the later ones it gets are dropped for this subscriber "
              "(counted in callback_errors); close the subscription before its loop ends",
              what, event)
    return True
