"""What starting eventpy costs: `import eventpy`, the light commands (`--version`, `--help`,
`overlay status`, `overlay down`, `eventpyc --version`) and the pytest plugin load none of the
heavy modules (the runtime, the guard compiler, lark, libcst, numpy, scipy, msgpack, rich,
asyncio). Each took ~0.5 s before, and a Ctrl-C meanwhile printed a long traceback.

Checked by the modules a fresh process has loaded when it ends (sys.modules), not by timing,
which a loaded machine makes flaky."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# what the light paths must not load: each costs tens of milliseconds or more, or drags the rest in
HEAVY = ("numpy", "scipy", "lark", "libcst", "msgpack", "rich", "asyncio", "eventpy.guards",
         "eventpy.runtime.api", "eventpy.runtime.broker", "eventpy.runtime.embedded", "eventpy.runtime.wire",
         "eventpy.runtime.client", "eventpy.runtime.matching")


# runs `python -m MODULE ARGS` or `python -c CODE ARGS` and writes the modules loaded at exit
# (argparse's exit included) to the file named by EVENTPY_MODULES_OUT
_RUN = """
import atexit, os, runpy, sys

def dump():
    with open(os.environ["EVENTPY_MODULES_OUT"], "w") as f:
        f.write("\\n".join(sorted(sys.modules)))

atexit.register(dump)
kind, target, *rest = sys.argv[1:]
sys.argv = [target, *rest]
if kind == "-m":
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
"""


def _imported(args: list[str], tmp_path) -> set[str]:
    """The modules in sys.modules when a fresh `python ARGS` ends."""
    listing = tmp_path / "modules.txt"
    out = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "EVENTPY_MODULES_OUT": str(listing)})
    assert out.returncode in (0, 1), out.stderr[-2000:]  # 1: `overlay status` where there is no overlay
    names = set(listing.read_text().split())
    assert "eventpy" in names, names  # the listing was read (else every check below passes)
    return names


def _heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [
    ["-c", "import eventpy"],
    ["-c", "import eventpy; eventpy.__version__"],
    ["-m", "eventpy", "--version"],
    ["-m", "eventpy", "--help"],
    ["-m", "eventpy", "overlay", "--help"],
    ["-m", "eventpy.compiler.cli", "--version"],
    ["-c", "import eventpy.testing.pytest_plugin"],
], ids=lambda a: " ".join(a))
def test_the_light_paths_load_nothing_heavy(args, tmp_path):
    assert _heavy(_imported(args, tmp_path)) == []


@pytest.mark.parametrize("action", ["status", "down"])
def test_overlay_status_and_down_without_an_overlay_load_nothing_heavy(tmp_path, action):
    names = _imported(["-m", "eventpy", "overlay", action, "--run-dir", str(tmp_path / "none")], tmp_path)
    assert _heavy(names) == []


def test_a_public_name_still_loads_what_it_needs(tmp_path):
    """The other side: reading a name imports its module (the check above sees imports)."""
    names = _imported(["-c", "from eventpy import connect, GuardError"], tmp_path)
    assert {"eventpy.runtime.api", "eventpy.guards", "numpy"} <= names


_PUBLIC = """
import pickle, sys
import eventpy
names = list(eventpy.__all__)
star = {}
exec("from eventpy import *", star)
assert sorted(n for n in star if not n.startswith("__")) == sorted(names), star.keys()
assert set(names) <= set(dir(eventpy))
for name in names:
    assert getattr(eventpy, name) is star[name]
from eventpy.runtime.api import connect, drain, stats, Node, Subscription
from eventpy.runtime.model import EventType
assert (eventpy.connect, eventpy.drain, eventpy.stats, eventpy.EventType) == (connect, drain, stats, EventType)
assert eventpy.Node is Node and eventpy.Subscription is Subscription  # not the guard AST's Node
err = pickle.loads(pickle.dumps(eventpy.GuardError("x")))
assert type(err) is eventpy.GuardError
assert eventpy.p2p.Network is not None and eventpy.guards.GuardError is eventpy.GuardError
try:
    eventpy.no_such_name
except AttributeError as e:
    assert "no_such_name" in str(e)
else:
    raise AssertionError("eventpy.no_such_name")
print("ok")
"""


def test_every_public_name_is_there_as_before():
    """README's tour and `eventpy.__all__`: `from eventpy import X`, `eventpy.X`, `import *`."""
    out = subprocess.run([sys.executable, "-c", _PUBLIC], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


_PRIVATE_FIRST = """
from eventpy.runtime._fifo_lock import FieldDeadlock
from eventpy.guards._errors import GuardError
from eventpy.runtime.client._core import SchemaRefused
from eventpy.runtime.api import UpdateNotConfirmed
from eventpy.testing._overlay import CallbackErrors, LeftoverSubscriptions
print(*(c.__module__ + "." + c.__qualname__ for c in
        (FieldDeadlock, GuardError, SchemaRefused, UpdateNotConfirmed, CallbackErrors, LeftoverSubscriptions)))
"""


def test_exceptions_are_named_where_the_program_reaches_them_however_they_were_imported():
    """`import eventpy` renamed them when it imported them all; now that it imports nothing, each
    class names itself (a traceback's last line says `eventpy.GuardError: ...`)."""
    out = subprocess.run([sys.executable, "-c", _PRIVATE_FIRST], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["eventpy.FieldDeadlock", "eventpy.GuardError", "eventpy.SchemaRefused",
                                  "eventpy.UpdateNotConfirmed", "eventpy.testing.CallbackErrors",
                                  "eventpy.testing.LeftoverSubscriptions"], out.stderr


def test_a_guard_mistake_is_still_named_eventpy_guard_error():
    out = subprocess.run([sys.executable, "-c", "import eventpy\nQ = eventpy.EventType('Q', p=float)\n"
                          "eventpy.connect().subscribe(Q, 'p <')"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "\neventpy.GuardError: <guard>:1:4: error:" in out.stderr, out.stderr


_PUBLISHES_AT_EXIT = """
import atexit

import eventpy


def last_words():  # registered after `import eventpy`, before the runtime is first used
    node.publish(Q, x=1)


atexit.register(last_words)
node = eventpy.connect()
Q = eventpy.EventType("t.Q", x=int)
node.subscribe(Q, "x > 0", on_event=lambda e: print("delivered", flush=True))
"""


def test_the_exit_drain_keeps_its_place_among_the_programs_atexit_handlers():
    """The runtime registered its exit drain when `import eventpy` imported it: a handler the
    program registered afterwards ran before the drain, and what it published was delivered.
    Registered when the runtime was first used instead, the drain ran first and closed the node:
    the handler's publish raised 'node ... is closed'."""
    out = subprocess.run([sys.executable, "-c", _PUBLISHES_AT_EXIT], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout, out.stderr) == (0, "delivered\n", ""), out
