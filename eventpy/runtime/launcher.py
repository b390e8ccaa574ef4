"""`eventpy broker` and `eventpy overlay up/status/down`: broker processes on this machine.

An overlay lives in a run directory (default `.eventpy/overlay`): `overlay.toml` (brokers, their
addresses, the links, mode, matcher, summary), one `NAME.pid`, `NAME.log` and `NAME.status.json`
per broker. `up` returns when every broker accepts connections and every link is established;
`down` stops only the processes whose pid files it finds there.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._client_caps import LIMITS, check_limit

# The broker, its matchers and numpy, asyncio and logging are imported by `eventpy broker` only,
# in run_broker, and the topologies by what reads a configuration: `overlay status` and `overlay
# down` need none of them (tests/test_startup.py)
if TYPE_CHECKING:
    from .overlay import Topology
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
_SETTINGS = ("brokers", "links", "mode", "matcher", "summary", "evolve_horizon", "evolving_engine", "cache_ttl",
             *LIMITS)


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
    for key in LIMITS:
        if key in cfg:
            try:
                check_limit(key, cfg[key])
            except ValueError as e:
                raise SystemExit(f"{path}: {e}")
    brokers = cfg.get("brokers")
    _check_brokers(path, brokers)
    from .overlay import Topology, TopologyError

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


def run_broker(config: Path, name: str, limits: dict[str, int | None] | None = None) -> int:
    """`eventpy broker --config FILE --id NAME`: one broker in the foreground. `limits`: the
    per-client limits given on its command line, over the file's (None: the file's)."""
    import asyncio  # (here, as the broker: `overlay status` and `down` have no event loop)

    from ._client_caps import ClientCaps
    from .broker import DEFAULT_TTL, Broker
    from .transports.tcp import BrokerServer, tune_gc_for_server

    cfg = read_config(config)
    if name not in cfg["brokers"]:
        raise SystemExit(f"{config}: no broker named {name!r} (have {', '.join(cfg['brokers'])})")
    import logging

    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s")
    me = cfg["brokers"][name]
    topo: Topology = cfg["topology"]
    neighbors = {n: (cfg["brokers"][n]["host"], int(cfg["brokers"][n]["port"])) for n in topo.neighbors(name)}
    broker = Broker(name, mode=cfg.get("mode", "parametric"), matcher=cfg.get("matcher", "fastint"),
                    summary=cfg.get("summary", "attribute"), evolve_horizon=float(cfg.get("evolve_horizon", 1.0)),
                    evolving_engine=cfg.get("evolving_engine", "ves"), cache_ttl=float(cfg.get("cache_ttl", DEFAULT_TTL)),
                    caps=ClientCaps(**{k: cfg.get(k) for k in LIMITS}
                                    | {k: v for k, v in (limits or {}).items() if v is not None}))
    if broker.caps.any():
        logging.getLogger("eventpy.tcp").info("%s: per-client limits: %s", name, broker.caps.describe())
    status_file = config.parent / f"{name}.status.json"
    server = BrokerServer(broker, me["host"], int(me["port"]), neighbors, status_file=status_file)
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
    finally:
        # stopped on purpose (SIGTERM, Ctrl-C): its files left behind made `overlay status` list
        # it as a broker that had died. A crash (SIGKILL) leaves them, and status says so
        pid_file.release(status_file)
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

    def release(self, status_file: Path) -> None:
        """The pid file and the status file removed as the broker stops, if they are its own: a
        broker of that name started since (its listener is closed by now) keeps its files."""
        mine = str(os.getpid())
        try:
            if self.path.read_text().strip() == mine:
                self.path.unlink()
        except OSError:
            pass
        try:
            if str(json.loads(status_file.read_text()).get("pid")) == mine:
                status_file.unlink()
        except (OSError, ValueError, AttributeError):
            pass


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
               mode: str | None, matcher: str | None, summary: str | None, timeout: float = 20.0,
               limits: dict[str, int | None] | None = None) -> int:
    """`eventpy overlay up`: start the brokers and return once they are linked (_overlay_up)."""
    from ._overlay_up import overlay_up

    return overlay_up(run_dir, topology, brokers, host, port, mode, matcher, summary, timeout, limits)


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
