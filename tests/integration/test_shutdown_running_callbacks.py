"""The end of a program (or eventpy.shutdown(), or SIGTERM under `eventpy run`) while a callback
runs and will publish, over TCP: a relay service stopped while its feed runs. The subscriptions
end first, the callbacks already running finish (up to 5 s), then the nodes close and send what
they published. Before, the node closed under the running callback: its publish raised
RuntimeError("node ... is closed"), logged with a traceback at every stop, and the event was lost."""

from __future__ import annotations

import logging
import threading
import time

import eventpy

X = eventpy.EventType("relaystop.X", n=int)
Y = eventpy.EventType("relaystop.Y", n=int)


def test_shutdown_lets_a_running_callback_publish_before_the_node_closes(broker_server, caplog):
    server = broker_server()
    url = f"tcp://127.0.0.1:{server.port}"
    relay = eventpy.connect(url)
    relay.advertise(Y)
    entered, release = threading.Event(), threading.Event()

    def on_x(e):
        entered.set()
        release.wait(30)
        relay.publish(Y, n=e.n)

    sub = relay.subscribe(X, "n >= 0", on_event=on_x)
    feed = eventpy.connect(url)
    feed.advertise(X)
    eventpy.drain(10)
    feed.publish(X, n=1)
    assert entered.wait(20)
    with caplog.at_level(logging.WARNING):
        stopping = threading.Thread(target=eventpy.shutdown)
        stopping.start()
        deadline = time.monotonic() + 20
        while not sub.closed and time.monotonic() < deadline:  # shutdown has begun
            time.sleep(0.01)
        release.set()
        stopping.join(30)
    assert not stopping.is_alive()
    assert not [r for r in caplog.records if "raised" in r.getMessage()], caplog.text
    deadline = time.monotonic() + 20
    while server.broker.stats["pub_received"] < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.broker.stats["pub_received"] == 2, server.broker.stats
