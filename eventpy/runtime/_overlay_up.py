"""`eventpy overlay up`: start an overlay's broker processes, and return once every broker
accepts connections and every link is established (or stop what it started and say why). The
rest of the launcher (the configuration, `eventpy broker`, `status`, `down`) is in launcher.py."""

from __future__ import annotations

import errno
import fcntl
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from ._natural_order import natural
from ._ports import free_port_block
from . import launcher  # (by module: tests patch its functions, as they did when this was in it)
from .overlay import TOPOLOGIES, TopologyError, make_topology

# `--port 0`: the launcher picks a block of free ports (a test suite's overlays, run side by side,
# each on its own). A port found free can be taken before the broker binds it (another run
# picking at the same moment): `up` then tries another block, up to PICKS times in all.
PICK = 0
PICKS = 5
_LOST_PORT = -1  # _start's status when a broker could not listen on a picked port


def overlay_up(run_dir: Path, topology: str, brokers: int | None, host: str | None, port: int | None,
               mode: str | None, matcher: str | None, summary: str | None, timeout: float = 20.0,
               limits: dict[str, int | None] | None = None) -> int:
    """Start the brokers. `mode`, `matcher`, `summary`: None for the topology file's choice (or
    the defaults); one that a topology file sets otherwise is refused, not ignored. `brokers`,
    `host`, `port`: None for 3, 127.0.0.1, 7100 (`port` 0: a block of free ports, picked here and
    printed; overlay.toml and `status` have them); a topology file names its own, so given with
    one they are refused. `limits`: per-client limits of every broker (None values: the file's,
    or none), written in overlay.toml."""
    if topology.endswith(".toml"):
        flag = next((f for f, v in (("--brokers", brokers), ("--port", port), ("--host", host)) if v is not None), None)
        if flag:
            print(f"eventpy overlay: {topology} names the brokers and their addresses; {flag} is for line, star, "
                  "tree and random (leave it out, or edit the file)", file=sys.stderr)
            return 1
    brokers = 3 if brokers is None else brokers
    host = "127.0.0.1" if host is None else host
    port = 7100 if port is None else port
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / ".up.lock", "w") as lock:
        # one `up` at a time in a directory: two at once could both find no broker running and
        # start two sets of brokers over one set of pid files (the second's, unable to bind, then
        # made it stop brokers by pid files that might be the first's)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"eventpy overlay: another 'eventpy overlay up' is starting an overlay in {run_dir}; "
                  "wait for it to finish, then see 'eventpy overlay status'", file=sys.stderr)
            return 1
        return _up_locked(run_dir, topology, brokers, host, port, mode, matcher, summary, timeout, limits or {})


