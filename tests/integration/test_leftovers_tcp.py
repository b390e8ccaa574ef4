"""Over a real TCP overlay, client processes that are killed (no UNSUB, no UNADV, no BYE) leave
nothing behind at the brokers: once their connections are gone, every table of both brokers is
empty again but the link between them (tests/runtime/broker/_tables.leftovers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

from ._procs import env_with_root

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime" / "broker"))
from _tables import leftovers  # noqa: E402

CLIENT = """
import sys, eventpy
node = eventpy.connect(sys.argv[1])
Quote = eventpy.EventType("lt.Quote", firm=str, price=float)
Flag = eventpy.EventType("lt.Flag", on=bool)
if sys.argv[2] == "pub":
    node.advertise(Quote)
    node.advertise(Flag)
    for i in range(20):
        node.publish(Quote, firm="IBM", price=float(i))
else:
    subs = [node.subscribe(Quote, "firm == f and price < limit", params={"f": "IBM", "limit": 5.0}),
            node.subscribe(Quote, "firm in w and price > lo", params={"w": {"HP", "IBM"}, "lo": 1.0}),
            node.subscribe(Flag, "on == b", params={"b": True})]
    for i in range(30):
        subs[0].update(limit=float(i))
        subs[1].update(lo=float(-i))
eventpy.drain(timeout=30.0)
print("ready", flush=True)
sys.stdin.read()  # until killed
"""


def _settled(brokers: dict, timeout: float = 60.0) -> dict:
    """Each broker's leftovers once they are empty, or as they were when `timeout` ran out (read
    from this thread while the broker's loop runs: a read that meets a change is tried again)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = {name: leftovers(b, peers) for name, (b, peers) in brokers.items()}
        except RuntimeError:  # a table changed size while read
            found = {"(changing)": True}
        if not any(found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_killed_clients_leave_nothing_at_the_brokers(broker_server):
    z = broker_server("z")
    a = BrokerServer(Broker("a"), "127.0.0.1", 0, {"z": ("127.0.0.1", z.port)})
    stop_a = a.start_in_thread()
    procs = []
    try:
        deadline = time.monotonic() + 30
        while not ("z" in a.broker.links and "a" in z.broker.links):  # a dials z ("a" < "z")
            assert time.monotonic() < deadline, "the brokers did not link"
            time.sleep(0.05)
        for server, role in ((a, "pub"), (z, "sub"), (a, "sub"), (z, "pub")):
            procs.append(subprocess.Popen([sys.executable, "-c", CLIENT, f"tcp://127.0.0.1:{server.port}", role],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                          env=env_with_root()))
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        assert a.broker.subscription_count() and z.broker.subscription_count()  # state to clear
        for p in procs:
            os.kill(p.pid, signal.SIGKILL)
        assert _settled({"a": (a.broker, {"z"}), "z": (z.broker, {"a"})}) == {"a": {}, "z": {}}
    finally:
        for p in procs:
            p.kill()
            p.wait(30)
        stop_a()
