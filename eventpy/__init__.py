"""EventPy: parametric content-based publish/subscribe as a part of Python."""

from .guards import GuardError
from .runtime.api import (Node, Subscription, UpdateNotConfirmed, confirm, connect, default_node, drain,
                          set_default_node, shutdown, stats)
from .runtime.client import SchemaRefused, UpdateMonitor, event_info
from .runtime._elapsed import elapsed
from .runtime.lang import FieldDeadlock
from .runtime.model import Event, EventType

from ._version import __version__  # noqa: E402  (--version, HELLO refusals)

# the exceptions a program meets, named where the program reaches them (a traceback's last line
# says `eventpy.GuardError: ...`, not the private module that defines it)
for _exc in (FieldDeadlock, GuardError, SchemaRefused, UpdateNotConfirmed):
    _exc.__module__ = __name__

from .compiler import importhook as _importhook  # noqa: E402  (`import stock` finds stock.epy)

_importhook.install()

__all__ = [
    "FieldDeadlock", "SchemaRefused", "UpdateMonitor", "UpdateNotConfirmed", "confirm",
    "Event", "EventType", "GuardError", "Node", "Subscription", "connect", "default_node", "drain",
    "elapsed", "event_info", "set_default_node", "shutdown", "stats",
]
