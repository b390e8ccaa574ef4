"""Serial executors on a shared pool: deliveries to one subscriber run one at a time, in order;
different subscribers run in parallel. A callback's exception is logged with its traceback and
does not stop later deliveries."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from types import TracebackType
from typing import Callable

from ._async_callbacks import handed_to_a_closed_loop
from ._workers import Workers

log = logging.getLogger("eventpy.delivery")
_POOL_SIZE = 8
class _Here(threading.local):
    """Per thread: inside an event callback (`running`), and the origin of its event. Class-level
    defaults: a thread that never set them reads them without an AttributeError raised and caught
    inside getattr (0.5 us per publish, which asks)."""

    running = False
    origin: str | None = None
    seq = 0  # the event's sequence number at its origin: (origin, seq) names it


_here = _Here()

# thread id -> (callback, event, time.monotonic() at its start) of the callback each delivery
# thread runs, so that a drain that times out on a callback that blocks names it
running_callbacks: dict[int, tuple[Callable, object, float]] = {}


def describe_running(now: float) -> str:
    """The callbacks running now, longest first ("" if none), for a drain's TimeoutError."""
    running = sorted(list(running_callbacks.values()), key=lambda r: r[2])
    return "; ".join(f"{_what(cb)} has run for {now - since:.1f}s on {event!r}" for cb, event, since in running[:3])


def _what(callback: Callable | None) -> str:
    return getattr(callback, "__eventpy_what__", None) or (
        f"the event callback {getattr(callback, '__qualname__', None) or callback!r}" if callback is not None
        else "an event callback")


def callback_failed(e: BaseException, callback: Callable | None = None, event: object = None) -> None:
    """Log what an event callback raised, naming the callback (an .epy event method says which:
    `__eventpy_what__`) and the event; the event is dropped for that subscriber only."""
    if handed_to_a_closed_loop(e, callback, event):  # said once per callback, not per event
        return
    what = _what(callback)
    dropped = f"the event {event!r}" if event is not None else "the event"
    if isinstance(e, Exception):
        e.__traceback__ = _from_the_programs_frames(e.__traceback__)
        log.error("%s raised; %s is dropped for this subscriber", what, dropped, exc_info=e)
    else:  # sys.exit() in a callback: a delivery thread cannot stop the process, so say so
        log.error("%s raised %s; a delivery thread cannot stop the process, %s is dropped for this "
                  "subscriber", what, type(e).__name__, dropped)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # eventpy/


def _from_the_programs_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the program's first frame on: the delivery loop and the event method's
    wrapper that called it are eventpy's, not the program's mistake (a user took them for a
    crash of eventpy). A traceback with no frame of the program is eventpy's own: kept whole."""
    first = tb
    while first is not None and first.tb_frame.f_code.co_filename.startswith(_PACKAGE + os.sep):
        first = first.tb_next
    return first if first is not None else tb


def in_callback() -> bool:
    """True on a delivery thread while it runs an event callback."""
    return _here.running


def handled_event() -> tuple[str, int] | None:
    """(origin node, seq) of the event whose callback this thread runs (None: no callback)."""
    here = _here
    return (here.origin, here.seq) if here.running else None


class DeliveryPool:
    def __init__(self, workers: int = _POOL_SIZE) -> None:
        self._pool = Workers(workers)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._busy = 0  # tasks queued or running, over every serial queue

    def serial(self) -> "SerialQueue":
        return SerialQueue(self)

    def _started(self) -> None:
        with self._lock:
            self._busy += 1

    def _finished(self) -> None:
        with self._lock:
            self._busy -= 1
            if not self._busy:
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not self._busy, timeout)

    def shutdown(self) -> None:
        self._pool.shutdown()


class SerialQueue:
    """Runs submitted callables one at a time, in submission order, on the pool."""

    __slots__ = ("_owner", "_tasks", "_lock", "_scheduled")

    def __init__(self, owner: DeliveryPool) -> None:
        self._owner = owner
        self._tasks: deque[Callable[[], object]] = deque()
        self._lock = threading.Lock()
        self._scheduled = False

    def idle(self) -> bool:
        """Nothing queued or running (a glance: a task submitted meanwhile is not seen)."""
        return not self._scheduled and not self._tasks

    def submit(self, task: Callable[[], object]) -> None:
        self._owner._started()
        with self._lock:
            self._tasks.append(task)
            if self._scheduled:
                return
            self._scheduled = True
        self._owner._pool.submit(self._run)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._tasks:
                    self._scheduled = False
                    return
                task = self._tasks.popleft()
            _here.running = True
            try:
                task()
            except BaseException as e:  # isolate the subscriber's failure, keep delivering
                callback_failed(e)
            finally:
                _here.running = False
                self._owner._finished()