def _up_locked(run_dir: Path, topology: str, brokers: int, host: str, port: int, mode: str | None,
               matcher: str | None, summary: str | None, timeout: float, limits: dict[str, int | None]) -> int:
    """overlay_up, once it holds the run directory's lock."""
    pid_files = list(run_dir.glob("*.pid"))
    if any(launcher._alive(f) for f in pid_files):
        print(f"eventpy overlay: an overlay is already up in {run_dir} (eventpy overlay down first)", file=sys.stderr)
        return 1
    for f in pid_files:  # brokers that died (or a machine that rebooted) left these behind
        launcher._forget(f)
    if pid_files:
        print(f"overlay up: removed {len(pid_files)} pid file(s) of brokers no longer running")
    # no broker of this directory runs: every status file is stale, also one without its pid
    # file (removed by hand) or of a broker the new overlay does not have, which `up` waited for
    for f in run_dir.glob("*.status.json"):
        f.unlink(missing_ok=True)
    config = run_dir / "overlay.toml"
    chosen = {"mode": mode, "matcher": matcher, "summary": summary}
    limit_lines = "".join(f"{k} = {v}\n" for k, v in limits.items() if v is not None)
    if topology.endswith(".toml"):
        given = launcher.read_config(Path(topology))  # refuses cycles and mistakes before starting anything
        added = []
        for key, value in (chosen | limits).items():  # the flags' settings, then the per-client limits
            if value is not None and key in given and given[key] != value:
                print(f"eventpy overlay: {topology} sets {key} = {given[key]!r} but --{key.replace('_', '-')} "
                      f"asks for {value!r}; change one of them", file=sys.stderr)
                return 1
            if value is not None and key not in given:  # top-level keys: before the file's first table
                added.append(f'{key} = "{value}"' if isinstance(value, str) else f"{key} = {value}")
        config.write_text("".join(f"{line}\n" for line in added) + Path(topology).read_text())
    else:
        if port != PICK and not 1 <= port <= 65535 - max(brokers - 1, 0):
            print(f"eventpy overlay: ports {port}..{port + brokers - 1} are not all between 1 and 65535 "
                  "(--port 0: free ports the launcher picks)", file=sys.stderr)
            return 1
        if topology not in TOPOLOGIES:  # make_topology's message knows nothing of files
            print(f"eventpy overlay: unknown topology {topology!r}; choose {', '.join(TOPOLOGIES)}, "
                  "or the path of a TOML file (NAME.toml)", file=sys.stderr)
            return 1
        try:
            topo = make_topology(topology, brokers)
        except TopologyError as e:
            print(f"eventpy overlay: {e}", file=sys.stderr)
            return 1
    pick = port == PICK and not topology.endswith(".toml")
    attempts = PICKS if pick else 1
    for attempt in range(1, attempts + 1):
        again = attempt < attempts  # on a picked port that was taken meanwhile: another block
        if not topology.endswith(".toml"):
            if pick:
                try:
                    port = free_port_block(brokers)
                except (RuntimeError, ValueError) as e:
                    print(f"eventpy overlay: --port 0: {e}; give --port", file=sys.stderr)
                    return 1
            launcher.write_config(config, topo, host, port, mode or "parametric", matcher or "fastint",
                                  summary or "attribute")
            if limit_lines:  # top-level keys: before the first table
                config.write_text(limit_lines + config.read_text())
        cfg = launcher.read_config(config)
        taken = _unavailable(cfg["brokers"])
        if taken and pick and again:
            continue
        if taken:
            print(f"eventpy overlay: {taken}; nothing was started", file=sys.stderr)
            return 1
        status = _start(run_dir, config, cfg, timeout, give_back_lost_ports=pick and again)
        if status != _LOST_PORT:
            return status
    raise AssertionError("unreachable: the last attempt does not give back a lost port")


def _start(run_dir: Path, config: Path, cfg: dict, timeout: float, give_back_lost_ports: bool) -> int:
    """Start the brokers of `cfg` and wait until they are linked: 0, or 1 when they are not
    (stopped), or _LOST_PORT when `give_back_lost_ports` and a broker could not listen (stopped,
    without a word: the caller picks other ports)."""
    logs = {name: run_dir / f"{name}.log" for name in cfg["brokers"]}
    written = {name: log.stat().st_size if log.exists() else 0 for name, log in logs.items()}  # (appended to)
    procs, interrupted = _spawn(run_dir, config, cfg["brokers"])
    try:
        if interrupted:
            raise KeyboardInterrupt
        lost = (lambda name: "cannot listen on" in _since(logs[name], written[name])) if give_back_lost_ports else None
        status = _wait_ready(run_dir, cfg, procs, timeout, lost)
    except KeyboardInterrupt:  # Ctrl-C before the overlay was up: nothing of it is left running
        _stop_started(run_dir, procs)
        print(f"eventpy overlay: interrupted; stopped the brokers it had started in {run_dir}", file=sys.stderr)
        return 130
    if status == _LOST_PORT:
        _stop_started(run_dir, procs)
    return status


