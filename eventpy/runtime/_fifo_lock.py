"""The FIFO locks of `.epy` objects' fields (paper 000 Fig. 13): fair, reentrant, and refusing
the wait that would close a cycle of two statements crossing two objects' fields (FieldDeadlock).
Re-exported by eventpy.runtime.lang (generated code reaches them as `__eventpy__.FifoLock`)."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any


# -- FIFO locks (Fig. 13) ------------------------------------------------------------------------
class FieldDeadlock(RuntimeError):
    """Two threads each hold a field lock the other waits for: raised in the thread that closed
    the cycle, so that its statement ends and releases its locks instead of both hanging."""

    __module__ = "eventpy"  # as a traceback's last line names it: eventpy.FieldDeadlock (its public name)


# Who waits for which FIFO lock (thread id -> lock), to find a cycle when a thread is about to
# wait: a statement holds its fields' locks while it runs (Fig. 13), so `self.x, other.x = ...`
# (or `self.x = other.move()` storing other.x) in two callbacks on two objects took self.x then
# other.x in one thread and the reverse in the other, and both delivery threads hung for good.
# Taken only by a thread that finds a lock busy; never held while waiting.
_waits_lock = threading.Lock()
_waits: dict[int, "FifoLock"] = {}
_get_ident = threading.get_ident  # (a global, not a module attribute, on every store's path)


class FifoLock:
    """A fair, reentrant lock: threads acquire it in the order they asked for it. A thread that
    would wait for a lock held by a thread waiting (through others) for one it holds raises
    FieldDeadlock instead."""

    __slots__ = ("_lock", "_cv", "_queue", "_owner", "_depth", "label")

    def __init__(self, label: str = "a field") -> None:
        # The fast paths (a free lock taken, a lock given back that nobody waits for: every store
        # of a game's tick) take `_lock` itself, whose `with` runs in C; the Condition's runs in
        # Python, and its notify_all too, which cost each store a few microseconds for nothing
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._queue: deque[int] = deque()
        self._owner: int | None = None
        self._depth = 0
        self.label = label  # what the lock guards, for FieldDeadlock's message

    def acquire(self) -> None:
        me = _get_ident()
        with self._lock:
            if self._owner == me:
                self._depth += 1
                return
            if self._owner is None and not self._queue:  # free: the common case, no bookkeeping
                self._owner, self._depth = me, 1
                return
        self._wait_for(me)

    def _wait_for(self, me: int) -> None:
        with _waits_lock:  # the lock is busy: wait, unless that closes a cycle
            cycle = self._cycle(me)
            if cycle:
                raise FieldDeadlock(
                    f"deadlock: this thread waits for {self.label}, held by a thread that waits for "
                    f"{' -> '.join(cycle)}, which this thread holds; a statement holds the locks of the "
                    "fields it stores until it ends, so do not store (or call what stores) another "
                    "object's guard fields within a statement that stores this object's")
            _waits[me] = self
        try:
            with self._cv:
                self._queue.append(me)
                try:
                    while self._owner is not None or self._queue[0] != me:
                        self._cv.wait()
                finally:
                    self._queue.remove(me)
                self._owner, self._depth = me, 1
        finally:
            with _waits_lock:
                _waits.pop(me, None)

    def _cycle(self, me: int) -> list[str]:
        """The locks on the way from this one back to `me`, if waiting for it would never end
        (under _waits_lock; a thread in `_waits` is blocked, so the owners it leads to hold)."""
        path, lock, seen = [], self, set()
        while True:
            owner = lock._owner
            if owner is None or owner in seen:
                return []
            if owner == me:
                return path
            seen.add(owner)
            lock = _waits.get(owner)
            if lock is None:
                return []
            path.append(lock.label)

    def release(self) -> None:
        with self._lock:
            if self._owner != _get_ident():
                raise RuntimeError("release of a FIFO lock not held by this thread")
            self._depth -= 1
            if not self._depth:
                self._owner = None
                if self._queue:  # a waiter queues itself under this lock before it waits
                    self._cv.notify_all()

    def held(self) -> bool:
        return self._owner == _get_ident()

    def __enter__(self) -> "FifoLock":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
