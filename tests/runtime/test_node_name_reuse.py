"""A node name is unique while its node is open; once `close()` returns, the process may give it
to a new node. On the embedded overlay the name stayed taken until the overlay's thread had
handled the old node's disconnection, so `connect(name=...)` right after closing a node of that
name failed, now and then, with `a node named 'x' is already attached`."""

from __future__ import annotations

import pytest

import eventpy

Ping = eventpy.EventType("names.Ping", n=int)


def test_a_name_closed_is_free_for_a_new_node_at_once(eventpy_overlay):
    for _ in range(300):  # the overlay's thread is busy with each close: the window came up often
        eventpy.connect(name="desk").close()
    node = eventpy.connect(name="desk")
    got = []
    node.subscribe(Ping, "n > 0", on_event=lambda e: got.append(e.n))
    eventpy.drain(10)
    node.publish(Ping, n=1)
    eventpy.drain(10)
    assert got == [1]  # the new node is attached and served under the name


def test_a_name_an_open_node_holds_is_still_refused(eventpy_overlay):
    eventpy.connect(name="held")
    with pytest.raises(ValueError, match="a node named 'held' is already attached"):
        eventpy.connect(name="held")
