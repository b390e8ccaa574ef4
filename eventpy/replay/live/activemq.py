"""Apache ActiveMQ (Debian package `activemq`) with JMS selectors over STOMP as a live engine: the
content-based system without parameters (Beretta's peer). One topic per event type; an event's
attributes are message headers; a subscription is a SUBSCRIBE with its guard as a JMS selector
(`price <= 101.5 AND grade = 3.0`); an update is an UNSUBSCRIBE plus a SUBSCRIBE with the new
selector, so events published in between are not delivered.

Headers are strings on STOMP. ActiveMQ compares a string property with a numeric literal by parsing
it as the literal's type (a Long literal parses `9.0` as nothing and the comparison fails), so every
number goes out as a Python float text (`9.0`, `-3.5`, `1e-05`) and every numeric operand of a
selector is a float literal too; -0.0 is written as 0.0 (Java orders -0.0 below 0.0).

The broker is non-persistent, without JMX, advisories or producer flow control, with a single
`stomp://127.0.0.1:PORT` connector, its base/conf/data/tmp in the run's work directory, started as
`/usr/bin/activemq console xbean:file:...` in its own process group and stopped with it.
"""

from __future__ import annotations

import getpass
import math
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ...runtime.model import EventType
from .._extra import INSTALL_HINT
from ..trace import Subscription, Trace
from .engine import EID, Arrival, Client, Engine, EngineError, free_port, group_members, wait_port

