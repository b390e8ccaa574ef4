"""Redis pub/sub (Debian package `redis-server`) as a live engine: the topic-based system with
filtering in the client, the wildcard approach of 000 §1.3. A channel per event type; a subscriber
receives every event of the types it subscribed to and its guard is applied locally (by the
driver, which counts the events it rejects as spurious); an update changes only local state and
costs no message. Events are JSON arrays `[eid, value, ...]` in schema order.

The server runs as `redis-server --port P --bind 127.0.0.1 --save '' --appendonly no` in its own
process group, without the default output-buffer limit for pub/sub clients (a subscriber that falls
behind is buffered rather than disconnected, as ActiveMQ and EventPy buffer theirs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from ...runtime.model import EventType
from .._extra import INSTALL_HINT
from ..trace import Subscription, Trace
from .engine import Arrival, Client, Engine, EngineError, free_port, wait_port

REDIS_SERVER = "redis-server"


def available() -> str | None:
    if shutil.which(REDIS_SERVER) is None:
        return "redis-server is missing (Debian package redis-server)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return f"the Python package redis is missing ({INSTALL_HINT})"
    return None


class RedisClient(Client):
    def __init__(self, port: int, name: str) -> None:
        import redis

        self.name = name
        self.conn = redis.Redis(host="127.0.0.1", port=port, client_name=name)
        self.pubsub = None
        self.routes: dict[str, list[Arrival]] = {}  # channel -> callbacks of this client's subscriptions
        self._confirmed = 0
        self._asked = 0
        self._cv = threading.Condition()
        self._reader: threading.Thread | None = None
        self._closing = False
        self.error: BaseException | None = None

    def subscribe(self, sub: Subscription, on_arrival: Arrival) -> Any:
        if self.pubsub is None:
            self.pubsub = self.conn.pubsub()
        routes = self.routes.setdefault(sub.etype, [])
        routes.append(on_arrival)
        if len(routes) == 1:
            with self._cv:
                self._asked += 1
            self.pubsub.subscribe(sub.etype)
            if self._reader is None:
                self._reader = threading.Thread(target=self._read, name=f"redis-{self.name}", daemon=True)
                self._reader.start()
        return sub

    def _read(self) -> None:
        assert self.pubsub is not None
        try:
            while not self._closing:
                msg = self.pubsub.get_message(timeout=0.2)
                if msg is None:
                    continue
                if msg["type"] == "message":
                    eid = json.loads(msg["data"])[0]
                    for route in self.routes.get(msg["channel"].decode(), ()):
                        route(eid)
                elif msg["type"] == "subscribe":
                    with self._cv:
                        self._confirmed += 1
                        self._cv.notify_all()
        except Exception as exc:  # the connection went away: the driver sees it in barrier/close
            if not self._closing:
                self.error = exc

    def update(self, handle: Any, changed: dict[str, Any], params: dict[str, Any]) -> None:
        pass  # the filter is the subscriber's own: nothing goes over the network

    def publish(self, etype: EventType, eid: int, values: tuple) -> None:
        self.conn.publish(etype.name, json.dumps([eid, *values], separators=(",", ":")))

    def barrier(self, timeout: float) -> None:
        with self._cv:
            if not self._cv.wait_for(lambda: self._confirmed >= self._asked or self.error, timeout):
                raise EngineError(f"redis did not confirm {self.name}'s subscriptions within {timeout:g} s")
        if self.error is not None:
            raise EngineError(f"redis subscriber {self.name}: {self.error}")

    def close(self) -> None:
        self._closing = True
        if self._reader is not None:
            self._reader.join(2)
        if self.pubsub is not None:
            self.pubsub.close()
        self.conn.close()


class RedisEngine(Engine):
    name = "redis"

    def __init__(self) -> None:
        super().__init__()
        self.port = 0
        self.sub_port = 0

    def start(self, trace: Trace, workdir: Path) -> None:
        base = workdir / "redis"
        base.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        log = base / "redis.log"
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(base), "--logfile", str(log), "--daemonize", "no",
             "--client-output-buffer-limit", "pubsub 0 0 0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
        self.pids.append(self.proc.pid)
        wait_port(self.port, 20.0, self.proc, "redis-server", log)
        self.sub_port = self._start_relay([("127.0.0.1", self.port)])[0]

    def connect(self, client: str, subscriber: bool) -> Client:
        c = RedisClient(self.sub_port if subscriber else self.port, client)
        self.clients.append(c)
        return c


