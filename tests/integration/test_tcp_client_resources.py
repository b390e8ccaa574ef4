"""What a TCP client process holds is given back at `eventpy.shutdown()`: a program that connects,
works and shuts down again and again (a game server reconnecting each round) keeps a constant
number of file descriptors and threads."""

from __future__ import annotations

import os
import threading

import eventpy

Pos = eventpy.EventType("resources.Pos", x=float)


def _event_loop_fds() -> int:
    """The asyncio loops' epoll descriptors this process holds (one per loop not closed)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[eventpoll]"
        except OSError:  # the listing's own descriptor, gone by now
            pass
    return count


def test_shutdown_closes_the_client_loop_and_its_descriptors(broker_server):
    server = broker_server()
    before = _event_loop_fds()
    for _ in range(3):
        node = eventpy.connect(f"tcp://127.0.0.1:{server.port}", rum=True)
        sub = node.subscribe(Pos, "x < limit", params={"limit": 1.0})
        for i in range(20):
            sub.update(limit=float(i % 5))
        sub.confirm(timeout=10.0)
        overlay = node._local.overlay
        eventpy.shutdown()
        assert overlay.loop.is_closed()
        # before: the loop was stopped and never closed, an epoll fd and a socket pair per round
        # (at most: a loop of an earlier test in this process may be collected meanwhile)
        assert _event_loop_fds() <= before
    assert not [t.name for t in threading.enumerate() if t.name == "eventpy-tcp"]
