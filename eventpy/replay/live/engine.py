"""What every live engine offers the real-time driver (eventpy.replay.live.driver), and the process
plumbing the adapters share: free ports, waiting for a server, stopping a process group, and the
byte-counting relay in front of subscribers.

An `Engine` starts its server(s) on 127.0.0.1 for a trace (`start`), hands out one `Client` per
trace client (`connect`), and stops everything it started (`stop`, also on `with` exit, also when
the run failed). A `Client` advertises, subscribes with a trace `Subscription` (structured
constraints and parameters), updates parameters, publishes an event carrying its trace `eid`, and
reports every event that reaches the subscriber to the driver's `on_arrival(eid)`; the driver checks
it against the subscription's current guard itself.

Bytes to subscribers are counted by a relay process (eventpy.replay.live.proxy) that subscribing
clients connect through: everything the server sends on those TCP connections (payload and
protocol framing, without TCP/IP headers), the same measure for every engine.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable

from ...runtime._ports import free_port  # noqa: F401 (the adapters import it from here)
from ...runtime.model import EventType
from ..trace import Subscription, Trace

EID = "eid"  # the attribute (header, field) that carries an event's trace id in live runs

Arrival = Callable[[int], None]


class EngineError(RuntimeError):
    pass


class Client(ABC):
    def advertise(self, etype: EventType) -> None:  # noqa: B027 - only EventPy needs it
        """Announce that this client publishes `etype` (a no-op where the engine has no such thing)."""

    @abstractmethod
    def subscribe(self, sub: Subscription, on_arrival: Arrival) -> Any:
        """Subscribe with `sub.constraints` and `sub.params`; returns a handle for `update`."""

    @abstractmethod
    def update(self, handle: Any, changed: dict[str, Any], params: dict[str, Any]) -> None:
        """New parameter values: `changed` only those that changed, `params` all of them."""

    @abstractmethod
    def publish(self, etype: EventType, eid: int, values: tuple) -> None:
        """Publish an event of the trace (values in schema order) tagged with its eid."""

    def barrier(self, timeout: float) -> None:  # noqa: B027
        """Return once everything this client sent has been processed by the server."""

    @abstractmethod
    def close(self) -> None: ...


class Engine(ABC):
    name = "engine"
    #: seconds a server process gets to stop before it is killed
    stop_timeout = 10.0

    def __init__(self) -> None:
        self.clients: list[Client] = []
        self.proc: subprocess.Popen | None = None  # the server, when the engine runs one process
        self._relay: subprocess.Popen | None = None
        self._relay_ports: list[int] = []
        self.pids: list[int] = []  # every process this engine started, kept after stop for checks

    # -- the adapter's part -----------------------------------------------------------------------------
    @abstractmethod
    def start(self, trace: Trace, workdir: Path) -> None:
        """Start the server(s) for `trace` on 127.0.0.1; files (config, logs) go to `workdir`."""

    @abstractmethod
    def connect(self, client: str, subscriber: bool) -> Client:
        """A client for the trace client `client`; a subscriber's connection goes through the relay."""

    def server_pids(self) -> list[int]:
        """Processes this engine started (servers and relay), also after `stop`, for checks that
        none is left."""
        return list(self.pids)

    def counters(self) -> dict[str, int]:
        """Engine-side counts: `spurious` events its own client filtered out, `sub_messages` sent
        by subscribers for subscriptions and updates."""
        return {"spurious": 0, "sub_messages": 0}

    def drain(self, timeout: float) -> None:  # noqa: B027
        """A barrier over every client (EventPy has one; the others are waited for by the driver)."""

    def stop(self) -> None:
        """Close the clients, then stop the server, then the relay; each step runs even when an
        earlier one failed, so that no process is left behind."""
        try:
            clients, self.clients = self.clients, []
            for c in clients:
                try:
                    c.close()
                except Exception:  # a broken connection has nothing to close
                    pass
        finally:
            try:
                self._stop_server()
            finally:
                self._stop_relay()

    def _stop_server(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc, timeout=self.stop_timeout)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- the relay --------------------------------------------------------------------------------------
    def _start_relay(self, targets: list[tuple[str, int]]) -> list[int]:
        self._relay = subprocess.Popen(
            [sys.executable, "-m", "eventpy.replay.live.proxy", *(f"{h}:{p}" for h, p in targets)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.pids.append(self._relay.pid)
        line = self._relay.stdout.readline() if self._relay.stdout else ""
        if not line:
            self._stop_relay()
            raise EngineError("the byte-counting relay did not start")
        self._relay_ports = json.loads(line)["ports"]
        return self._relay_ports

    def relay_bytes(self) -> tuple[int, int]:
        """(bytes to subscribers, bytes from subscribers) so far, over every relayed connection."""
        if self._relay is None or self._relay.poll() is not None:
            return 0, 0
        assert self._relay.stdin and self._relay.stdout
        self._relay.stdin.write("count\n")
        self._relay.stdin.flush()
        got = json.loads(self._relay.stdout.readline())
        return sum(got["down"]), sum(got["up"])

    def _stop_relay(self) -> None:
        proc, self._relay = self._relay, None
        if proc is not None:
            try:
                if proc.stdin:
                    proc.stdin.close()
            except OSError:
                pass
            stop_process(proc)
            if proc.stdout:
                proc.stdout.close()


# -- process plumbing ----------------------------------------------------------------------------------
def wait_port(port: int, timeout: float, proc: subprocess.Popen | None = None, what: str = "server",
              log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise EngineError(f"{what} exited with status {proc.returncode}" + _tail(log))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise EngineError(f"{what} did not accept connections on 127.0.0.1:{port} within {timeout:g} s" + _tail(log))


def _tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    lines = log.read_text(errors="replace").splitlines()[-15:]
    return f"; the end of {log}:\n" + "\n".join(lines)


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop `proc` (started with start_new_session=True) and every process of its group: SIGTERM,
    then SIGKILL to whatever is left after `timeout`. The group's members are listed while its
    leader is still ours (alive or unreaped), and only they are signalled afterwards."""
    members = set(group_members(proc.pid)) | {proc.pid}
    if proc.poll() is None:
        _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (proc.poll() is None or any(running(p) for p in members - {proc.pid})):
        time.sleep(0.05)
    for pid in members - {proc.pid}:
        if running(pid):
            _kill(pid)
    if proc.poll() is None:
        _kill(proc.pid)
    proc.wait(5)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def group_members(pgid: int) -> list[int]:
    """Live processes of process group `pgid` (Linux /proc), e.g. the JVM under a launcher script."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d.name))
    return out
