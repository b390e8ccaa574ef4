"""A peer that sends refused messages by the thousand: every one is counted and refused, the log
says the first few per link and window, then how many it left out (a buggy or hostile client
could otherwise fill the broker machine's disk)."""

from __future__ import annotations

import logging

from eventpy.runtime._log_limit import LogLimit
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
        assert limit.allow(("peer", i)) == (True, 0)
    assert len(limit._seen) <= 1024
