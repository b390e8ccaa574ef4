"""Real processes: `eventpy overlay up` starts 3 brokers in a line; a subscriber program compiled
from .epy attaches to one edge, a publisher program to the other; the subscriber receives exactly
what the oracle says, a parameter raised from outside the class takes effect across the overlay,
and `eventpy overlay down` leaves no process behind."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

from ._procs import eventpy

MONITOR = textwrap.dedent('''
    """Shared by the subscriber and the publisher: the event type is monitor.Monitor.quote."""

    class Monitor:
        def __init__(self, limit: float):
            self.limit = limit
            self.got = []

        event def quote(self, firm: str, price: float, n: int) when firm == "IBM" and price < self.limit:
            self.got.append(n)
''')

SUBSCRIBER = textwrap.dedent('''
    import json, sys
    import eventpy
    import monitor

    m = monitor.Monitor(50.0)
    eventpy.drain(10)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, *arg = line.split()
        if cmd == "limit":
            m.limit = float(arg[0])          # from outside the class: an UPD across the overlay
        eventpy.drain(10)
        if cmd == "dump":
            print(json.dumps(m.got), flush=True)
        elif cmd == "quit":
            break
        else:
            print("ok", flush=True)
    m.close()
    eventpy.drain(10)
''')

PUBLISHER = textwrap.dedent('''
    import json, sys
    import eventpy
    import monitor

    eventpy.default_node().advertise(monitor.Monitor.quote)  # the node Monitor.quote publishes on
    eventpy.drain(10)                        # subscriptions have come back along the advertisement
    for firm, price, n in json.loads(sys.argv[1]):
        monitor.Monitor.quote(firm, price, n)
    eventpy.drain(10)
''')


def test_compiled_programs_across_three_brokers(overlay):
    tmp, env, port, run_dir = overlay.dir, overlay.env, overlay.port, overlay.run_dir
    (tmp / "monitor.epy").write_text(MONITOR)
    (tmp / "subscriber.py").write_text(SUBSCRIBER)
    (tmp / "publisher.py").write_text(PUBLISHER)
    status = eventpy("overlay", "status", "--run-dir", str(run_dir), cwd=tmp, env=env)
    assert status.returncode == 0 and "b1 (broker)" in status.stdout and "msgs/s now" in status.stdout

    sub = subprocess.Popen([sys.executable, "subscriber.py"], cwd=tmp, text=True, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={**env, "EVENTPY_BROKER": f"tcp://127.0.0.1:{port + 2}"})
    try:
        assert sub.stdout.readline().strip() == "ready", sub.stderr.read()

        def publish(events):
            out = subprocess.run([sys.executable, "publisher.py", json.dumps(events)], cwd=tmp, text=True,
                                 capture_output=True, timeout=60,
                                 env={**env, "EVENTPY_BROKER": f"tcp://127.0.0.1:{port}"})
            assert out.returncode == 0, out.stderr

        def command(c):
            sub.stdin.write(c + "\n")
            sub.stdin.flush()
            return sub.stdout.readline().strip()

        phase1 = [("IBM", 10.0 * k, k) for k in range(10)] + [("HP", 1.0, 100)]
        publish(phase1)
        assert command("sync") == "ok"
        want = [n for firm, price, n in phase1 if firm == "IBM" and price < 50.0]
        assert json.loads(command("dump")) == want

        assert command("limit 75") == "ok"
        phase2 = [("IBM", 10.0 * k + 1, 20 + k) for k in range(10)]
        publish(phase2)
        assert command("sync") == "ok"
        want += [n for firm, price, n in phase2 if price < 75.0]
        assert json.loads(command("dump")) == want  # exactly the oracle's events, once each
        sub.stdin.write("quit\n")
        sub.stdin.flush()
        assert sub.wait(timeout=30) == 0
    finally:
        if sub.poll() is None:
            sub.kill()
        sub.communicate()  # reaps it and closes its pipes


ENDS_WITHOUT_DRAIN = textwrap.dedent('''
    import sys
    import eventpy

    node = eventpy.connect()
    Tick = eventpy.EventType("bench.Tick", n=int)
    node.advertise(Tick)
    eventpy.drain(10)                        # the subscription has come back along the advertisement
    for n in range(int(sys.argv[1])):
        node.publish(Tick, n=n)
    # no drain, no shutdown: the script just ends
''')


def test_a_publisher_that_ends_without_drain_loses_nothing(overlay):
    """Most of these events are still in the node's outbox when the script ends; the exit hook
    sends them (before it, ~1,000 of 50,000 arrived) and the exit is quiet."""
    import eventpy as api

    tmp, env, port = overlay.dir, overlay.env, overlay.port
    (tmp / "ends.py").write_text(ENDS_WITHOUT_DRAIN)
    got: list[int] = []
    try:
        node = api.connect(f"tcp://127.0.0.1:{port + 2}")
        node.subscribe(api.EventType("bench.Tick", n=int), "True", on_event=lambda ev: got.append(ev.n))
        api.drain(10)
        n = 20000
        out = subprocess.run([sys.executable, "ends.py", str(n)], cwd=tmp, text=True, capture_output=True,
                             timeout=60, env={**env, "EVENTPY_BROKER": f"tcp://127.0.0.1:{port}"})
        assert out.returncode == 0, out.stderr
        assert out.stderr == ""  # no "Task was destroyed but it is pending!" at exit
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        api.drain(10)
        assert got == list(range(n))  # all of them, in order, once each
    finally:
        api.shutdown()
