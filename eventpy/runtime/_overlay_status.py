"""`eventpy overlay status`: a table of an overlay's brokers, from their status files, and what
to do about a broker that no longer runs. Exit status 0 when every broker serves, 3 when one does
not (gone or hung), 1 when there is no overlay in the run directory."""

from __future__ import annotations

import shlex
import sys
import time
import tomllib
from pathlib import Path

from ._natural_order import natural
from ._overlay_types import refused_lines, type_lines
from .launcher import _alive, _statuses


def _members(run_dir: Path) -> set[str] | None:
    """The brokers the run directory's overlay.toml names (None if it cannot be read)."""
    try:
        brokers = tomllib.loads((run_dir / "overlay.toml").read_text()).get("brokers")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return set(brokers) if isinstance(brokers, dict) else None


def show_status(run_dir: Path) -> int:
    states = _statuses(run_dir)
    members = _members(run_dir)
    if members is not None:  # a file of a broker the overlay does not have says nothing of it
        states = {n: s for n, s in states.items() if n in members}
    if not states:
        print(f"eventpy overlay: no overlay in {run_dir}", file=sys.stderr)
        return 1
    from rich.console import Console  # (once there is a table to draw)
    from rich.table import Table

    table = Table(title=f"overlay in {run_dir}")
    for col in ("broker", "address", "pid", "alive", "links", "subscriptions", "received", "sent",
                "msgs/s now", "msgs/s avg", "protocol"):
        table.add_column(col)
    dead: list[str] = []
    hung: list[tuple[str, float]] = []
    serving: set[str] = set()
    for name, s in sorted(states.items(), key=lambda item: natural(item[0])):
        stats = s.get("stats", {})
        subs = sum(t.get("subscriptions", 0) for t in s.get("types", {}).values())
        average = stats.get("received", 0) / max(s.get("uptime", 1), 1e-9)
        now = s.get("msgs_per_s")  # over the second before the status file was written
        alive = _alive(run_dir / f"{name}.pid")
        stale = _silent_for(run_dir / f"{name}.status.json") if alive else 0.0
        # a dead broker's file holds its last moment: links it no longer has and a rate it no
        # longer serves (they read as if it still ran); its totals are kept, as of its end
        connected = s.get("connected", {})
        links = ", ".join(f"{k} ({connected[k]})" for k in sorted(connected, key=natural)) if alive else "—"
        if not alive:
            dead.append(name)
            now = None
        else:
            serving.add(name)
        if stale:
            hung.append((name, stale))
        state = "no" if not alive else f"hung? ({stale:.0f}s)" if stale else "yes"
        table.add_row(name, f"{s['host']}:{s['port']}", str(s["pid"]), state, links, str(subs),
                      str(stats.get("received", 0)), str(stats.get("sent", 0)),
                      "—" if now is None else f"{now:.1f}", f"{average:.1f}", _version(s))
    Console(width=140).print(table)
    for line in type_lines(states, serving) + refused_lines(run_dir, states):
        print(line)
    _advise(run_dir, dead, states)
    cut = _links_down(states, dead)
    for name, seconds in hung:
        print(f"broker {name} (pid {states[name]['pid']}) runs but has not written its status for {seconds:.0f}s "
              f"(it does every second): stopped (SIGSTOP, a debugger) or stuck; its links and rates above are "
              f"as of then")
    return NOT_SERVING if dead or hung or cut else 0


# the exit status when a broker is not running or not serving, as an init script's `status` says
# "not running" (LSB), so that a health check can test it; 1 stays "no overlay there"
NOT_SERVING = 3


SILENT = 5.0  # a live broker whose status is older than this is not serving


def _silent_for(status_file: Path) -> float:
    """How long a live broker has not written its status file, if longer than SILENT (else 0)."""
    try:
        age = time.time() - status_file.stat().st_mtime
    except OSError:
        return 0.0
    return age if age > SILENT else 0.0


def _version(status: dict) -> str:
    """The wire protocol and eventpy version a broker runs, as `4 (0.2.0)` (an upgrade mixes them);
    a broker of eventpy 0.1.0 wrote neither in its status file."""
    if "protocol" not in status:
        return "?"
    return f"{status['protocol']} ({status.get('version', '?')})"


def _links_down(states: dict, dead: list[str]) -> bool:
    """The links of the overlay's configuration a running broker does not have, and why when it
    knows (a neighbor of another protocol version refused it, or cannot be reached): both brokers
    run, the table shows them alive, and the overlay is cut in two there. True if any: the status
    then exits as for a broker not serving (a health check that tests it learns the overlay is cut)."""
    cut = False
    for name, s in sorted(states.items(), key=lambda item: natural(item[0])):
        if name in dead:
            continue
        for neighbor, why in sorted(s.get("down", {}).items(), key=lambda item: natural(item[0])):
            print(f"broker {name}: its link to {neighbor} is down: {why}")
            cut = True
    return cut


def _advise(run_dir: Path, dead: list[str], states: dict) -> None:
    """What the operator can do about brokers that no longer run."""
    if not dead:
        return
    config = shlex.quote(str(run_dir / "overlay.toml"))
    if len(dead) == len(states):
        print(f"no broker of this overlay runs (stopped, killed, or the machine restarted): "
              f"'eventpy overlay up --run-dir {shlex.quote(str(run_dir))}' with the options it was "
              f"started with starts it again")
        return
    for name in dead:
        log = shlex.quote(str(run_dir / f"{name}.log"))
        print(f"broker {name} is not running (pid {states[name]['pid']} is gone; the end of {log} may say why); "
              f"its neighbors re-dial it and its clients reconnect once it is back: "
              f"eventpy broker --config {config} --id {name} >> {log} 2>&1 &")
