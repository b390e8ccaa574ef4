"""The update monitor across a TCP broker: fewer UPDs reach the broker, delivery stays strict, and
the exact subscription is back at the broker after a calm window."""

from __future__ import annotations

import time

import eventpy

Q = eventpy.EventType("rum.Quote", price=float)


def test_a_monitored_subscription_over_tcp(broker_server):
    server = broker_server("b0")
    url = f"tcp://127.0.0.1:{server.port}"
    sub_node = eventpy.connect(url, rum={"window": 0.5})
    pub_node = eventpy.connect(url)
    pub_node.advertise(Q)
    got: list[float] = []
    sub = sub_node.subscribe(Q, "price < limit", params={"limit": 10.0}, on_event=lambda e: got.append(e.price))
    sub.confirm(timeout=5.0)
    for i in range(50):  # 100 changes a second
        sub.update(limit=10.0 + 0.1 * i)
        time.sleep(0.01)
    sub.confirm(timeout=5.0)
    stats = sub_node.stats()
    assert stats["rum_suppressed"] > 0 and stats["upd_sent"] < 50
    for price in (14.8, 14.95, 30.0):  # exact limit 14.9; the broker's may be wider
        pub_node.publish(Q, price=price)
    eventpy.drain(timeout=10)
    assert got == [14.8]
    deadline = time.monotonic() + 5
    while sub._state.wire != sub._state.values and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sub._state.wire == sub._state.values  # reinstated after a calm window
    assert sub_node.stats()["rum_settled"] >= 1  # by the monitor's settle, not by never widening
