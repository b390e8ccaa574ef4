"""What one message carries is measured as it travels: strings of several bytes a character
together, and a parameter once in every predicate that reads it. Before, two strings of 200,000
emoji each (800 KB each) were counted as 400,000 bytes in all and passed, and a set read by two
predicates was counted once; the transport then dropped the message with a log line."""

from __future__ import annotations

import pytest

import eventpy
from eventpy.runtime.messages import Upd
from eventpy.runtime.model import ValueSet
from eventpy.runtime.wire import FrameDecoder

Two = eventpy.EventType("big.Pair", a=str, b=str, x=float)
EMOJI = "\U0001F600"  # 4 bytes in UTF-8


def test_multibyte_strings_are_measured_together(broker_server):
    server = broker_server("b0")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    node.advertise(Two)
    got = []
    node.subscribe(Two, "x > 0", on_event=lambda ev: got.append(len(ev.a)))
    eventpy.drain(10)
    with pytest.raises(ValueError, match=r"big.Pair: attribute '[ab]' takes 800005 bytes \(with the others, 1600010\)"):
        node.publish(Two, a=EMOJI * 200_000, b=EMOJI * 200_000, x=1.0)
    with pytest.raises(ValueError, match=r"parameter '[pq]' takes \d+ bytes \(with the others"):
        node.subscribe(Two, "a == p or b == q", params={"p": EMOJI * 200_000, "q": EMOJI * 200_000})
    node.publish(Two, a=EMOJI * 100_000, b=EMOJI * 100_000, x=2.0)  # 800 KB in all still goes
    eventpy.drain(10)
    assert got == [100_000]
    assert node.stats().get("unsendable", 0) == 0


def test_a_parameter_read_by_several_predicates_counts_in_each(broker_server):
    server = broker_server("b0")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    node.advertise(Two)
    names = {f"name{i:07d}" for i in range(50_000)}  # about 600 KB: one copy fits, two do not
    sub = node.subscribe(Two, "a in names or b in names", params={"names": {"q"}})
    with pytest.raises(ValueError, match=r"parameter 'names' takes \d+ bytes \(2 times: every predicate"):
        sub.update(names=names)
    with pytest.raises(ValueError, match=r"parameter 'names' takes \d+ bytes \(2 times"):
        node.subscribe(Two, "a in names or b in names", params={"names": names})
    one = node.subscribe(Two, "a in names and x > 0", params={"names": {"q"}})
    one.update(names=names)  # read once: it fits
    # a parameter read only by a switch travels as a bool: not refused for its length
    switched = node.subscribe(Two, "mode == 'on' and x > 0", params={"mode": "off"})
    switched.update(mode="y" * 900_000)
    eventpy.drain(10)
    assert node.stats().get("unsendable", 0) == 0


def test_updates_merged_while_queued_past_a_frame_go_as_one_update_a_variable(broker_server):
    server = broker_server("b0")
    node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
    local = node._local
    big = lambda c: ValueSet(frozenset(f"{c}{i:07d}" for i in range(60_000)))  # noqa: E731 (~780 KB each)
    merged = Upd("big.Doc", 1, {0: (big("a"), 2), 1: (big("b"), 3)})  # two variables: past a frame together
    sent = FrameDecoder().feed(local.overlay._encode_each(local, [merged]))
    assert [(type(m), m.changes) for m in sent] == [(Upd, {0: merged.changes[0]}), (Upd, {1: merged.changes[1]})]
    assert node.stats().get("unsendable", 0) == 0  # nothing dropped
