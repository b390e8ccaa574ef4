"""EventPy's TCP overlay as a live engine: one broker process per broker of the trace's topology,
started and stopped with the project's launcher (`eventpy overlay up/down` on a run directory);
every trace client is an `eventpy.connect("tcp://127.0.0.1:PORT")` node attached to its edge
broker (subscribers through the byte-counting relay), using only the public API.

Mode `parametric` updates a subscription with UPD messages; `resub` re-subscribes. The guard is the
trace subscription's guard text; EventPy's client checks it again before the callback (strictness),
so the events it filtered there are counted from the nodes' `spurious` counters, not by the driver.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import eventpy

from ...runtime import launcher
from ...runtime.model import EventType
from ..trace import Subscription, Trace
from .engine import EID, Arrival, Client, Engine, EngineError, free_port


class EventPyClient(Client):
    def __init__(self, engine: "EventPyEngine", url: str, name: str) -> None:
        self.engine = engine
        self.node = eventpy.connect(url, name=name)

    def advertise(self, etype: EventType) -> None:
        self.node.advertise(self.engine.live_type(etype))

    def subscribe(self, sub: Subscription, on_arrival: Arrival) -> Any:
        etype = self.engine.live_type(self.engine.types[sub.etype])
        return self.node.subscribe(etype, sub.guard, params=dict(sub.params),
                                   on_event=lambda ev: on_arrival(ev[EID]))

    def update(self, handle: Any, changed: dict[str, Any], params: dict[str, Any]) -> None:
        handle.update(**changed)

    def publish(self, etype: EventType, eid: int, values: tuple) -> None:
        live = self.engine.live_type(etype)
        self.node.publish(live, **dict(zip(etype.attrs, values)), **{EID: eid})

    def close(self) -> None:
        self.node.close()


class EventPyEngine(Engine):
    def __init__(self, mode: str = "parametric", matcher: str = "fastint", summary: str = "attribute") -> None:
        super().__init__()
        self.mode, self.matcher, self.summary = mode, matcher, summary
        self.name = f"eventpy-{mode}"
        self.run_dir: Path | None = None
        self.ports: dict[str, int] = {}
        self.types: dict[str, EventType] = {}
        self._live: dict[str, EventType] = {}
        self._edges: dict[str, str] = {}
        self._relayed: dict[str, int] = {}

    def live_type(self, etype: EventType) -> EventType:
        """The trace's event type with the `eid` attribute added (no guard reads it)."""
        if etype.name not in self._live:
            self._live[etype.name] = EventType(etype.name, **etype.schema, **{EID: int})
        return self._live[etype.name]

    def start(self, trace: Trace, workdir: Path) -> None:
        self.types = dict(trace.types)
        self._edges = dict(trace.clients)
        self.run_dir = workdir / "overlay"
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.ports = {b: free_port() for b in trace.topology.brokers}
        topo = workdir / "topology.toml"
        lines = [f'mode = "{self.mode}"', f'matcher = "{self.matcher}"', f'summary = "{self.summary}"', "",
                 "links = ["] + [f'  ["{a}", "{b}"],' for a, b in trace.topology.links] + ["]", ""]
        for b, port in self.ports.items():
            lines += [f"[brokers.{b}]", 'host = "127.0.0.1"', f"port = {port}", ""]
        topo.write_text("\n".join(lines))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = launcher.overlay_up(self.run_dir, str(topo), None, None, None, self.mode,
                                         self.matcher, self.summary, timeout=30.0)
        self.pids += [int(f.read_text()) for f in self.run_dir.glob("*.pid")]
        if status != 0:
            raise EngineError(f"eventpy overlay up failed: {out.getvalue().strip()}")
        edges = sorted(set(trace.clients.values()))
        relay_ports = self._start_relay([("127.0.0.1", self.ports[b]) for b in edges])
        self._relayed = dict(zip(edges, relay_ports))

    def connect(self, client: str, subscriber: bool) -> Client:
        broker = self._edges[client]
        port = self._relayed[broker] if subscriber else self.ports[broker]
        c = EventPyClient(self, f"tcp://127.0.0.1:{port}", client)
        self.clients.append(c)
        return c

    def drain(self, timeout: float) -> None:
        eventpy.drain(timeout=timeout)

    def counters(self) -> dict[str, int]:
        stats = [c.node.stats() for c in self.clients]
        return {"spurious": sum(s["spurious"] for s in stats),
                "sub_messages": sum(s[k] for s in stats for k in ("sub_sent", "unsub_sent", "upd_sent"))}

    def _stop_server(self) -> None:
        try:
            # the nodes' connections and their I/O thread belong to this process's eventpy state
            eventpy.shutdown()
        finally:
            if self.run_dir is not None:
                # quiet also when `up` failed and left nothing to stop ("no overlay in ...")
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    launcher.overlay_down(self.run_dir)
