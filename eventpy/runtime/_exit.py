"""What a process owes when it ends without shutdown(): the embedded overlay's deliveries run, then
every node closes and sends what it queued (registered with atexit by api)."""

from __future__ import annotations

import logging
import time

from . import api
from ._executor import _here
from ._process import _lock, _nodes, drain

CALLBACKS_BUDGET = 5.0  # seconds shutdown waits for the callbacks already running (all nodes together)
EXIT_DRAIN_BUDGET = 5.0  # seconds the deliveries still owed at the end may take, in all (README)
_spent = 0.0  # of EXIT_DRAIN_BUDGET, by `eventpy run`'s drain at the program's end (drain_at_program_end)


def let_callbacks_finish(nodes: list, budget: float = CALLBACKS_BUDGET) -> None:
    """Before `shutdown` closes the nodes: their subscriptions end (no delivery starts any more),
    then the callbacks already running finish, up to `budget` seconds in all, so that what they
    publish goes out. A relay stopped while its feed ran had its node closed under a running
    callback: the callback's publish raised "node ... is closed", logged with a traceback at every
    stop, and its event was lost. Not from a callback: it would wait for itself."""
    if _here.running:
        return
    for node in nodes:
        local = node._local
        with local.lock:
            if local.closed:
                continue
            for state in list(local.core.subs.values()):
                local.core.unsubscribe(state)
        local.overlay.wake(local)
    deadline = time.monotonic() + budget
    for node in nodes:
        if not node._local.wait_local(max(0.0, deadline - time.monotonic())):
            logging.getLogger("eventpy").warning(
                "shutdown: callbacks still running after %gs were not waited for; what they publish "
                "from now on is refused (their node is closed)", budget)
            return


def drain_at_program_end(budget: float = EXIT_DRAIN_BUDGET) -> None:
    """`eventpy run`'s drain once the program has returned (or raised, or had SIGTERM), on TCP
    nodes too: it spends the exit drain's budget, which `drain_at_exit` then only finishes. Each
    waited its own 5 s, so a program with a callback still running took 5 s more to end under
    `eventpy run` than under `python` (15 s in all, systemd's stop too), against the README's "up
    to 5 s in all"."""
    global _spent
    start = time.monotonic()
    try:
        drain(budget)
    except Exception as e:  # a callback still running, a node closing meanwhile: said as at exit
        logging.getLogger("eventpy").warning("at exit, not waited for: %s", e)
        _spent = budget  # said once: the exit drain would only time out on it again
    else:
        _spent += time.monotonic() - start


def drain_at_exit(budget: float = EXIT_DRAIN_BUDGET) -> None:
    """Deliveries still owed in this process run before it ends: an embedded overlay is drained,
    again while callbacks keep publishing (chains of events), up to `budget` seconds in all, so a
    script that publishes to its own subscriptions and ends sees their callbacks run. Runs once
    every other thread of the program has ended; the delivery threads are still there."""
    with _lock:
        overlay = api._overlay
        embedded = overlay is not None and any(n._local.overlay is overlay for n in _nodes)
    budget -= _spent  # what `eventpy run`'s drain left of it
    if not embedded or budget <= 0:
        return
    deadline = time.monotonic() + budget
    log = logging.getLogger("eventpy")
    while True:
        published = api.stats()["published"]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            log.warning("at exit, callbacks still publishing after %gs were not waited for", budget)
            return
        try:
            drain(remaining)
        except Exception as e:  # a callback still running, a node closing meanwhile: not at exit
            log.warning("at exit, not waited for: %s", e)
            return
        if api.stats()["published"] == published:
            return  # nothing published by the callbacks that ran: everything owed has run


def at_exit() -> None:
    """A program that ends without shutdown(): what the embedded overlay still owes is delivered,
    then its nodes close (their subscriptions end) and what they queued is still sent to their
    broker, so `publish` followed by the end of the script loses nothing."""
    try:
        drain_at_exit()
        api.shutdown()
    except KeyboardInterrupt:  # a second Ctrl-C while it waited: what it gave up is logged
        logging.getLogger("eventpy").warning("at exit: interrupted (Ctrl-C); not waited for the rest")
    except Exception:  # never a traceback from us at exit
        logging.getLogger("eventpy").debug("shutdown at exit failed", exc_info=True)
