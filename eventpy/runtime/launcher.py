"""`eventpy broker` and `eventpy overlay up/status/down`: broker processes on this machine.

An overlay lives in a run directory (default `.eventpy/overlay`): `overlay.toml` (brokers, their
addresses, the links, mode, matcher, summary), one `NAME.pid`, `NAME.log` and `NAME.status.json`
per broker. `up` returns when every broker accepts connections and every link is established;
`down` stops only the processes whose pid files it finds there.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

# (the broker, its matchers and numpy are imported by `eventpy broker` only, in run_broker:
# `overlay status` and `overlay down` need none of them)
from .overlay import TOPOLOGIES, Topology, TopologyError, make_topology

if TYPE_CHECKING:
    from .transports.tcp import BrokerServer

DEFAULT_RUN_DIR = Path(".eventpy/overlay")


def write_config(path: Path, topology: Topology, host: str, port: int, mode: str, matcher: str,
                 summary: str) -> None:
    lines = [f'mode = "{mode}"', f'matcher = "{matcher}"', f'summary = "{summary}"', "", "links = ["]
    lines += [f'  ["{a}", "{b}"],' for a, b in topology.links]
    lines += ["]", ""]
    for i, b in enumerate(topology.brokers):
        lines += [f"[brokers.{b}]", f'host = "{host}"', f"port = {port + i}", ""]
    path.write_text("\n".join(lines))


# what a topology file may set
_SETTINGS = ("brokers", "links", "mode", "matcher", "summary", "evolve_horizon", "evolving_engine", "cache_ttl")


def _choices() -> dict[str, tuple[str, ...]]:
    """The broker algorithm a topology file may choose, and the values of each setting."""
    from .broker import EVOLVING_ENGINES, MODES, SUMMARIES
    from .matching import MATCHERS

    return {"mode": tuple(MODES), "matcher": tuple(MATCHERS), "summary": tuple(SUMMARIES),
            "evolving_engine": EVOLVING_ENGINES}


def read_config(path: Path) -> dict[str, Any]:
    """An overlay's TOML file, checked whole (a mistake is a SystemExit naming the file, the bad
    value and what is allowed), so nothing starts that a broker would refuse later."""
    try:
        cfg = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SystemExit(f"{path}: cannot read the overlay configuration: {e}")
    for key in cfg:
        if key not in _SETTINGS:
            raise SystemExit(f"{path}: unknown setting {key!r}; a topology file has {', '.join(_SETTINGS)}")
    for key, allowed in _choices().items():
        if key in cfg and cfg[key] not in allowed:
            raise SystemExit(f"{path}: unknown {key} {cfg[key]!r}; choose {', '.join(allowed)}")
    for key, what in (("evolve_horizon", "the seconds between recomputations of evolving subscriptions' summaries"),
                      ("cache_ttl", "the seconds a CLEES version of an evolving subscription is used")):
        seconds = cfg.get(key, 1.0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
            raise SystemExit(f"{path}: {key} is {what}, a number above 0, not {seconds!r}")
    brokers = cfg.get("brokers")
    _check_brokers(path, brokers)
    try:
        cfg["topology"] = Topology(tuple(brokers), _links(path, cfg.get("links", [])))
    except TopologyError as e:
        raise SystemExit(f"{path}: {e}")
    _check_connected(path, cfg["topology"])
    return cfg


def _check_connected(path: Path, topology: Topology) -> None:
    """Events cross only along links: brokers in two parts would be two overlays."""
    apart = topology.apart()
    if apart:
        raise SystemExit(f"{path}: broker {apart[0]!r} is not linked to {topology.brokers[0]!r}, so no event could cross "
                         "between them; the brokers must form one tree (add links = [[\"A\", \"B\"], ...] "
                         "before the [brokers.NAME] tables)")


def _check_brokers(path: Path, brokers: Any) -> None:
    if not isinstance(brokers, dict) or not brokers:
        raise SystemExit(f"{path}: needs a [brokers.NAME] table per broker, with host and port")
    for name, b in brokers.items():
        port = b.get("port") if isinstance(b, dict) else None
        if type(port) is not int or not 1 <= port <= 65535:
            raise SystemExit(f"{path}: broker {name!r} needs a port between 1 and 65535, not {port!r}")
        if not isinstance(b.get("host", "127.0.0.1"), str):
            raise SystemExit(f"{path}: broker {name!r}: host must be a string")
        unknown = sorted(set(b) - {"host", "port"})
        if unknown:  # often a top-level key written after the last [brokers.NAME] header
            raise SystemExit(f"{path}: broker {name!r} has unknown setting {unknown[0]!r} (a broker has host "
                             "and port; top-level settings go before the first [brokers.NAME] table)")
        # filled in here, once: every reader (a broker dialing its neighbors too) finds it set
        b.setdefault("host", "127.0.0.1")
    where: dict[tuple[str, int], str] = {}
    for name, b in brokers.items():
        other = where.setdefault((b["host"], b["port"]), name)
        if other != name:  # the second would fail to listen after the first had started
            raise SystemExit(f"{path}: brokers {other!r} and {name!r} both listen on {b['host']}:{b['port']}; "
                             "give each broker its own port")


def _links(path: Path, links: Any) -> tuple[tuple[str, str], ...]:
    """`links = [["b0", "b1"], ...]` as pairs (which brokers they name, Topology checks)."""
    if not isinstance(links, list):
        raise SystemExit(f'{path}: links must be a list of pairs of broker names like [["b0", "b1"]], '
                         f"not {links!r}")
    for link in links:
        if not (isinstance(link, list) and len(link) == 2 and all(isinstance(x, str) for x in link)):
            raise SystemExit(f'{path}: a link is a pair of broker names like ["b0", "b1"], not {link!r}')
    return tuple((a, b) for a, b in links)


def run_broker(config: Path, name: str) -> int:
    """`eventpy broker --config FILE --id NAME`: one broker in the foreground."""
    import asyncio  # (here, as the broker: `overlay status` and `down` have no event loop)

    from .broker import DEFAULT_TTL, Broker
    from .transports.tcp import BrokerServer, tune_gc_for_server

    cfg = read_config(config)
    if name not in cfg["brokers"]:
        raise SystemExit(f"{config}: no broker named {name!r} (have {', '.join(cfg['brokers'])})")
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s")
    me = cfg["brokers"][name]
    topo: Topology = cfg["topology"]
    neighbors = {n: (cfg["brokers"][n]["host"], int(cfg["brokers"][n]["port"])) for n in topo.neighbors(name)}
    broker = Broker(name, mode=cfg.get("mode", "parametric"), matcher=cfg.get("matcher", "fastint"),
                    summary=cfg.get("summary", "attribute"), evolve_horizon=float(cfg.get("evolve_horizon", 1.0)),
                    evolving_engine=cfg.get("evolving_engine", "ves"), cache_ttl=float(cfg.get("cache_ttl", DEFAULT_TTL)))
    server = BrokerServer(broker, me["host"], int(me["port"]), neighbors,
                          status_file=config.parent / f"{name}.status.json")
    tune_gc_for_server()
    # beside the configuration, as `overlay up` writes it: a broker restarted by hand is then seen
    # by `overlay status` and stopped by `overlay down`
    pid_file = _PidFile(config.parent / f"{name}.pid")
    try:
        asyncio.run(_serve_until_signalled(server, pid_file))
    except KeyboardInterrupt:  # Ctrl-C before the loop's handler was in place
        pass
    except OSError as e:  # at start: the address is taken or not this machine's
        hint = ""
        other = pid_file.owner()
        if other not in (None, os.getpid()):  # the usual cause: restarting a broker that never stopped
            hint = f" (broker {name} is still running as pid {other}: stop it first, or leave it running)"
        print(f"{config}: broker {name} cannot listen on {server.host}:{server.port}: {e.strerror or e}{hint}",
              file=sys.stderr)
        return 1
    return 0


class _PidFile:
    """A broker's pid file, written once it listens (`BrokerServer.run` calls `set`). Written
    before, a second `eventpy broker` for a broker that still runs replaced the running one's pid
    and then removed the file when it could not listen: `overlay status` showed that broker dead
    and `overlay down` left it running."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def set(self) -> None:
        self.path.write_text(str(os.getpid()))

    def owner(self) -> int | None:
        """The pid of the live broker this file names (`overlay up` wrote ours), else None."""
        return int(self.path.read_text()) if _alive(self.path) else None


