"""A peer that stops reading does not make its broker's memory grow without bound: past the
limit its link is closed, and the other subscribers keep receiving."""

from __future__ import annotations

import logging
import socket
import time

import eventpy
from eventpy.guards import compile_guard
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.messages import Adv, Hello, Sub
from eventpy.runtime.wire import encode

Q = eventpy.EventType("slow.Tick", n=int, pad=str)


def wait_gone(server, link: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while link in server.links and time.monotonic() < deadline:
        time.sleep(0.05)
    return link not in server.links


def subscribe_raw(sock: socket.socket, name: str, port: int) -> None:
    """A raw client with a small receive buffer that subscribes to every Tick (what it then reads,
    or does not, is the test's)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    plan = compile_guard("True", Q, {})
    sock.sendall(encode(Hello(name, "client", PROTOCOL)) + encode(Adv(Q.name, Q.to_wire()))
                 + encode(Sub(Q.name, 1, plan.spec, plan.evaluate({}))))


def test_a_stuck_subscriber_is_cut_off_and_the_others_keep_receiving(caplog, broker_server):
    server = broker_server("b", max_pending=256 << 10, stall=0.5)
    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"), socket.socket() as stuck:
        subscribe_raw(stuck, "stuck", server.port)  # then never reads
        node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
        got = []
        node.subscribe(Q, "True", on_event=lambda e: got.append(e.n))  # same link as the PUBs: FIFO
        total = 12000  # about 12 MB for the stuck peer: more than the kernel's socket buffers
        for i in range(total):
            node.publish(Q, n=i, pad="x" * 1000)
            if i % 2000 == 1999:
                time.sleep(0.4)  # let the stall show while events keep coming
        deadline = time.monotonic() + 30
        while len(got) < total and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got == list(range(total))
        # (a drain would wait for the stuck peer's answer: a peer that does not read blocks the
        # barrier until it is cut off)
        assert wait_gone(server, "stuck")
        assert any("does not read" in r.getMessage() for r in caplog.records)


def test_a_subscriber_that_reads_more_slowly_than_its_events_arrive_is_cut_off_too(caplog, broker_server):
    """It reads a little every few milliseconds, so writes to it progress and it never stalls for
    `stall` seconds: its queue (the broker's memory) grew for as long as the events came. Once
    more than max_pending has waited for it `behind` seconds without a break it is closed; the
    other subscriber, which catches up between bursts, keeps its link and every event."""
    import threading

    server = broker_server("b", max_pending=256 << 10, stall=60.0, behind=1.5)  # a stall would never cut it
    done = threading.Event()
    read = [0]

    def sip(sock: socket.socket) -> None:  # ~400 KB/s: slower than the bursts below
        sock.settimeout(0.2)
        while not done.is_set():
            try:
                chunk = sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            read[0] += len(chunk)
            time.sleep(0.01)

    with caplog.at_level(logging.WARNING, logger="eventpy.tcp"), socket.socket() as slow:
        subscribe_raw(slow, "slow", server.port)
        reader = threading.Thread(target=sip, args=(slow,), daemon=True)
        reader.start()
        try:
            node = eventpy.connect(f"tcp://127.0.0.1:{server.port}")
            got = []
            node.subscribe(Q, "True", on_event=lambda e: got.append(e.n))
            total = 8000  # bursts of ~0.5 MB, each followed by a pause the other subscriber catches up in
            for i in range(total):
                node.publish(Q, n=i, pad="x" * 1000)
                if i % 500 == 499:
                    time.sleep(0.25)
            deadline = time.monotonic() + 60
            while len(got) < total and time.monotonic() < deadline:
                time.sleep(0.05)
            assert got == list(range(total))
            assert wait_gone(server, "slow", timeout=30)
            assert read[0] > 0  # it did read: this is not the stuck peer of the test above
            assert any("for 1.5 s without a break (a peer that reads more slowly than its events arrive)"
                       in r.getMessage() and "'slow'" in r.getMessage() for r in caplog.records)
            assert not any("closed 'vm" in r.getMessage() or "closed 'node" in r.getMessage()
                           for r in caplog.records), [r.getMessage() for r in caplog.records]
            node.close()
        finally:
            done.set()
            reader.join(5)
