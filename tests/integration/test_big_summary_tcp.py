"""Over TCP: subscribers whose subscriptions each fit a frame, and whose union at their edge
broker does not. Before, the edge broker failed to encode its summary, closed the link of the
subscriber that caused it, and that subscriber reconnected and re-sent the same, for ever; its
events were never delivered."""

from __future__ import annotations

import logging

import eventpy
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

Q = eventpy.EventType("bigsummary.Named", s=str, n=int)


def test_subscriptions_whose_union_outgrows_a_frame_still_get_their_events(broker_server, caplog):
    upstream = broker_server("b1", max_frame=64 << 10)
    edge = BrokerServer(Broker("b0"), "127.0.0.1", 0, {"b1": ("127.0.0.1", upstream.port)}, max_frame=64 << 10)
    stop = edge.start_in_thread()
    try:
        pub = eventpy.connect(f"tcp://127.0.0.1:{upstream.port}")
        pub.advertise(Q)
        subs = [eventpy.connect(f"tcp://127.0.0.1:{edge.port}") for _ in range(2)]
        eventpy.drain(10)
        got: list[int] = []
        for k, node in enumerate(subs):  # ~45 KB each, ~90 KB together: past a 64 KiB frame
            names = {f"{'ab'[k]}{i:07d}" for i in range(5000)}
            node.subscribe(Q, "s in names", params={"names": names}, on_event=lambda ev: got.append(ev.n))
            eventpy.drain(10)
        with caplog.at_level(logging.WARNING, logger="eventpy.tcp"):
            pub.publish(Q, s="a0000001", n=1)
            pub.publish(Q, s="b0000002", n=2)
            pub.publish(Q, s="c0000003", n=3)
            eventpy.drain(10)
        assert sorted(got) == [1, 2]
        assert all(node.stats()["resyncs"] == 0 for node in subs)
        assert not [r for r in caplog.records if "closing" in r.getMessage()]
        assert edge.broker.stats["summary_widened"] >= 1
    finally:
        eventpy.shutdown()
        stop()
