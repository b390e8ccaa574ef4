"""The delivery pool's threads: `size` of them for callbacks in parallel, and more, one at a time,
while every one of them is held by a callback that does not return.

Each busy serial queue (a subscription's, an .epy object's) holds a worker until it is empty, so
`size` callbacks that block (a handoff to an asyncio loop whose bounded queue is full, waiting
for room; a lock; a slow request) held all `size` workers, and every other subscription of the
process got nothing until one returned, although README says a callback that blocks holds the
later events of its own subscription. A watchdog, started while tasks wait for a worker, adds a
worker when none has taken a task for `STALL` seconds (up to `MAX_THREADS` in all); a worker
beyond `size` that finds nothing to do for `RETIRE` seconds ends.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from typing import Callable

log = logging.getLogger("eventpy.delivery")
STALL = 0.5  # seconds with tasks waiting and no worker taking one: every worker is held
RETIRE = 10.0  # seconds an extra worker waits for a task before it ends
MAX_THREADS = 256  # in all: past it, a process with that many callbacks blocked waits as before


class Workers:
    """Up to `size` daemon threads running submitted callables, started as work comes, plus
    extra ones while all of them are held (above). Not concurrent.futures: its executors refuse
    work once the main thread has returned, while other threads of the program may still
    publish and be owed callbacks (the exit drain of eventpy.api runs at the end, with these
    threads still there)."""

    _names = itertools.count(1)

    def __init__(self, size: int) -> None:
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._size = size
        # Counted under the lock, not a semaphore a worker released after each task: a worker
        # that then took a task already queued left its release behind, and later submits spent
        # those as if a worker waited (no thread started, no watchdog: held for ever).
        self._lock = threading.Lock()
        self._waiting = 0  # workers in (or entering) get, not yet past a task
        self._queued = 0  # tasks put and not yet taken
        self._threads = 0
        self._taken = time.monotonic()  # when a worker last took a task
        self._watching = False  # the watchdog runs
        self._stopped = False

    def submit(self, task: Callable[[], object]) -> None:
        with self._lock:
            self._queued += 1
            self._tasks.put(task)
            if self._waiting >= self._queued:
                return  # a waiting worker takes it
            if self._threads >= self._size:
                if not self._watching and not self._stopped:  # it waits for a worker that finishes
                    self._watching = True
                    threading.Thread(target=self._watch, name="eventpy-deliver-watch", daemon=True).start()
                return
            self._threads += 1
        self._start_worker()

    def _start_worker(self) -> None:
        threading.Thread(target=self._work, name=f"eventpy-deliver-{next(self._names)}", daemon=True).start()

    def _work(self) -> None:
        get, lock = self._tasks.get, self._lock
        with lock:
            self._waiting += 1
        while True:
            try:
                task = get(timeout=RETIRE)
            except queue.Empty:
                with lock:  # an extra worker ends, unless the others waiting are too few for the tasks
                    if self._threads > self._size and self._waiting > self._queued:
                        self._waiting -= 1
                        self._threads -= 1
                        return
                continue
            with lock:
                self._waiting -= 1
                if task is None:
                    return
                self._queued -= 1
            self._taken = time.monotonic()
            try:
                task()
            except BaseException as e:  # SerialQueue reports its tasks' errors; this is a bug of ours
                log.error("delivery worker: unexpected error", exc_info=e)
            with lock:
                self._waiting += 1

    def _watch(self) -> None:
        """While tasks wait: a worker more each time none has been taken for STALL seconds."""
        while True:
            time.sleep(STALL / 4)
            with self._lock:
                if self._stopped or self._queued <= self._waiting:  # (a submit after this starts a new watch)
                    self._watching = False
                    return
                held = time.monotonic() - self._taken >= STALL and self._threads < MAX_THREADS
                if held:
                    self._threads += 1
                    self._taken = time.monotonic()  # the next one after another STALL, if still held
            if held:
                self._start_worker()

    def shutdown(self) -> None:
        with self._lock:
            n, self._threads = self._threads, 0
            self._stopped = True
        for _ in range(n):
            self._tasks.put(None)
