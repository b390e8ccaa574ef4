"""Mistakes that left a subscriber without its events and its program without a word, on a real
overlay: each now gives a signal where the mistake was made."""

from __future__ import annotations

import pytest

import eventpy


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