async def _serve_until_signalled(server: BrokerServer, listening: _PidFile | None = None) -> None:
    """Serve until SIGTERM (`eventpy overlay down`) or SIGINT (Ctrl-C in the foreground), then
    close the links and return. The handlers run on the loop, between its callbacks: a Python
    signal handler raised SystemExit inside whatever the loop was doing, and tasks cancelled in
    that state logged tracebacks."""
    import asyncio

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.shutdown, sig.name)
    await server.run(listening)


def overlay_up(run_dir: Path, topology: str, brokers: int | None, host: str | None, port: int | None,
               mode: str | None, matcher: str | None, summary: str | None, timeout: float = 20.0) -> int:
    """Start the brokers. `mode`, `matcher`, `summary`: None for the topology file's choice (or
    the defaults); one that a topology file sets otherwise is refused, not ignored. `brokers`,
    `host`, `port`: None for 3, 127.0.0.1, 7100; a topology file names its own, so given with one
    they are refused."""
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
        return _up_locked(run_dir, topology, brokers, host, port, mode, matcher, summary, timeout)


def _up_locked(run_dir: Path, topology: str, brokers: int, host: str, port: int, mode: str | None,
               matcher: str | None, summary: str | None, timeout: float) -> int:
    """overlay_up, once it holds the run directory's lock."""
    pid_files = list(run_dir.glob("*.pid"))
    if any(_alive(f) for f in pid_files):
        print(f"eventpy overlay: an overlay is already up in {run_dir} (eventpy overlay down first)", file=sys.stderr)
        return 1
    for f in pid_files:  # brokers that died (or a machine that rebooted) left these behind
        _forget(f)
    if pid_files:
        print(f"overlay up: removed {len(pid_files)} pid file(s) of brokers no longer running")
    # no broker of this directory runs: every status file is stale, also one without its pid
    # file (removed by hand) or of a broker the new overlay does not have, which `up` waited for
    for f in run_dir.glob("*.status.json"):
        f.unlink(missing_ok=True)
    config = run_dir / "overlay.toml"
    chosen = {"mode": mode, "matcher": matcher, "summary": summary}
    if topology.endswith(".toml"):
        given = read_config(Path(topology))  # refuses cycles and mistakes before starting anything
        added = []
        for key, value in chosen.items():
            if value is not None and key in given and given[key] != value:
                print(f"eventpy overlay: {topology} sets {key} = {given[key]!r} but --{key} asks for "
                      f"{value!r}; change one of them", file=sys.stderr)
                return 1
            if value is not None and key not in given:
                added.append(f'{key} = "{value}"')  # top-level keys: before the file's first table
        config.write_text("".join(f"{line}\n" for line in added) + Path(topology).read_text())
    else:
        if not 1 <= port <= 65535 - max(brokers - 1, 0):
            print(f"eventpy overlay: ports {port}..{port + brokers - 1} are not all between 1 and 65535",
                  file=sys.stderr)
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
        write_config(config, topo, host, port, mode or "parametric", matcher or "fastint", summary or "attribute")
    cfg = read_config(config)
    taken = _unavailable(cfg["brokers"])
    if taken:
        print(f"eventpy overlay: {taken}; nothing was started", file=sys.stderr)
        return 1
    procs, interrupted = _spawn(run_dir, config, cfg["brokers"])
    try:
        if interrupted:
            raise KeyboardInterrupt
        return _wait_ready(run_dir, cfg, procs, timeout)
    except KeyboardInterrupt:  # Ctrl-C before the overlay was up: nothing of it is left running
        # our own children, by their Popen (overlay_down's check of /proc/<pid>/cmdline can read
        # a broker that is just starting as gone, and leave it)
        for proc in procs.values():
            proc.terminate()
        for name, proc in procs.items():
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            _forget(run_dir / f"{name}.pid")
        print(f"eventpy overlay: interrupted; stopped the brokers it had started in {run_dir}", file=sys.stderr)
        return 130


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


