"""EventPy: parametric content-based publish/subscribe as a part of Python."""

# `import eventpy` loads only the import hook: every `eventpy ...` command, the pytest plugin and
# each program that imports eventpy used to pay ~0.5 s for the runtime, the guard compiler, lark
# and numpy before doing anything. A public name is imported when it is first read (PEP 562), so
# `from eventpy import connect` and `eventpy.connect` work as before.
# tests/test_startup.py checks which heavy modules `import eventpy` loads.

from __future__ import annotations

# first: a Ctrl-C while an `eventpy` command imports the package is held until its main() reports
# it in one line (in a program that imports eventpy, nothing happens here)
from ._interrupted import hold_in_commands as _hold_in_commands

_hold_in_commands()

import atexit
import importlib
import sys

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing: ~15 ms)

from ._version import __version__  # noqa: F401  (--version, HELLO refusals)

# public name -> the module that defines it (each exception sets its own __module__ to "eventpy",
# so a traceback's last line says `eventpy.GuardError: ...` however it was imported)
_LAZY = {
    "GuardError": "eventpy.guards",
    "Node": "eventpy.runtime.api", "Subscription": "eventpy.runtime.api",
    "UpdateNotConfirmed": "eventpy.runtime.api", "confirm": "eventpy.runtime.api",
    "connect": "eventpy.runtime.api", "default_node": "eventpy.runtime.api", "drain": "eventpy.runtime.api",
    "set_default_node": "eventpy.runtime.api", "shutdown": "eventpy.runtime.api", "stats": "eventpy.runtime.api",
    "SchemaRefused": "eventpy.runtime.client", "UpdateMonitor": "eventpy.runtime.client",
    "event_info": "eventpy.runtime.client",
    "LimitExceeded": "eventpy.runtime._client_caps",
    "elapsed": "eventpy.runtime._elapsed",
    "FieldDeadlock": "eventpy.runtime.lang",
    "Event": "eventpy.runtime.model", "EventType": "eventpy.runtime.model",
}

# subpackages reachable as attributes (`eventpy.p2p.Network` after `import eventpy`): the eager
# package made `eventpy.runtime` and `eventpy.guards` attributes by importing them
_SUBPACKAGES = frozenset({"aio", "compiler", "guards", "p2p", "replay", "runtime", "testing"})


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if name in _SUBPACKAGES:
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # read once: later reads are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted((set(globals()) | set(_LAZY)) - {"TYPE_CHECKING", "annotations", "atexit", "importlib", "sys"})


if TYPE_CHECKING:  # what type checkers and IDEs see: the names, as the eager package had them
    from typing import Any

    from .guards import GuardError
    from .runtime._elapsed import elapsed
    from .runtime.api import (Node, Subscription, UpdateNotConfirmed, confirm, connect, default_node, drain,
                              set_default_node, shutdown, stats)
    from .runtime._client_caps import LimitExceeded
    from .runtime.client import SchemaRefused, UpdateMonitor, event_info
    from .runtime.lang import FieldDeadlock
    from .runtime.model import Event, EventType



def _at_exit() -> None:
    """What the process owes at its end (runtime/_exit.py), once the runtime was used. Registered
    here, at `import eventpy`, as when that imported the runtime: the program's atexit handlers
    registered after it run before it (last in, first out), so what they publish is delivered."""
    owed = sys.modules.get("eventpy.runtime._exit")
    if owed is not None:
        owed.at_exit()


atexit.register(_at_exit)

from .compiler import importhook as _importhook  # noqa: E402  (`import stock` finds stock.epy)

_importhook.install()

__all__ = [
    "FieldDeadlock", "LimitExceeded", "SchemaRefused", "UpdateMonitor", "UpdateNotConfirmed", "confirm",
    "Event", "EventType", "GuardError", "Node", "Subscription", "connect", "default_node", "drain",
    "elapsed", "event_info", "set_default_node", "shutdown", "stats",
]
