"""Statements that store guard fields of two objects, in two threads, crossing: each holds its
own object's field lock (Fig. 13: for the whole statement) and waits for the other's. Before,
both threads hung for good (two delivery threads of eight, and every later event of those
subscriptions); now the thread that closes the cycle raises eventpy.FieldDeadlock naming the
fields, and the other goes on."""

from __future__ import annotations

import threading

import pytest

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime.lang import FifoLock

SRC = '''
import threading

class Cell:
    meet = threading.Barrier(2)  # both callbacks inside their statement before either stores

    def __init__(self, name: str):
        self.name = name
        self.r = 10.0
        self.peer = None
        self.failed = []
        self.seen = []

    event def tick(self, v: float) when v < self.r:
        if v != 0.0:
            self.seen.append(v)
            return
        try:
            self.r, self.peer.r = Cell.wait_for_the_other(self.peer.r + 1.0), self.r + 1.0
        except Exception as e:
            self.failed.append(e)

    @staticmethod
    def wait_for_the_other(value):
        Cell.meet.wait(timeout=20)
        return value
'''


def test_crossing_statements_on_two_objects_raise_instead_of_hanging():
    eventpy.shutdown()
    try:
        ns: dict = {"__name__": "crossing_cells"}
        exec(compile(compile_source(SRC, "crossing_cells.epy"), "crossing_cells.epy", "exec"), ns)
        a, b = ns["Cell"]("a"), ns["Cell"]("b")
        a.peer, b.peer = b, a
        ns["Cell"].tick(0.0)  # both callbacks run at once, on two delivery threads
        eventpy.drain(timeout=30.0)  # before: TimeoutError, callbacks still running
        failed = a.failed + b.failed
        assert len(failed) == 1 and isinstance(failed[0], eventpy.FieldDeadlock)
        assert "Cell.r of object" in str(failed[0]) and "deadlock" in str(failed[0])
        # the other statement completed (both fields 11.0: each side read 10.0), the failed one
        # kept the store it made before it raised; every store reached the broker
        assert a.r == b.r == 11.0
        for v in (10.5, 11.5):
            ns["Cell"].tick(v)
        eventpy.drain(timeout=10.0)
        assert a.seen == b.seen == [10.5]
    finally:
        eventpy.shutdown()


def test_a_lock_chain_through_three_threads_is_found_and_the_rest_is_unharmed():
    locks = [FifoLock() for i in range(3)]
    holding = threading.Barrier(3)
    errors: list[BaseException] = []
    finished = []

    def take(i: int) -> None:
        with locks[i]:
            holding.wait(timeout=20)
            try:
                with locks[(i + 1) % 3]:
                    finished.append(i)
            except eventpy.FieldDeadlock as e:
                errors.append(e)

    threads = [threading.Thread(target=take, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=15)
    assert not any(t.is_alive() for t in threads)  # before: all three waited for ever
    assert len(errors) == 1 and len(finished) == 2
    assert " -> " in str(errors[0])  # the chain through the other two threads


def test_plain_contention_still_waits_in_order_and_reentry_is_fine():
    lock = FifoLock()
    order = []
    lock.acquire()
    ready = threading.Barrier(4)

    def waiter(i: int) -> None:
        ready.wait(timeout=20)
        with lock:
            with lock:  # reentrant
                order.append(i)

    threads = [threading.Thread(target=waiter, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    ready.wait(timeout=20)
    lock.release()
    for t in threads:
        t.join(timeout=20)
    assert sorted(order) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="not held"):
        lock.release()


def test_a_statement_of_several_fields_that_meets_a_deadlock_gives_back_the_locks_it_took():
    # `assigning(y, "a", "b")` took y.a, then found y.b held by a thread waiting for x.a, which
    # this thread holds: it raises, and y.a must not stay held (no __exit__ follows a failed
    # __enter__), else every later store of y.a waits for ever.
    import time

    from eventpy.runtime import _fifo_lock
    from eventpy.runtime.lang import assigning

    eventpy.shutdown()
    try:
        ns: dict = {"__name__": "two_fields"}
        src = "class Pair:\n    def __init__(self):\n        self.a = 0.0\n        self.b = 0.0\n\n" \
              "    event def e(self, v: float) when v < self.a + self.b:\n        pass\n"
        exec(compile(compile_source(src, "two_fields.epy"), "two_fields.epy", "exec"), ns)
        x, y = ns["Pair"](), ns["Pair"]()
        holding = threading.Barrier(2)
        outcome: dict[str, BaseException | None] = {}

        def first() -> None:  # holds x.a, then wants y.a and y.b
            with assigning(x, "a"):
                holding.wait(timeout=20)
                deadline = time.monotonic() + 20
                while not _fifo_lock._waits and time.monotonic() < deadline:
                    time.sleep(0.001)  # until the other thread waits for x.a
                try:
                    with assigning(y, "a", "b"):
                        pass
                    outcome["first"] = None
                except eventpy.FieldDeadlock as e:
                    outcome["first"] = e

        def second() -> None:  # holds y.b, then wants x.a
            with assigning(y, "b"):
                holding.wait(timeout=20)
                with assigning(x, "a"):
                    outcome["second"] = None

        threads = [threading.Thread(target=f, daemon=True) for f in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        assert not any(t.is_alive() for t in threads)
        assert isinstance(outcome["first"], eventpy.FieldDeadlock) and outcome["second"] is None
        stored = threading.Thread(target=lambda: setattr(y, "a", 1.0), daemon=True)
        stored.start()
        stored.join(timeout=20)
        assert not stored.is_alive() and y.a == 1.0  # before: y.a stayed held by the first thread
    finally:
        eventpy.shutdown()
