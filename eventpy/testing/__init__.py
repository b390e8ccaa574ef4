"""Testing programs that use EventPy (README, "Testing your program").

* `fresh_overlay()`: a context manager giving a block (a test) an embedded overlay of its own,
  optionally on a `ManualClock`, and shutting it down afterwards;
* `why_not(obj, Class.method, **attrs)`: why an object (or a Subscription) would not get an event;
* `start_broker(run_dir)`: a real `eventpy broker` process on a free port of 127.0.0.1;
* the pytest fixtures `eventpy_overlay`, `eventpy_clock` and `eventpy_broker`
  (`eventpy.testing.pytest_plugin`, loaded by pytest when eventpy is installed).
"""

from ._broker import BrokerProcess, start_broker
from ._clock import ManualClock
from ._overlay import CallbackErrors, LeftoverSubscriptions, TestOverlay, fresh_overlay
from ._why_not import why_not

for _exc in (CallbackErrors, LeftoverSubscriptions):  # as the program names them
    _exc.__module__ = __name__

__all__ = ["BrokerProcess", "CallbackErrors", "LeftoverSubscriptions", "ManualClock", "TestOverlay",
           "fresh_overlay", "start_broker", "why_not"]
