"""What closed nodes still count, for `eventpy.stats()`.

`Node.close()` folds the node's counters into the process's, but a node goes on counting a moment
after: the batch of callbacks running when it closed adds its `delivered` when it ends, and the
UNSUBs close() queued count in `unsub_sent` once the transport takes them. Those were lost:
`eventpy.stats()["delivered"]` came out lower than the callbacks that ran (the soak's subscribers,
which close their node now and then, logged one callback more than it counted). A closed node's
core counts into a `CountedAfterClose` instead, which passes every later change on to `late`.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

_lock = threading.Lock()  # its own: a change is counted under the node's lock, which close() takes
late: Counter = Counter()  # under the module lock of _process


class CountedAfterClose(Counter):
    """A closed node's counters: every change from now on also reaches `late`."""

    def __setitem__(self, key: str, value: int) -> None:
        change = value - self.get(key, 0)
        super().__setitem__(key, value)
        if change:
            with _lock:
                late[key] += change


def take_over(core: Any) -> Counter:
    """The core's counters as they are (call under its node's lock); later changes go to `late`."""
    now = Counter(core.stats)
    counted = CountedAfterClose()
    dict.update(counted, now)  # not Counter.update: that would count them again
    core._stats = counted
    return now


def counted_late() -> Counter:
    with _lock:
        return Counter(late)


def forget() -> None:
    with _lock:
        late.clear()
