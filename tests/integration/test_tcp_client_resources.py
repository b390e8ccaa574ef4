"""What a TCP client process holds is given back at `eventpy.shutdown()`: a program that connects,
works and shuts down again and again (a game server reconnecting each round) keeps a constant
number of file descriptors and threads."""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref

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


def _gone(ref: weakref.ref, timeout: float = 10.0) -> bool:
    """Is the object collected, within `timeout` (its connection keeper ends on the client's
    loop once the node's last messages are written)?"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gc.collect()
        if ref() is None:
            return True
        time.sleep(0.05)
    return False


def test_a_closed_node_is_given_back_while_the_process_goes_on(broker_server):
    """A long-lived process that closes nodes and connects new ones (a client that reconnects
    every so often) keeps what each closed node held only until its last messages are sent.
    Before, the TCP overlay kept every closed node in its tables, with its client core, stream,
    socket and delivery queue: the soak's subscribers grew by a node's worth at each reconnect."""
    server = broker_server()
    url = f"tcp://127.0.0.1:{server.port}"
    keep = eventpy.connect(url, name="keeper")  # the overlay of the process stays up
    refs = []
    for i in range(3):
        node = eventpy.connect(url, name=f"churn-{i}")
        sub = node.subscribe(Pos, "x < limit", params={"limit": 1.0}, on_event=lambda e: None)
        sub.update(limit=2.0)
        sub.confirm(timeout=10.0)
        refs.append(weakref.ref(node._local))
        node.close()
        del node, sub
    overlay = keep._local.overlay
    assert all(_gone(r) for r in refs)
    assert [n.link for n in overlay._runs] == ["keeper"]
    # and a name closed can be taken again by a new node of the process, which works
    again = eventpy.connect(url, name="churn-0")
    got = []
    again.subscribe(Pos, "x < 5", on_event=got.append).confirm(timeout=10.0)
    keep.advertise(Pos)
    eventpy.drain(10.0)
    keep.publish(Pos, x=1.0)
    eventpy.drain(10.0)
    assert [e.x for e in got] == [1.0]