ACTIVEMQ = "/usr/bin/activemq"
_JMS_OPS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "<>"}
_WORDS = {"NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "NULL", "TRUE", "FALSE", "ESCAPE"}
_STOMP_HEADERS = {"destination", "type", "priority", "expires", "persistent", "correlation-id", "reply-to",
                  "subscription", "message-id", "content-length", "content-type", "receipt", "id", "ack",
                  "selector", "transformation", "timestamp", "redelivered"}

CONFIG = """<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="eventpy-live" useJmx="false"
          persistent="false" advisorySupport="false" schedulerSupport="false" useShutdownHook="true"
          dataDirectory="{data}">
    <destinationPolicy><policyMap><policyEntries>
      <policyEntry topic="&gt;" producerFlowControl="false"/>
    </policyEntries></policyMap></destinationPolicy>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}?transport.tcpNoDelay=true"/>
    </transportConnectors>
  </broker>
</beans>
"""


def available() -> str | None:
    """None if ActiveMQ can run here, else why not."""
    if not os.access(ACTIVEMQ, os.X_OK):
        return f"{ACTIVEMQ} is missing (Debian package activemq)"
    if shutil.which("java") is None:
        return "java is missing"
    try:
        import stomp  # noqa: F401
    except ImportError:
        return f"the Python package stomp.py is missing ({INSTALL_HINT})"
    return None


# -- guards as selectors -------------------------------------------------------------------------------
def header_name(attr: str) -> str:
    """The message header (JMS property) of an attribute: its name, unless STOMP or JMS claim it."""
    if attr.lower() in _STOMP_HEADERS or attr.upper() in _WORDS or attr.upper().startswith("JMS"):
        return f"attr_{attr}"
    return attr


def header_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(float(v) + 0.0)
    return str(v)


def literal(v: Any) -> str:
    if isinstance(v, bool):
        return "'true'" if v else "'false'"
    if isinstance(v, (int, float)):
        x = float(v) + 0.0
        if not math.isfinite(x):
            raise ValueError(f"a JMS selector has no literal for {x!r}")
        return repr(x)
    return "'" + str(v).replace("'", "''") + "'"


def selector(sub: Subscription, params: dict[str, Any]) -> str:
    """The subscription's guard under `params` as a JMS selector."""
    parts = []
    for c in sub.constraints:
        operand = params[c.param] if c.param is not None else c.const
        if isinstance(operand, str) and c.op not in ("==", "!="):
            raise ValueError(f"a JMS selector compares strings with = and <> only, not {c.op}")
        parts.append(f"{header_name(c.attr)} {_JMS_OPS[c.op]} {literal(operand)}")
    return " AND ".join(parts) or "TRUE"


# -- the client ----------------------------------------------------------------------------------------
class _Listener:
    def __init__(self) -> None:
        self.routes: dict[str, Arrival] = {}  # subscription id -> the driver's callback
        self.receipts: dict[str, threading.Event] = {}
        self.errors: list[str] = []

    def on_message(self, frame: Any) -> None:
        route = self.routes.get(frame.headers.get("subscription", ""))
        if route is not None:
            route(int(float(frame.headers[EID])))

    def on_receipt(self, frame: Any) -> None:
        done = self.receipts.pop(frame.headers.get("receipt-id", ""), None)
        if done is not None:
            done.set()

    def on_error(self, frame: Any) -> None:
        self.errors.append(f"{frame.headers.get('message', '')} {frame.body}".strip())


class ActiveMQClient(Client):
    def __init__(self, engine: "ActiveMQEngine", port: int, name: str) -> None:
        import stomp

        self.engine = engine
        self.name = name
        self.listener = _Listener()
        self.conn = stomp.Connection12([("127.0.0.1", port)], heartbeats=(0, 0), reconnect_attempts_max=1)
        self.conn.set_listener("eventpy", self.listener)
        self.conn.connect(wait=True)
        sock = getattr(self.conn.transport, "socket", None)
        if sock is not None:  # stomp.py leaves Nagle on, which holds back small frames
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._versions: dict[int, int] = {}
        self._receipts = 0

    def subscribe(self, sub: Subscription, on_arrival: Arrival) -> Any:
        self._versions[sub.sub_id] = 0
        self._subscribe(sub, dict(sub.params), on_arrival)
        return (sub, on_arrival)

    def _subscribe(self, sub: Subscription, params: dict[str, Any], on_arrival: Arrival) -> None:
        sid = f"{sub.sub_id}.{self._versions[sub.sub_id]}"
        self.listener.routes[sid] = on_arrival
        self.conn.subscribe(f"/topic/{sub.etype}", id=sid, ack="auto", headers={"selector": selector(sub, params)})
        self.engine.sub_messages += 1

    def update(self, handle: Any, changed: dict[str, Any], params: dict[str, Any]) -> None:
        sub, on_arrival = handle
        old = f"{sub.sub_id}.{self._versions[sub.sub_id]}"
        self.conn.unsubscribe(id=old)
        self.engine.sub_messages += 1
        # messages of the old subscription still in flight are still this subscription's arrivals
        self._versions[sub.sub_id] += 1
        self._subscribe(sub, params, on_arrival)

    def publish(self, etype: EventType, eid: int, values: tuple) -> None:
        headers = {header_name(a): header_value(v) for a, v in zip(etype.attrs, values)}
        headers[EID] = str(eid)
        self.conn.send(f"/topic/{etype.name}", "", headers=headers)

    def barrier(self, timeout: float) -> None:
        self._receipts += 1
        token = f"{self.name}-{self._receipts}"
        done = self.listener.receipts[token] = threading.Event()
        self.conn.send("/topic/eventpy.barrier", "", headers={"receipt": token})
        if not done.wait(timeout):
            raise EngineError(f"ActiveMQ did not confirm {self.name}'s frames within {timeout:g} s: "
                              f"{'; '.join(self.listener.errors) or 'no error frame'}")
        if self.listener.errors:
            raise EngineError(f"ActiveMQ refused a frame of {self.name}: {self.listener.errors[0]}")

    def close(self) -> None:
        if self.conn.is_connected():
            self.conn.disconnect()


class ActiveMQEngine(Engine):
    name = "activemq"
    stop_timeout = 15.0  # the JVM takes longer than a plain process

    def __init__(self, start_timeout: float = 90.0) -> None:
        super().__init__()
        self.start_timeout = start_timeout
        self.port = 0
        self.sub_port = 0
        self.sub_messages = 0

    def start(self, trace: Trace, workdir: Path) -> None:
        base = workdir / "activemq"
        for d in ("conf", "data", "tmp"):
            (base / d).mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        xml = base / "conf" / "activemq.xml"
        xml.write_text(CONFIG.format(data=base / "data", port=self.port))
        env = {**os.environ, "ACTIVEMQ_BASE": str(base), "ACTIVEMQ_CONF": str(base / "conf"),
               "ACTIVEMQ_DATA": str(base / "data"), "ACTIVEMQ_TMP": str(base / "tmp"),
               "ACTIVEMQ_PIDFILE": str(base / "activemq.pid"), "ACTIVEMQ_USER": getpass.getuser(),
               "ACTIVEMQ_OUT": str(base / "activemq.log")}
        log = base / "console.log"
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([ACTIVEMQ, "console", f"xbean:file:{xml}"], env=env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=base,
                                         start_new_session=True)
        wait_port(self.port, self.start_timeout, self.proc, "ActiveMQ", log)
        time.sleep(0.1)
        self.pids += group_members(self.proc.pid) or [self.proc.pid]
        self.sub_port = self._start_relay([("127.0.0.1", self.port)])[0]

    def connect(self, client: str, subscriber: bool) -> Client:
        c = ActiveMQClient(self, self.sub_port if subscriber else self.port, client)
        self.clients.append(c)
        return c

    def counters(self) -> dict[str, int]:
        return {"spurious": 0, "sub_messages": self.sub_messages}