def _since(log: Path, offset: int) -> str:
    """What a broker wrote to its log from `offset` on."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _stop_started(run_dir: Path, procs: dict[str, subprocess.Popen]) -> None:
    """Stop the brokers this `up` started, by their Popen (overlay_down's check of
    /proc/<pid>/cmdline can read a broker that is just starting as gone, and leave it)."""
    for proc in procs.values():
        proc.terminate()
    for name, proc in procs.items():
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        launcher._forget(run_dir / f"{name}.pid")


def _spawn(run_dir: Path, config: Path, brokers: dict) -> tuple[dict[str, subprocess.Popen], bool]:
    """Start a process per broker and write its pid file; True if Ctrl-C came meanwhile. SIGINT
    is held until every broker started is recorded: raised inside Popen, the KeyboardInterrupt
    lost the pid of a broker already forked, which ran on with no pid file `down` could find."""
    interrupted: list[int] = []
    # signal handlers are for the main thread only; and a SIGINT that is ignored (nohup, a
    # background job) stays ignored
    held = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) not in (
        signal.SIG_IGN, None)
    previous = signal.signal(signal.SIGINT, lambda sig, frame: interrupted.append(sig)) if held else None
    procs: dict[str, subprocess.Popen] = {}
    try:
        for name in brokers:
            with open(run_dir / f"{name}.log", "ab") as log:  # the broker holds its own copy
                procs[name] = subprocess.Popen(
                    [sys.executable, "-m", "eventpy", "broker", "--config", str(config), "--id", name],
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            (run_dir / f"{name}.pid").write_text(str(procs[name].pid))
            if interrupted:
                break
    finally:
        if held:
            signal.signal(signal.SIGINT, previous)
    return procs, bool(interrupted)


def _wait_ready(run_dir: Path, cfg: dict, procs: dict[str, subprocess.Popen], timeout: float,
                lost: Callable[[str], bool] | None = None) -> int:
    """Until every broker has said it is linked (0), or one exits or time runs out (1, stopped).
    `lost(name)`: did that broker exit because it could not listen (_LOST_PORT: the caller stops
    the others and tries other ports)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = {n: s for n, s in launcher._statuses(run_dir).items() if n in cfg["brokers"]}
        if len(states) == len(cfg["brokers"]) and all(s.get("ready") for s in states.values()):
            where = ", ".join(f"{n} on {s['host']}:{s['port']}" for n, s in sorted(states.items(), key=lambda item: natural(item[0])))
            print(f"overlay up: {len(states)} broker{'s' if len(states) != 1 else ''} in {run_dir} ({where})")
            return 0
        # our own children: their exit status says it (right after it starts, a broker's
        # /proc/<pid>/cmdline can still read empty, which made a live broker look gone)
        dead = [n for n, proc in procs.items() if proc.poll() is not None]
        if dead and lost is not None and all(lost(n) for n in dead):
            return _LOST_PORT
        if dead:
            print(f"eventpy overlay: broker(s) {', '.join(dead)} exited; see {run_dir}/*.log", file=sys.stderr)
            launcher.overlay_down(run_dir)
            return 1
        time.sleep(0.1)
    print(f"eventpy overlay: the overlay was not ready within {timeout:g} s; see {run_dir}/*.log", file=sys.stderr)
    launcher.overlay_down(run_dir)
    return 1


def _unavailable(brokers: dict[str, dict]) -> str:
    """Why a broker of this machine could not listen where the configuration says ("" if all can):
    a port in use, or a host that is not an address of this machine."""
    import socket

    for name, b in brokers.items():
        host, port = b.get("host", "127.0.0.1"), b["port"]
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            return f"broker {name}: cannot resolve host {host!r} ({e})"
        family, _, _, _, address = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's server does
            try:
                s.bind(address)
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    return f"broker {name}: port {port} on {host} is already in use"
                return f"broker {name}: cannot listen on {host}:{port} ({e.strerror})"
    return ""
