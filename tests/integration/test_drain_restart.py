"""drain() across a restart of the publisher's edge broker: the barrier was on its way when the
broker died; once the node has reconnected, the drain completes (QA found it waiting its whole
timeout, then a TimeoutError, with the overlay back within a second)."""

from __future__ import annotations

import threading

import eventpy

from .test_faults import restart

Q = eventpy.EventType("drainrestart.Tick", n=int)


def test_a_drain_in_progress_completes_after_the_edge_broker_restarts(overlay):
    sub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    pub_node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}")
    release, got = threading.Event(), []

    def slow(ev):  # holds the barrier at the subscriber until the restart is over
        got.append(ev.n)
        release.wait(60)

    sub_node.subscribe(Q, "True", on_event=slow)
    pub_node.advertise(Q)
    eventpy.drain(10)
    pub_node.publish(Q, n=1)
    outcome: list = []

    def drain() -> None:
        try:
            eventpy.drain(60)
            outcome.append("drained")
        except Exception as e:  # the assertion below shows it
            outcome.append(e)

    waiter = threading.Thread(target=drain)
    waiter.start()
    try:
        pause = threading.Event()
        for _ in range(1500):  # until the event is in the subscriber's callback (it left b0: a
            if got and not pub_node._local.has_output():  # killed broker loses what it holds) and
                break  # the publisher's writer has taken its FLUSH
            pause.wait(0.02)
        restart(overlay.run_dir, "b0", overlay.env, overlay.dir)
    finally:
        release.set()
    waiter.join(90)
    assert outcome == ["drained"]
    assert got == [1]
    assert pub_node.stats()["resyncs"] == 1
