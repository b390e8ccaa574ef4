"""A peer that sends refused messages by the thousand: every one is counted and refused, the log
says the first few per link and window, then how many it left out (a buggy or hostile client
could otherwise fill the broker machine's disk)."""

from __future__ import annotations

import logging

from eventpy.runtime._log_limit import MAX_KEYS, LogLimit
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Upd


def test_a_flood_of_refused_messages_is_counted_whole_and_logged_within_bounds(caplog):
    now = [0.0]
    b = Broker("b0")
    b._refusals_logged = LogLimit(burst=10, window=60.0, clock=lambda: now[0])
    b.connect("bad", "client")
    b.connect("good", "client")
    caplog.set_level(logging.WARNING, logger="eventpy.broker")
    for _ in range(1000):
        b.handle("bad", Upd("Nope", 1, {}))  # an UPD of a subscription it never made
    b.handle("good", Upd("Nope", 1, {}))
    lines = [r.getMessage() for r in caplog.records if "refused Upd" in r.getMessage()]
    assert b.stats["refused"] == 1001
    assert sum("'bad'" in line for line in lines) == 10
    assert sum("'good'" in line for line in lines) == 1  # another link has its own bound
    caplog.clear()
    now[0] = 61.0  # the next window: said again, with how many were left out
    b.handle("bad", Upd("Nope", 1, {}))
    (line,) = [r.getMessage() for r in caplog.records if "refused Upd" in r.getMessage()]
    assert "990 more like it in the last window were not logged" in line


def test_the_table_of_keys_stays_bounded():
    now = [0.0]
    limit = LogLimit(burst=1, window=60.0, clock=lambda: now[0])
    for i in range(5000):
        assert limit.allow(("peer", i)) == (True, "")
    assert len(limit._seen) <= 1024


def test_what_was_left_out_for_a_key_the_table_forgets_is_still_said():
    """The table keeps MAX_KEYS keys; one forgotten to make room took its count of lines left out
    with it, so a flood from a peer among many others was never said to have gone on."""
    now = [0.0]
    limit = LogLimit(burst=1, window=60.0, clock=lambda: now[0])
    assert limit.allow("flood") == (True, "")
    for _ in range(5):
        assert limit.allow("flood") == (False, "")
    for i in range(MAX_KEYS - 1):  # the table is full, "flood" the oldest key in it
        limit.allow(("quiet", i))
    now[0] = 61.0  # its window is over, and it says nothing more: the next new key makes room
    say, note = limit.allow("newcomer")
    assert say and note == " (5 more like it from 1 other peer, no longer tracked, were not logged)"
    assert "flood" not in limit._seen
    assert limit.allow("another") == (True, "")  # said once


def test_a_key_forgotten_within_its_window_has_its_count_said_too():
    now = [0.0]
    limit = LogLimit(burst=1, window=60.0, clock=lambda: now[0])
    for key in ("a", "b"):
        for _ in range(4):
            limit.allow(key)  # 1 said, 3 left out each
    for i in range(MAX_KEYS - 2):
        limit.allow(("quiet", i))
    say, note = limit.allow("newcomer")  # none is stale: the oldest half goes
    assert say and note == " (6 more like it from 2 other peers, no longer tracked, were not logged)"
