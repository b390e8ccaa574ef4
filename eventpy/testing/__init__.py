"""Testing programs that use EventPy (README, "Testing your program").

* `fresh_overlay()`: a context manager giving a block (a test) an embedded overlay of its own,
  optionally on a `ManualClock`, and shutting it down afterwards;
* `why_not(obj, Class.method, **attrs)`: why an object (or a Subscription) would not get an event;
* `start_broker(run_dir)`: a real `eventpy broker` process on a free port of 127.0.0.1;
* the pytest fixtures `eventpy_overlay`, `eventpy_clock` and `eventpy_broker`
  (`eventpy.testing.pytest_plugin`, loaded by pytest when eventpy is installed).
"""

# The names are imported when first read (PEP 562): pytest loads the plugin, and so this package,
# in every run of every project where eventpy is installed, and the runtime (numpy, the guard
# compiler) is for the tests that use a fixture.

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "BrokerProcess": "._broker", "start_broker": "._broker",
    "ManualClock": "._clock",
    "CallbackErrors": "._overlay", "LeftoverSubscriptions": "._overlay", "TestOverlay": "._overlay",
    "fresh_overlay": "._overlay",
    "why_not": "._why_not",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:
    from ._broker import BrokerProcess, start_broker
    from ._clock import ManualClock
    from ._overlay import CallbackErrors, LeftoverSubscriptions, TestOverlay, fresh_overlay
    from ._why_not import why_not

__all__ = ["BrokerProcess", "CallbackErrors", "LeftoverSubscriptions", "ManualClock", "TestOverlay",
           "fresh_overlay", "start_broker", "why_not"]
