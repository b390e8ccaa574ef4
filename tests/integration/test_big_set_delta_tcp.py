"""A set parameter whose change travels as the members removed and added (001 Algorithm 2) when
that is fewer members than the new set. Counted in members, a change that swaps one long string
for another is two members against the set's four, yet twice the bytes: with both sets fitting a
frame, the delta did not, and the TCP transport dropped the UPD (logged, counted `unsendable`)
after update() returned. The broker kept the old set and events the new one admitted, published
after confirm(), were never delivered. A delta is now used only when it is also smaller in bytes
(bounded from above) than the new set, so it fits wherever the set does."""

from __future__ import annotations

import eventpy

Tag = eventpy.EventType("bigdelta.Tag", name=str)


def test_a_set_change_that_swaps_long_members_reaches_the_broker(broker_server):
    server = broker_server("b0")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    node.advertise(Tag)
    old, new = "x" * 600_000, "y" * 600_000  # each set fits a 1 MiB frame; both strings do not
    got = []
    sub = node.subscribe(Tag, "name in names", params={"names": {old, "s1", "s2", "s3"}},
                         on_event=lambda ev: got.append(ev.name[:1]))
    eventpy.drain(timeout=10.0)
    sub.update(names={new, "s1", "s2", "s3"})
    sub.confirm(timeout=10.0)
    node.publish(Tag, name=new)
    node.publish(Tag, name="s1")
    eventpy.drain(timeout=10.0)
    assert got == ["y", "s"]  # before: ['s'] (the UPD was dropped)
    assert not node.stats().get("unsendable")
