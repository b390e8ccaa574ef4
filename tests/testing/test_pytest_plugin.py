"""The pytest fixtures, as a team's project uses them: src/ with an .epy module, tests/ beside it,
pytest run in a process of its own (the plugin is found through its entry point)."""

import re
import subprocess
import sys
import textwrap

import pytest

ALERTS = '''
class PriceAlert:
    def __init__(self, firm: str, limit: float):
        self.firm = firm
        self.limit = limit
        self.hits = []

    event def quote(self, firm: str, price: float) when firm == self.firm and price < self.limit:
        self.hits.append(price)


class Courier:
    def __init__(self, x0: float, speed: float):
        self.x0 = x0
        self.speed = speed
        self.heard = []

    event def parcel(self, x: float) when abs(x - (self.x0 + self.speed * elapsed())) < 2:
        self.heard.append(x)
'''

TESTS = '''
import eventpy
import pytest
from shop.alerts import Courier, PriceAlert


@pytest.mark.parametrize("run", [1, 2])
def test_each_test_starts_from_nothing(eventpy_overlay, run):
    a = PriceAlert("IBM", 10.0)  # never closed: the next test must not see it
    PriceAlert.quote("IBM", 9.0)
    eventpy.drain(5)
    assert a.hits == [9.0]
    assert eventpy.stats()["delivered"] == 1


def test_time_without_sleeping(eventpy_clock):
    c = Courier(0.0, 1.5)
    eventpy_clock.advance(10)
    Courier.parcel(15.0)
    Courier.parcel(0.0)
    eventpy.drain(5)
    assert c.heard == [15.0]


def test_a_body_that_raises(eventpy_overlay):
    a = PriceAlert("IBM", 10.0)
    a.hits = None
    PriceAlert.quote("IBM", 9.0)
    eventpy.drain(5)


@pytest.mark.parametrize("run", [1, 2])
def test_on_a_broker_of_its_own(eventpy_broker, run):
    a = PriceAlert("IBM", 10.0)
    eventpy.default_node().advertise(PriceAlert.quote)
    eventpy.drain(5)
    PriceAlert.quote("IBM", 9.0)
    eventpy.drain(5)
    assert a.hits == [9.0]
    assert eventpy.default_node()._local.overlay.port == eventpy_broker.port
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "src" / "shop").mkdir(parents=True)
    (tmp_path / "src" / "shop" / "__init__.py").write_text("")
    (tmp_path / "src" / "shop" / "alerts.epy").write_text(textwrap.dedent(ALERTS))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shop.py").write_text(TESTS)
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    return tmp_path


def _pytest(project, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *args],
                          cwd=project, capture_output=True, text=True, timeout=300)


def test_the_fixtures_in_a_projects_test_run(project):
    run = _pytest(project)
    out = run.stdout
    assert re.search(r"\b6 passed, 1 error\b", out), out + run.stderr
    assert "ERROR tests/test_shop.py::test_a_body_that_raises" in out
    assert "event method PriceAlert.quote raised" in out and "alerts.epy" in out  # the body's line, named
    assert "AttributeError: 'NoneType' object has no attribute 'append'" in out


def test_two_workers_do_not_clash(project):
    pytest.importorskip("xdist")
    run = _pytest(project, "-n", "2", "-k", "broker or starts_from_nothing")
    assert re.search(r"\b4 passed\b", run.stdout), run.stdout + run.stderr


def test_the_readme_example_passes_as_written(project):
    from tests.test_readme import BLOCKS

    (block,) = [b for b in BLOCKS if "def test_courier_after_ten_seconds" in b]
    conftest, tests = block.split("# tests/test_alerts.py\n")
    (project / "tests" / "conftest.py").write_text(conftest)
    (project / "tests" / "test_shop.py").write_text(tests)
    run = _pytest(project, "-W", "error::eventpy.testing.LeftoverSubscriptions")
    assert re.search(r"\b2 passed\b", run.stdout) and "error" not in run.stdout, run.stdout + run.stderr


def test_a_conftest_that_names_the_plugin_as_well_as_the_install(project):
    """README's line for a checkout that is not installed (`pytest_plugins = [...]` in the top
    conftest.py) kept after `pip install eventpy`: pytest stopped before any test with `ValueError:
    Plugin already registered under a different name`, the entry point having registered the same
    module as `eventpy`. It is registered under the module's name now, which pytest skips."""
    (project / "conftest.py").write_text('pytest_plugins = ["eventpy.testing.pytest_plugin"]\n')
    run = _pytest(project, "-k", "starts_from_nothing")
    stale = "\n(an install made before the entry point was renamed: pip install -e . again, or make)"
    assert re.search(r"\b2 passed\b", run.stdout), run.stdout + run.stderr + stale
