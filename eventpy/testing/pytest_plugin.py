"""pytest fixtures for programs that use EventPy, registered as a pytest plugin (entry point
`pytest11`, named as this module) when eventpy is installed; a checkout that is not installed
loads it with `pytest_plugins = ["eventpy.testing.pytest_plugin"]` in its top conftest.py, a line
that pytest skips once the entry point has registered it.

* `eventpy_overlay`: a fresh embedded overlay for the test (`eventpy.testing.fresh_overlay`):
  nothing of an earlier test, shut down afterwards, the test fails if a callback raised;
* `eventpy_clock`: the same on a ManualClock the test advances (elapsed() without sleeping);
* `eventpy_broker`: a real broker process on a free port of 127.0.0.1 (files in the test's
  tmp_path, so parallel workers share nothing); EVENTPY_BROKER names it for the test, and it is
  stopped afterwards, also when the test failed.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import pytest

# Each fixture imports what it uses: pytest imports this plugin at the start of every run where
# eventpy is installed, also in projects that never use it, and the runtime costs ~0.5 s
# (tests/test_startup.py checks what this module loads).
if TYPE_CHECKING:
    from . import BrokerProcess, ManualClock, TestOverlay


@contextmanager
def _callbacks_checked() -> Iterator[None]:
    """CallbackErrors as a test failure of its own, without the fixture's code around it."""
    from . import CallbackErrors

    try:
        yield
    except CallbackErrors as e:  # `from None`: the report shows the message once, not chained to itself
        raise pytest.fail.Exception(str(e), pytrace=False) from None


@pytest.fixture
def eventpy_overlay() -> Iterator[TestOverlay]:
    """A fresh embedded overlay; `.node` is the default node, `.callback_errors` what raised."""
    from . import fresh_overlay

    with _callbacks_checked(), fresh_overlay() as overlay:
        yield overlay


@pytest.fixture
def eventpy_clock() -> Iterator[ManualClock]:
    """A fresh embedded overlay on a ManualClock, which the fixture yields: `advance(seconds)`."""
    from . import ManualClock, fresh_overlay

    clock = ManualClock()
    with _callbacks_checked(), fresh_overlay(clock=clock):
        yield clock


@pytest.fixture
def eventpy_broker(tmp_path, monkeypatch) -> Iterator[BrokerProcess]:
    """A broker process of the test's own; EVENTPY_BROKER is its URL meanwhile, so `connect()`
    and the default node of `.epy` objects attach to it. Nodes are shut down before it stops."""
    from .. import shutdown
    from . import start_broker

    shutdown()  # nothing of an earlier test (a default node on another overlay)
    broker = start_broker(tmp_path / "eventpy-broker")
    monkeypatch.setenv("EVENTPY_BROKER", broker.url)
    try:
        yield broker
    finally:
        try:
            shutdown()
        finally:
            broker.stop()
