"""A program that ends while its broker is away: README promises that at exit its nodes send what
they still hold (up to 5 s), "then the rest is logged as lost". The node's writer had ended with
the connection, so the process exited at once, said nothing, and the events it had published
were gone: neither sent to the broker coming back within the 5 s nor logged as lost."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import time

import pytest

import eventpy
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

from ._procs import ROOT

# connects, advertises, says "ready"; on a line from the test publishes 10 events, says
# "published" and ends (its atexit handler closes the node)
_PUBLISHER = textwrap.dedent("""
    import sys, eventpy
    node = eventpy.connect(sys.argv[1])
    Q = eventpy.EventType("exitwait.Tick", n=int)
    node.advertise(Q)
    eventpy.drain(10)
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(10):
        node.publish(Q, n=n)
    print("published", flush=True)
""")


def _serve(port: int):
    server = BrokerServer(Broker("b"), "127.0.0.1", port, {})
    return server, server.start_in_thread()


@contextlib.contextmanager
def _publisher_whose_broker_went_away(script: str):
    """A broker on a free port and a publisher process running `script` attached to it; the broker
    is then stopped. Yields (port, publisher). Everything started is stopped, even on failure."""
    eventpy.shutdown()
    server, stop = _serve(0)
    stopped = False
    pub = subprocess.Popen([sys.executable, "-c", script, f"tcp://127.0.0.1:{server.port}"], cwd=ROOT,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert pub.stdout.readline().strip() == "ready", pub.stderr.read()
        stop()
        stopped = True
        # events written before the publisher sees the connection end are in flight at a crash
        # (README: they may be lost); these tests are about the ones published after
        assert "lost its broker" in pub.stderr.readline()
        yield server.port, pub
    finally:
        if not stopped:
            stop()
        if pub.poll() is None:
            pub.kill()
        pub.communicate()
        eventpy.shutdown()


@pytest.fixture
def publisher_of_a_broker_that_went_away():
    with _publisher_whose_broker_went_away(_PUBLISHER) as started:
        yield started


def test_events_held_at_exit_reach_a_broker_that_is_back_within_the_budget(publisher_of_a_broker_that_went_away):
    port, pub = publisher_of_a_broker_that_went_away
    pub.stdin.write("go\n")
    pub.stdin.flush()
    assert pub.stdout.readline().strip() == "published"
    # the publisher is exiting now, and waits for a broker. (Counted at the broker: whether they
    # are delivered depends on a subscription reaching it first, README "Advertisements first".)
    server, stop = _serve(port)
    try:
        assert pub.wait(30) == 0
        err = pub.stderr.read()
        deadline = time.monotonic() + 20  # the frames left the publisher; the broker's thread reads them
        while server.broker.stats["pub_received"] < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.broker.stats["pub_received"] == 10, (err, server.broker.stats)
        assert "are lost" not in err, err
    finally:
        stop()


def test_events_no_broker_took_at_exit_are_logged_as_lost(publisher_of_a_broker_that_went_away):
    _, pub = publisher_of_a_broker_that_went_away
    pub.stdin.write("go\n")
    pub.stdin.flush()
    assert pub.stdout.readline().strip() == "published"
    assert pub.wait(30) == 0
    err = pub.stderr.read()
    assert "10 message(s) it still held for 127.0.0.1:" in err and "are lost" in err, err


# as _PUBLISHER, and Ctrl-C (SIGINT) comes while the end of the program waits for the broker: sent
# by the process to itself once the transport has begun its wait at exit
_INTERRUPTED_AT_EXIT = _PUBLISHER + textwrap.dedent("""
    import asyncio, os, signal
    real = asyncio.run_coroutine_threadsafe
    def scheduled(coro, loop):
        fut = real(coro, loop)
        if getattr(coro, "__name__", "") == "close_all":
            os.kill(os.getpid(), signal.SIGINT)
        return fut
    asyncio.run_coroutine_threadsafe = scheduled
""")


def test_ctrl_c_while_the_end_of_a_program_waits_for_its_broker_says_what_is_lost():
    """A second Ctrl-C while the exit waited printed 'Exception ignored in atexit callback' and a
    traceback into eventpy's transport, and nothing said that the events held were lost."""
    with _publisher_whose_broker_went_away(_INTERRUPTED_AT_EXIT) as (_, pub):
        pub.stdin.write("go\n")
        pub.stdin.flush()
        assert pub.stdout.readline().strip() == "published"
        _, err = pub.communicate(timeout=30)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert "10 message(s) it still held for 127.0.0.1:" in err and "interrupted (Ctrl-C)" in err, err
