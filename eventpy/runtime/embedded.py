"""The embedded overlay: one broker inside the process, driven by one thread.

Threads and ownership (see docs/concurrency.md):
* the *overlay thread* owns the broker: only it calls `Broker.handle`; it takes messages from the
  nodes' outboxes (round robin, small batches, so a lagging broker lets UPDs coalesce in the
  outboxes) and hands the broker's output to the target nodes;
* each `LocalNode` has a lock around its `ClientCore`; user threads (publish, subscribe, update)
  and the overlay thread (receive) take it briefly, never while running user code;
* callbacks run on the delivery pool, one serial queue per subscription.
Lock order: node lock, then the overlay's condition; never the other way round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any, Callable

from ._executor import DeliveryPool
from ._local_node import _TAKE, MAX_OUTBOX, PUBLISH_WAIT, Batches, LocalNode  # noqa: F401 (re-exported)
from .broker import Broker

log = logging.getLogger("eventpy.embedded")

# seconds `attach` waits for a closed node's name to be released (its disconnection handled by the
# overlay's thread, which first hands the broker what the node queued)
RELEASE_TIMEOUT = 5.0


class EmbeddedOverlay:
    def __init__(self, *, mode: str = "parametric", matcher: str = "fastint", summary: str = "attribute",
                 clock: Callable[[], float] = time.time) -> None:
        """`clock`: the overlay's clock (publication times, elapsed(), the update monitor's
        window), wall-clock time unless a test gives one it moves itself (eventpy.testing)."""
        self.mode = mode
        self.clock = clock
        self.broker = Broker("embedded", mode=mode, matcher=matcher, summary=summary, overlay_clock=clock)
        self.pool = DeliveryPool()
        self.nodes: dict[str, LocalNode] = {}
        self._cv = threading.Condition()
        self._ready: deque[LocalNode] = deque()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="eventpy-overlay", daemon=True)
        self._thread.start()

    def config(self) -> dict:
        return {"mode": self.mode, "matcher": self.broker.matcher_name, "summary": self.broker.summary_name}

    def edge_name(self) -> str:
        return self.broker.name

    def unreachable(self, node: LocalNode) -> str:
        """Why the broker cannot answer `node` now: in this process it always can ("")."""
        return ""

    def attach(self, name: str | None = None) -> LocalNode:
        node = LocalNode(self, name)
        with self._cv:
            # a node closed under this name holds it until this overlay's thread has sent what it
            # queued and disconnected it, a moment: its name is free once close() returns, so wait
            held = self.nodes.get(node.link)
            if held is not None and held.closed:
                self._cv.wait_for(lambda: self.nodes.get(node.link) is not held or self._stopped,
                                  RELEASE_TIMEOUT)
            if node.link in self.nodes:
                raise ValueError(f"a node named {node.link!r} is already attached")
            self.nodes[node.link] = node
            self._ready.append(("connect", node))  # type: ignore[arg-type]
            self._cv.notify()
        return node

    def detach(self, node: LocalNode) -> None:
        with self._cv:
            self._ready.append(("disconnect", node))  # type: ignore[arg-type]
            self._cv.notify()

    def wake(self, node: LocalNode) -> None:
        if node._flagged:  # queued and not yet taken from: no lock per publish (the overlay thread
            return  # clears the flag before it takes, so a message queued before this is taken)
        with self._cv:
            if not node._flagged:
                node._flagged = True
                self._ready.append(node)
                self._cv.notify()

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        self._thread.join(timeout=5)
        self.pool.shutdown()

    def _loop(self) -> None:
        while True:
            with self._cv:
                item = None
                while not self._ready and not self._stopped:
                    # a drain's or a confirm's budget running out: the broker then answers naming
                    # the node that did not (a callback that does not return). Evolving
                    # subscriptions are not timed here: the embedded broker keeps them fresh
                    # through its own traffic (broker._evolving)
                    due = self.broker.next_barrier_deadline()
                    if due is None:
                        self._cv.wait()
                        continue
                    wait = due - self.broker.clock()
                    if wait <= 0:
                        break  # a budget ran out: tick the broker below
                    self._cv.wait(wait)
                if self._stopped:
                    return
                if self._ready:
                    item = self._ready.popleft()
                    if isinstance(item, LocalNode):
                        item._flagged = False
            try:
                if item is None:
                    self._route(self.broker.tick())
                else:
                    self._step(item)
            except Exception:  # the overlay thread must survive anything a message does
                log.exception("embedded overlay: unexpected error")

    def _step(self, item: Any) -> None:
        if isinstance(item, tuple):
            action, node = item
            if action == "connect":
                self._route(self.broker.connect(node.link, "client"))
            else:
                # what the node queued before it closed goes first: the broker takes a node's
                # messages _TAKE at a time, so the rest of a burst would meet an unknown link
                while node.has_output():
                    self._take_from(node)
                self._route(self.broker.disconnect(node.link))
                with self._cv:
                    self.nodes.pop(node.link, None)
                    self._cv.notify_all()  # an attach waiting for this name
            return
        self._take_from(item)
        if item.has_output():
            self.wake(item)

    def _take_from(self, node: LocalNode) -> None:
        """One turn of a node: up to _TAKE of its messages handled, what they caused routed."""
        sends: list = []
        handle = self.broker.handle
        for msg in node.take():
            sends += handle(node.link, msg)
        self._route(sends)

    def _route(self, sends: list) -> None:
        """What the broker sent while handling one batch, to each node at once, in order: one
        delivery task per queue and batch instead of one per event (a thread hand-off each cost
        an embedded subscriber ~30 us per event)."""
        per_link: dict[str, list] = {}
        for link, msg in sends:
            per_link.setdefault(link, []).append(msg)
        for link, msgs in per_link.items():
            target = self.nodes.get(link)
            if target is not None:
                target.receive_many(msgs)