def _wait_ready(run_dir: Path, cfg: dict, procs: dict[str, subprocess.Popen], timeout: float) -> int:
    """Until every broker has said it is linked (0), or one exits or time runs out (1, stopped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = {n: s for n, s in _statuses(run_dir).items() if n in cfg["brokers"]}
        if len(states) == len(cfg["brokers"]) and all(s.get("ready") for s in states.values()):
            where = ", ".join(f"{n} on {s['host']}:{s['port']}" for n, s in sorted(states.items()))
            print(f"overlay up: {len(states)} broker{'s' if len(states) != 1 else ''} in {run_dir} ({where})")
            return 0
        # our own children: their exit status says it (right after it starts, a broker's
        # /proc/<pid>/cmdline can still read empty, which made a live broker look gone)
        dead = [n for n, proc in procs.items() if proc.poll() is not None]
        if dead:
            print(f"eventpy overlay: broker(s) {', '.join(dead)} exited; see {run_dir}/*.log", file=sys.stderr)
            overlay_down(run_dir)
            return 1
        time.sleep(0.1)
    print(f"eventpy overlay: the overlay was not ready within {timeout:g} s; see {run_dir}/*.log", file=sys.stderr)
    overlay_down(run_dir)
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


def _statuses(run_dir: Path) -> dict[str, dict]:
    out = {}
    for f in run_dir.glob("*.status.json"):
        try:
            out[f.name.removesuffix(".status.json")] = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            pass
    return out


def _alive(pid_file: Path) -> bool:
    """Does the pid file name a running broker of this run directory (not a zombie, not a
    process that reused the pid)?"""
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return False
    return _running(pid) and _broker_of(pid, pid_file.parent)


def _broker_of(pid: int, run_dir: Path) -> bool:
    """Is `pid` an `eventpy broker` started with this run directory's overlay.toml? Where /proc
    cannot tell, yes."""
    try:
        for _ in range(50):  # empty while the process is still being exec'd: look again
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            if raw:
                break
            time.sleep(0.01)
        else:
            return True  # cannot tell
        args = raw.decode(errors="replace").split("\0")
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return not Path("/proc/self").exists()
    if "broker" not in args or "--config" not in args[:-1]:
        return False
    config = Path(args[args.index("--config") + 1])
    try:
        return (cwd / config).resolve() == (run_dir / "overlay.toml").resolve()
    except OSError:
        return False


def overlay_status(run_dir: Path) -> int:
    """`eventpy overlay status`: a table of the brokers (eventpy.runtime._overlay_status)."""
    from ._overlay_status import show_status

    return show_status(run_dir)


def overlay_down(run_dir: Path, timeout: float = 5.0) -> int:
    """Stop the brokers this run directory started, and only those: a pid file whose process is
    gone, or whose pid now belongs to another program, is removed without a signal. No pid file
    at all: no overlay there (as `status` says), exit status 1."""
    pid_files = list(run_dir.glob("*.pid"))
    if not pid_files:  # a mistyped --run-dir must not look like a successful stop
        print(f"eventpy overlay: no overlay in {run_dir}", file=sys.stderr)
        return 1
    pids, gone = {}, 0
    for f in pid_files:
        if _alive(f):
            pids[f] = int(f.read_text())
        else:
            gone += 1
            _forget(f)
    for f, pid in pids.items():
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + timeout
    for f, pid in pids.items():
        while time.monotonic() < deadline and _running(pid):
            time.sleep(0.05)
        if _running(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _forget(f)
    print(f"overlay down: stopped {len(pids)} broker(s)"
          + (f"; {gone} had already exited" if gone else ""))
    return 0


def _forget(pid_file: Path) -> None:
    """A broker's pid file and status file, removed (it was stopped, or is gone)."""
    pid_file.unlink(missing_ok=True)
    pid_file.with_name(pid_file.name.replace(".pid", ".status.json")).unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # reap our own children
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie of another parent counts as stopped
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True
