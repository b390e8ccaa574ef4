"""`eventpy run` stopped with SIGTERM (what systemd and container runtimes send) while its broker
is away: the events the program published before the signal still reach the broker when it is
back within the exit budget (README "The end of a program"). Before, SIGTERM killed the process at
once: no exit handler ran, and what its node held was lost without a word."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import eventpy
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

from ._procs import env_with_root

# connects, advertises, says "ready"; on a line from the test publishes 10 events (held: the
# broker is away by then), says "published" and waits to be stopped
_PUBLISHER = textwrap.dedent("""
    import sys, time, eventpy
    node = eventpy.connect(sys.argv[1])
    Q = eventpy.EventType("sigterm.Tick", n=int)
    node.advertise(Q)
    eventpy.drain(10)
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(10):
        node.publish(Q, n=n)
    print("published", flush=True)
    time.sleep(600)
""")


def _serve(port: int):
    server = BrokerServer(Broker("b"), "127.0.0.1", port, {})
    return server, server.start_in_thread()


def test_sigterm_ends_an_eventpy_run_program_as_its_end_does(tmp_path):
    eventpy.shutdown()
    program = tmp_path / "publisher.epy"
    program.write_text(_PUBLISHER)
    server, stop = _serve(0)
    stops = [stop]
    pub = subprocess.Popen([sys.executable, "-m", "eventpy", "run", str(program), f"tcp://127.0.0.1:{server.port}"],
                           cwd=tmp_path, env=env_with_root(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert pub.stdout.readline().strip() == "ready", pub.stderr.read()
        stops.pop()()
        assert "lost its broker" in pub.stderr.readline()
        pub.stdin.write("go\n")
        pub.stdin.flush()
        assert pub.stdout.readline().strip() == "published"
        pub.send_signal(signal.SIGTERM)
        back, stop = _serve(server.port)
        stops.append(stop)
        _, err = pub.communicate(timeout=60)
        assert pub.returncode == 128 + signal.SIGTERM, (pub.returncode, err)
        deadline = time.monotonic() + 20  # the frames left the publisher; the broker's thread reads them
        while back.broker.stats["pub_received"] < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert back.broker.stats["pub_received"] == 10, (err, back.broker.stats)
        assert "Traceback" not in err and "are lost" not in err, err
    finally:
        if pub.poll() is None:
            pub.kill()
            pub.communicate()
        for stop in stops:
            stop()
        eventpy.shutdown()
