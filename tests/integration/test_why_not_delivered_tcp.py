"""Mistakes that left a subscriber without its events and its program without a word, on a real
overlay: each now gives a signal where the mistake was made."""

from __future__ import annotations

import time

import pytest

import eventpy

from ._procs import eventpy as run_eventpy


def test_a_publisher_whose_schema_a_far_broker_refuses_is_told(overlay):
    # the subscriber at b2 declared t.Q with a float price; the publisher at b0, with an int one,
    # advertised, drained and published: only b2's log said "refused Adv from 'b1'"
    sub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    sub_node.subscribe(eventpy.EventType("t.Q", firm=str, price=float), "price < 10",
                       on_event=lambda ev: None)
    eventpy.drain(10)
    pub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}")
    theirs = eventpy.EventType("t.Q", firm=str, price=int)
    pub_node.advertise(theirs)
    eventpy.drain(10)
    with pytest.raises(eventpy.SchemaRefused, match=r"broker b2: 't.Q' advertised with schema "
                                                    r"\(firm: str, price: int\), known as \(firm: str, price: float\)"):
        pub_node.publish(theirs, firm="IBM", price=3)


def _status_until(overlay, *wanted: str, timeout: float = 20.0) -> str:
    """`eventpy overlay status` once its output holds every wanted line (the brokers write their
    status files every second)."""
    deadline = time.monotonic() + timeout
    while True:
        out = run_eventpy("overlay", "status", "--run-dir", str(overlay.run_dir), cwd=overlay.dir,
                          env=overlay.env).stdout
        if all(w in out for w in wanted) or time.monotonic() > deadline:
            return out
        time.sleep(0.3)


def test_status_shows_a_subscriber_and_a_publisher_that_spell_the_type_differently(overlay):
    # the subscriber's stocks.Quote and the publisher's stock.Quote: both programs ran without a
    # word, and the status table showed one subscription and messages flowing
    sub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    sub_node.subscribe(eventpy.EventType("stocks.Quote", firm=str, price=float), "price < 10",
                       on_event=lambda ev: None)
    pub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}", name="desk")
    pub_node.advertise(eventpy.EventType("stock.Quote", firm=str, price=float))
    eventpy.drain(10)
    wanted = ("  stock.Quote: no subscription; published by desk at b0",
              "  stocks.Quote: 1 subscription (b2: 1); no publisher has advertised it")
    out = _status_until(overlay, *wanted)
    assert all(w in out for w in wanted), out
    assert "refused" not in out  # a correct overlay has no such line


def test_status_counts_a_brokers_refusals_and_names_its_log(overlay):
    node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 1}")
    node.advertise(eventpy.EventType("t.R", firm=str))
    eventpy.drain(10)
    other = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 1}")
    other.advertise(eventpy.EventType("t.R", firm=int))
    eventpy.drain(10)
    wanted = f"broker b1 refused 1 message ("
    out = _status_until(overlay, wanted)
    assert wanted in out and str(overlay.run_dir / "b1.log") in out.replace("\n", ""), out
