"""This process's nodes, and the drain barrier over them (`eventpy.drain`, DESIGN §1).

drain() waits for the overlay's barrier and then for what the callbacks it waited for sent in
turn (a chain of events that this process started), round after round; so it counts what event
callbacks send, and tells this process's chains from other processes' (a feed that never
stops). The registry of nodes lives here because both the API (connect, stats, shutdown) and the
barrier read it.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from ._executor import describe_running, handled_event, in_callback
from ._params import answer_budget, check_timeout

_lock = threading.Lock()
_nodes: list[Any] = []  # every open Node of this process (api.Node)
_sent_in_callbacks = 0  # messages event callbacks sent: drain() goes on while they send more

# Events this process published from callbacks handling events of other processes, (node, seq):
# their own callbacks are not this process's chain either (a feed's quote -> our alert -> our
# pager's page: the page was counted, and drain() timed out while the feed ran). Bounded: an
# entry forgotten counts its event as ours, which only makes drain() wait for it, as before.
_foreign: dict[tuple[str, int], None] = {}
_FOREIGN_KEPT = 1 << 15


def _sent_by_callback() -> bool:
    """Count a message an event callback sent (an event, an update, a subscription made or
    ended) while handling an event of a chain this process started: drain() waits for what the
    events before it caused in turn (a rally of events). What callbacks send on events from other
    processes (a feed that never stops), or on events those callbacks published, is not this
    process's chain: drain() does not wait for it. False if the send is not counted."""
    global _sent_in_callbacks
    handled = handled_event()
    if handled is None:
        return True
    if handled in _foreign or not any(n.name == handled[0] for n in _nodes):
        return False
    with _lock:
        _sent_in_callbacks += 1
    return True


def _published_by_callback(node: str, seq: int) -> None:
    """An event published by a callback: if its chain is not ours, neither is what it causes."""
    if not _sent_by_callback():
        with _lock:
            _foreign[(node, seq)] = None
            if len(_foreign) > _FOREIGN_KEPT:
                del _foreign[next(iter(_foreign))]


def unreachable(local: Any) -> str:
    """Why `local`'s broker cannot answer it now ("" if it can, or if its transport cannot tell)."""
    says = getattr(local.overlay, "unreachable", None)
    return says(local) if says is not None else ""


def drain(timeout: float = 10.0) -> None:
    """Wait until the overlay is quiet (DESIGN §1): every message sent by this process before the
    call has been processed by every broker and client it reaches, every delivered event's
    callback has returned, and so have those of what these callbacks sent in turn (an event
    method that publishes, or changes a guard field). A barrier alone returned while the second
    event of a chain was still on its way. TimeoutError if the callbacks of this process still
    send after `timeout` seconds (a chain of events that does not end)."""
    check_timeout("drain", timeout)
    if in_callback():
        raise RuntimeError("drain() waits until every event callback has returned, this one included: "
                           "call it from the program's own thread, not from an event callback or event method")
    try:
        _drain(timeout)
    except TimeoutError as e:
        if not _on_a_running_loop():
            raise
        # a callback handing its event to this loop and waiting (run_coroutine_threadsafe(...).result())
        # cannot return while drain() holds the loop: its message named only the "stuck" callback.
        # The hint is eventpy.aio's drain (README), not asyncio.to_thread: a to_thread drain
        # cancelled by Ctrl-C holds asyncio.run's end for the rest of its timeout
        raise TimeoutError(f"{e}; drain() was called on the thread of a running asyncio loop and "
                           "blocked that loop for its whole timeout, so a callback waiting for the loop "
                           "could not return: from a coroutine, await eventpy.aio.drain("
                           f"{timeout:g})") from None


def _on_a_running_loop() -> bool:
    asyncio = sys.modules.get("asyncio")  # not imported: no loop runs (and eventpy does not import it)
    return asyncio is not None and asyncio._get_running_loop() is not None


def _drain(timeout: float) -> None:
    """`drain` past its checks."""
    deadline = time.monotonic() + timeout
    chained = False  # callbacks sent something during an earlier round
    while True:
        before = _sent_in_callbacks
        try:
            _barrier(deadline, timeout)
        except TimeoutError:
            if not chained and _sent_in_callbacks == before:
                raise  # a slow callback or broker, not a chain: the barrier's message names it
            stuck = True
        else:
            if _sent_in_callbacks == before:
                return  # the callbacks it waited for sent nothing: nothing more is on its way
            chained, stuck = True, time.monotonic() >= deadline
        if stuck:
            raise TimeoutError(f"drain: event callbacks were still publishing or updating fields after "
                               f"{timeout}s (events that cause events without end?)") from None


def _barrier(deadline: float, timeout: float) -> None:
    """Every message sent by this process so far processed, and the callbacks it caused returned."""
    with _lock:
        nodes = list(_nodes)
    budget = answer_budget(max(0.0, deadline - time.monotonic()))
    waits = [(n, *n._local.flush(budget)) for n in nodes if not n._local.closed]
    for node, token, done in waits:
        answered = done.wait(max(0.0, deadline - time.monotonic()))
        with node._local.lock:
            failed = node._local.flush_failed.pop(token, "")
        if not answered or failed:
            for n, t, _ in waits:  # not asked again after a reconnection, nor kept when answered
                n._local.give_up(t)
            if failed:
                # the brokers stop waiting for a silent link before the drain's end, so that its
                # name reaches the program: say how long that was, not the whole timeout
                waited = timeout - max(0.0, deadline - time.monotonic())
                raise TimeoutError(f"drain: {failed} did not answer within {waited:.1f}s of the drain's "
                                   f"{timeout:g}s (the flush of node {node.name}, through broker "
                                   f"{node._local.overlay.edge_name()}; the brokers give up on a silent link "
                                   f"before the drain does, so that its name reaches you)")
            why = unreachable(node._local)
            raise TimeoutError(f"drain: node {node.name} had no answer to its flush from broker "
                               f"{node._local.overlay.edge_name()} within {timeout}s" + (f": {why}" if why else ""))
    for node, _, _ in waits:
        if not node._local.wait_local(max(0.0, deadline - time.monotonic())):
            running = describe_running(time.monotonic())  # a callback that blocks: which one
            raise TimeoutError(f"drain: callbacks of node {node.name} still running after {timeout}s"
                               + (f": {running}" if running else ""))
