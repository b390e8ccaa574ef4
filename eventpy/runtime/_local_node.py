"""A node of the embedded overlay, or of the TCP overlay's client side (tcp_client.py): a
`ClientCore` behind a lock, its outbox taken by the transport, and the deliveries of what the
broker sent it, one serial queue per subscription group on the delivery pool. See embedded.py
for the threads and the lock order."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from time import monotonic
from typing import TYPE_CHECKING, Any, Callable

from ._async_callbacks import returned_awaitable
from ._executor import SerialQueue, _here, callback_failed, running_callbacks
from .client import ClientCore, SubscriptionState
from .messages import Ack, AckReq, Flush, FlushAck, Pub
from .model import received_event

if TYPE_CHECKING:
    from .embedded import EmbeddedOverlay

log = logging.getLogger("eventpy.embedded")
_BATCH = 64  # PUBs gathered per hold of the node lock
# messages a transport takes from a node per turn: more per turn is fewer lock hand-offs between
# the publishing thread and the transport's (64 -> 256: embedded 120k -> 160k events/s), fewer
# is fairer between nodes and leaves more time for UPDs to coalesce in the outbox
_TAKE = 256
Batches = dict[int, tuple[SerialQueue, list, list]]  # id(delivery group) -> its queue, subscriptions, event data
_names = itertools.count(1)
# A node holds at most this many messages for its broker: past it, publish waits for the
# transport to take some (backpressure from a slow or unreachable broker instead of a memory that
# grows without bound), and gives up after PUBLISH_WAIT seconds without publishing.
MAX_OUTBOX = 100_000
PUBLISH_WAIT = 60.0

class LocalNode:
    """A client attached to the embedded broker through an in-memory link."""

    def __init__(self, overlay: "EmbeddedOverlay", name: str | None = None) -> None:
        self.overlay = overlay
        self.link = name or f"node-{next(_names)}"
        self.lock = threading.RLock()
        # the overlay's clock (a test's ManualClock, eventpy.testing); a TCP overlay's is the wall clock
        self.core = ClientCore(self.link, mode=overlay.mode, clock=getattr(overlay, "clock", time.time))
        self.queues: dict[int, SerialQueue] = {}  # id(delivery group) -> its serial queue
        # id(shared group) -> its open subscriptions (an .epy object's: one per event method and
        # class), so that the group's queue goes when the last of them closes, not never
        self._members: dict[int, int] = {}
        self._retired: list[SerialQueue] = []  # queues of closed subscriptions still running
        self.acks: dict[tuple, threading.Event] = {}
        # a FLUSH or ACKREQ asked again after a reconnection (`resync`): its new token -> the token
        # its waiter knows; and when each ACKREQ's budget ends (it is asked again with the rest)
        self._renamed: dict[tuple, tuple] = {}
        self._ack_deadlines: dict[tuple, float] = {}
        self._flush_deadlines: dict[tuple, float] = {}  # a FLUSH's budget ends (`resync` asks with the rest)
        self.flush_failed: dict[tuple, str] = {}  # FLUSH token (as its waiter knows it) -> who did not answer
        self.closed = False
        self._flagged = False  # queued in the overlay's ready list
        self.max_outbox = MAX_OUTBOX
        self.publish_wait = PUBLISH_WAIT
        self.room = threading.Condition(self.lock)  # notified when the transport takes, or on close
        self._waiting = 0  # publishers waiting for room

    # -- user side -------------------------------------------------------------------------------
    def send(self, action: Callable[[ClientCore], Any]) -> Any:
        """Run `action` on the core under the node lock, then let the overlay take the output."""
        with self.lock:
            if self.closed:
                raise RuntimeError(f"node {self.link} is closed")
            result = action(self.core)
        self.overlay.wake(self)
        return result

    def publish(self, etype: Any, values: tuple, wait: bool = True) -> int | None:
        """`send` of a publication without the closure (every event goes through here); its seq.
        With `wait=False`, None instead of waiting for room in a full outbox (eventpy.aio waits
        for it off its loop's thread)."""
        with self.lock:
            if len(self.core.outbox) >= self.max_outbox:
                if not wait and not self.closed:
                    self.overlay.wake(self)  # lock order: node lock, then the overlay's
                    return None
                self._wait_for_room()
            if self.closed:
                raise RuntimeError(f"node {self.link} is closed")
            seq = self.core.publish(etype, values)
        self.overlay.wake(self)
        return seq

    def mark_closed(self) -> None:
        """No more sends from users (under the node lock); a publish waiting for room gives up,
        and a drain or confirm waiting for an answer to this node stops waiting (a closed node's
        link is gone: the answer would never come)."""
        with self.lock:
            self.closed = True
            self.room.notify_all()
            waiting = list(self.acks.values())
        for done in waiting:
            done.set()

    def _wait_for_room(self) -> None:
        """Under the node lock (released while waiting): until the transport has taken some of
        the outbox, the node closes, or `publish_wait` runs out (TimeoutError, nothing published)."""
        self.overlay.wake(self)  # lock order: node lock, then the overlay's
        deadline = time.monotonic() + self.publish_wait
        self._waiting += 1
        try:
            while not self.closed and len(self.core.outbox) >= self.max_outbox:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self.no_room()
                self.room.wait(remaining)
        finally:
            self._waiting -= 1

    def no_room(self) -> TimeoutError:
        """What a publish that waited `publish_wait` for room in the outbox raises."""
        return TimeoutError(
            f"publish: {len(self.core.outbox):,} messages of node {self.link} have waited "
            f"{self.publish_wait:g}s for broker {self.overlay.edge_name()}, which is not taking "
            "them (down or overloaded); this event was not published")

    def wait_for_room(self, timeout: float) -> bool:
        """Wait until the outbox has room or the node closes (True), at most `timeout` seconds
        (False); publishes nothing (eventpy.aio's publish waits here on a thread of its own, and
        then publishes from its loop, so a cancelled publish has published nothing)."""
        with self.lock:
            self.overlay.wake(self)
            self._waiting += 1
            try:
                return self.room.wait_for(lambda: self.closed or len(self.core.outbox) < self.max_outbox, timeout)
            finally:
                self._waiting -= 1

    def flush(self, budget: float | None = None) -> tuple[tuple, threading.Event]:
        """A barrier (`drain`): the event is set when the broker answers the FLUSH; then
        `flush_failed.get(token)` names the peers that did not answer within `budget`."""
        done = threading.Event()
        with self.lock:
            token = self.core.flush(budget)
            self.acks[token] = done
            if budget is not None:
                self._flush_deadlines[token] = time.monotonic() + budget
        self.overlay.wake(self)
        return token, done

    def request_ack(self, budget: float) -> tuple[tuple, threading.Event]:
        """A cascading acknowledgement of the changes sent so far (000 §9.3): the event is set
        when the Ack arrives; `core.acked[token]` then names the brokers that failed."""
        done = threading.Event()
        with self.lock:
            token = self.core.request_ack(budget)
            self.acks[token] = done
            self._ack_deadlines[token] = time.monotonic() + budget
        self.overlay.wake(self)
        return token, done

    def give_up(self, token: tuple) -> None:
        """Nobody waits for `token` (a FLUSH or ACKREQ) any more: a late answer is not kept, and
        a reconnection does not ask it again."""
        with self.lock:
            for t in [new for new, old in self._renamed.items() if old == token] + [token]:
                self._renamed.pop(t, None)
                self._ack_deadlines.pop(t, None)
                self._flush_deadlines.pop(t, None)
                self.flush_failed.pop(t, None)
                self.acks.pop(t, None)
                self.core.acked.pop(t, None)

    def resync(self) -> None:
        """After the transport reconnected to a broker that forgot this node (`ClientCore.resync`).
        A FLUSH or ACKREQ that had been sent went down with the connection and is never answered,
        so a `drain()` or `confirm()` waiting for it would wait its whole timeout although the
        overlay is back: each one still awaited is asked again, under a new token (the old one may
        still be travelling in the overlay, where a token seen twice counts as a cycle)."""
        with self.lock:
            self.core.resync()
            queued = {m.token for m in self.core.outbox if type(m) in (Flush, AckReq)}
            for token in [t for t in self.acks if t not in queued]:
                deadline = self._ack_deadlines.pop(token, None)
                if deadline is None:
                    until = self._flush_deadlines.pop(token, None)
                    new = self.core.flush(None if until is None else max(0.0, until - time.monotonic()))
                    if until is not None:
                        self._flush_deadlines[new] = until
                else:
                    new = self.core.request_ack(max(0.0, deadline - time.monotonic()))
                    self._ack_deadlines[new] = deadline
                self.acks[new] = self.acks.pop(token)
                self._renamed[new] = self._renamed.pop(token, token)

    def wait_local(self, timeout: float | None) -> bool:
        """Wait until every delivery queued so far on this node has run."""
        done = threading.Event()
        self._after_deliveries(done.set)
        return done.wait(timeout)

    # -- overlay side ------------------------------------------------------------------------------
    def take(self, limit: int = _TAKE) -> list:
        """The next messages for the broker, at most `limit` (a transport's turn)."""
        with self.lock:
            out = self.core.take(limit)
            if self._waiting:
                self.room.notify_all()
            return out

    def has_output(self) -> bool:
        return bool(self.core.outbox)

    def receive(self, msg: Any) -> None:
        kind = type(msg)
        if kind is Flush:
            self._after_deliveries(lambda: self.send_ack(msg.token))
            return
        if kind is FlushAck:
            with self.lock:
                done = self.acks.pop(msg.token, None)
                waiter = self._renamed.pop(msg.token, msg.token)
                self._flush_deadlines.pop(msg.token, None)
                if done is not None and msg.failed:  # else nobody waits any more: keep nothing
                    self.flush_failed[waiter] = msg.failed
            if done is not None:
                done.set()
            return
        if kind is Ack:
            with self.lock:
                self.core.receive(msg)
                done = self.acks.pop(msg.ref, None)
                self._ack_deadlines.pop(msg.ref, None)
                failed = self.core.acked.pop(msg.ref, None)
                if done is not None:  # else nobody waits any more (a confirm timed out): keep nothing
                    self.core.acked[self._renamed.pop(msg.ref, msg.ref)] = failed  # as its waiter knows it
            if done is not None:
                done.set()
            return
        if kind is Pub:
            self.receive_many([msg])  # one delivery path, whether events come one by one or in reads
            return
        with self.lock:  # REFUSED: the core keeps the reason for the program
            self.core.receive(msg)

    def receive_many(self, msgs: list) -> None:
        """Several messages in arrival order: deliveries to one queue go as one task (fewer
        thread hand-offs under load); a FLUSH still waits for every delivery before it."""
        batches: Batches = {}
        self.gather(msgs, batches)
        self.submit(batches)

    def gather(self, msgs: list, batches: Batches) -> None:
        """`receive_many` without the final `submit`: the events join `batches` (a reader can
        gather several slices of one read and hand them off once). Any other message submits
        what was gathered first and is handled in its place.

        A queued delivery is its subscription (in a list per task) and the event's data in one
        tuple of scalars; the Event is built on the delivery thread. Such tuples leave the
        garbage collector's lists at its first look, so a backlog of deliveries does not grow the
        heap that every later collection walks (as queued Event objects did: ~0.5 us per event
        under load, tools/bench/hops.py)."""
        core = self.core
        i, n = 0, len(msgs)
        while i < n:
            if type(msgs[i]) is not Pub:
                self.submit(batches)
                self.receive(msgs[i])
                i += 1
                continue
            with self.lock:  # a few PUBs per acquisition; user threads get the lock in between
                end = min(n, i + _BATCH)
                while i < end and type(msg := msgs[i]) is Pub:
                    for state in core.targets(msg):
                        batch = batches.get(id(state.group))
                        if batch is None:
                            batch = batches[id(state.group)] = (self._queue(state), [], [])
                        batch[1].append(state)
                        batch[2].append((msg.values, msg.origin, msg.seq, msg.time))
                    i += 1

    def submit(self, batches: Batches) -> None:
        """Hand what `gather` collected to the delivery queues, one task per queue."""
        for q, states, data in batches.values():
            q.submit(lambda states=states, data=data: self._deliver_all(states, data))
        batches.clear()

    def _deliver_all(self, states: list, data: list) -> None:
        # The local filter runs without the node lock (the subscription's variables are replaced
        # by an update, never mutated), so the reading thread is not stalled once per event; the
        # counts reach the core's stats once per batch, before the batch counts as done.
        delivered = spurious = failed = 0
        here = _here  # the thread-local of _executor, read once per batch
        running, thread = running_callbacks, threading.get_ident()
        try:
            for state, d in zip(states, data):
                if state.closed:
                    continue
                if not state.plan.holds(d[0], state.values, d[3]):  # the local filter (Fig. 5 line 11)
                    spurious += 1
                    continue
                delivered += 1
                if state.on_event is not None:
                    here.origin, here.seq = d[1], d[2]  # what the callback sends may be part of a chain (drain)
                    event = received_event(state.etype, d[0], d[1:])
                    running[thread] = (state.on_event, event, monotonic())  # a drain's timeout names it
                    try:
                        result = state.on_event(event)
                    except BaseException as e:  # one failing callback does not drop the rest of the batch
                        failed += 1
                        callback_failed(e, state.on_event, event)
                    else:  # a coroutine nothing awaits is a lost event, said as such (_async_callbacks)
                        if result is not None and returned_awaitable(state.on_event, event, result):
                            failed += 1
        finally:
            running.pop(thread, None)
            with self.lock:
                self.core.stats["delivered"] += delivered
                self.core.stats["spurious"] += spurious
                if failed:  # a counter to watch: the tracebacks are only in the log
                    self.core.stats["callback_errors"] += failed

    def send_ack(self, token: tuple) -> None:
        with self.lock:
            self.core.flush_ack(token)
        self.overlay.wake(self)

    def _queue(self, state: SubscriptionState) -> SerialQueue:
        q = self.queues.get(id(state.group))
        if q is None:
            q = self.queues[id(state.group)] = self.overlay.pool.serial()
        return q

    def joined(self, state: SubscriptionState) -> None:
        """A subscription of a shared group (an .epy object's) was made: counted, so that
        `forget` knows when the group's last one closes."""
        if state.group is not state:
            with self.lock:
                self._members[id(state.group)] = self._members.get(id(state.group), 0) + 1

    def forget(self, state: SubscriptionState) -> None:
        """A subscription closed: its queue goes once no open subscription of its group is left
        (a game closing thousands of players would otherwise keep a queue for each, and every
        drain() would visit them all)."""
        with self.lock:
            key = id(state.group)
            if state.group is not state:
                left = self._members.get(key, 0) - 1
                if left > 0:
                    self._members[key] = left
                    return
                self._members.pop(key, None)
            q = self.queues.pop(key, None)
            if q is not None and not q.idle():  # drain still waits for what it is running
                self._retired.append(q)

    def _after_deliveries(self, then: Callable[[], None]) -> None:
        """Call `then` once every delivery queued before now has run (a marker per busy queue)."""
        with self.lock:
            self._retired = [q for q in self._retired if not q.idle()]
            queues = [*self.queues.values(), *self._retired]
        remaining = [len(queues) + 1]
        lock = threading.Lock()

        def one_done() -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                then()

        for q in queues:
            q.submit(one_done)
        one_done()
