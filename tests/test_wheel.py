"""EventPy as a user gets it: the wheel and the sdist built from this tree, what they hold, and the
wheel installed into a virtual environment of its own, used from a directory that has none of the
repository's files (no tests/, tools/, examples/, grammar/ beside it).

The build runs without isolation (`build` and `hatchling` are in the test extra), and the fresh
environment gets eventpy from the wheel with `--no-deps`: its dependencies are this interpreter's,
seen through a directory of links to them that leaves out eventpy itself (its editable install)
and pyspark (as `pip install eventpy` without the replay extra leaves it out). About 15-25 s."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = re.search(r'__version__ = "([^"]+)"', (REPO / "eventpy" / "_version.py").read_text()).group(1)
LEFT_OUT = ("eventpy", "_editable_impl_eventpy", "__editable__", "pyspark")  # of the links to this env's packages


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel `python -m build` makes (the wheel from the unpacked sdist)."""
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr + "\n(build and hatchling: pip install -e '.[test]')"
    return out / f"eventpy-{VERSION}.tar.gz", out / f"eventpy-{VERSION}-py3-none-any.whl"


def _package_files() -> set[str]:
    """The files of eventpy/ the wheel must hold: those git tracks (a checkout), else what is there."""
    tracked = subprocess.run(["git", "ls-files", "eventpy"], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode == 0 and tracked.stdout.strip():
        return set(tracked.stdout.split())
    return {p.relative_to(REPO).as_posix() for p in (REPO / "eventpy").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_wheel_holds_every_module_the_grammar_and_package_data_and_nothing_else(dist):
    _, wheel = dist
    with zipfile.ZipFile(wheel) as z:
        infos = {i.filename: i for i in z.infolist()}
        meta = f"eventpy-{VERSION}.dist-info/"
        assert {n for n in infos if not n.startswith(meta)} == _package_files()
        # the grammar is a link in the tree (eventpy/grammar -> grammar/): its text, not the link
        assert z.read("eventpy/grammar/eventpy.lark") == (REPO / "grammar" / "eventpy.lark").read_bytes()
        big = [(n, i.file_size) for n, i in infos.items() if i.file_size > 200_000]
        assert not big, f"large files in the wheel: {big}"
        entry_points = z.read(meta + "entry_points.txt").decode()
        metadata = z.read(meta + "METADATA").decode()
    assert "eventpy = eventpy.__main__:main" in entry_points
    assert "eventpyc = eventpy.compiler.cli:main" in entry_points
    assert "[pytest11]\neventpy.testing.pytest_plugin = eventpy.testing.pytest_plugin" in entry_points
    for field in ("License: MIT", "Requires-Python: >=3.11", "Description-Content-Type: text/markdown",
                  "Provides-Extra: replay", "Provides-Extra: test"):
        assert field in metadata, field
    assert "## A short tour" in metadata  # the README is the long description
    with zipfile.ZipFile(wheel) as z:  # the license's text, not only its name (MIT asks for it)
        assert z.read(meta + "licenses/LICENSE") == (REPO / "LICENSE").read_bytes()


def test_the_sdist_holds_the_sources_and_no_build_or_run_leftovers(dist):
    sdist, wheel = dist
    with tarfile.open(sdist) as t:
        names = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    for needed in ("pyproject.toml", "README.md", "LICENSE", "grammar/eventpy.lark", "eventpy/__init__.py"):
        assert needed in names, needed
    leftovers = [n for n in names if re.match(r"(\.venv|runs|dist|build|\.eventpy|\.pytest_cache|\.hypothesis)/", n)
                 or "__pycache__" in n or n.endswith(".pyc")]
    assert not leftovers, leftovers
    assert wheel.exists()  # build made it from this sdist, unpacked


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory):
    """A venv holding only the wheel, its dependencies linked in; returns its bin/ directory."""
    _, wheel = dist
    root = tmp_path_factory.mktemp("user")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    run = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                          "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    deps = root / "deps"
    deps.mkdir()
    for where in site.getsitepackages():
        for entry in Path(where).iterdir():
            if not entry.name.startswith(LEFT_OUT) and not (deps / entry.name).exists():
                (deps / entry.name).symlink_to(entry)
    where_code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", where_code],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_test_deps.pth").write_text(f"{deps}\n")
    return venv / "bin"


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A directory with none of the repository's files, and an environment that points nowhere into it."""
    for var in ("PYTHONPATH", "EVENTPY_BROKER", "VIRTUAL_ENV"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _run(cmd: list, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_the_console_scripts_run_the_installed_package(installed, elsewhere):
    for script in ("eventpy", "eventpyc"):
        run = _run([installed / script, "--version"], elsewhere)
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith(f"{script} {VERSION}\n"), run.stdout
        assert f"package in {installed.parent}" in run.stdout, run.stdout  # not the checkout's


def test_eventpyc_and_eventpy_run_on_a_copy_of_an_example(installed, elsewhere):
    shutil.copy(REPO / "examples" / "stock.epy", elsewhere)
    run = _run([installed / "eventpyc", "stock.epy"], elsewhere)
    assert run.returncode == 0 and (elsewhere / "stock.py").exists(), run.stderr
    run = _run([installed / "eventpy", "run", "stock.epy"], elsewhere)
    assert run.returncode == 0, run.stderr
    assert "m1 buys IBM at 99.0" in run.stdout and "final limit 120.0" in run.stdout, run.stdout
    tour = re.search(r"^```python\n(import eventpy\n.*?)^```", (REPO / "README.md").read_text(), re.S | re.M).group(1)
    (elsewhere / "tour.py").write_text(tour)
    run = _run([installed / "python", "tour.py"], elsewhere)
    assert run.returncode == 0 and "'delivered': 1" in run.stdout, run.stdout + run.stderr


def test_an_overlay_of_installed_brokers(installed, elsewhere):
    up = _run([installed / "eventpy", "overlay", "up", "--brokers", "2", "--topology", "line", "--port", "0"],
              elsewhere, timeout=120)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        ports = re.findall(r"on 127\.0\.0\.1:(\d+)", up.stdout + up.stderr)
        assert len(ports) == 2, up.stdout + up.stderr
        status = _run([installed / "eventpy", "overlay", "status"], elsewhere)
        assert status.returncode == 0, status.stdout + status.stderr
        script = f"""
import eventpy
sub_node = eventpy.connect("tcp://127.0.0.1:{ports[1]}", name="sub")
pub_node = eventpy.connect("tcp://127.0.0.1:{ports[0]}", name="pub")
Q = eventpy.EventType("t.Q", n=int)
got = []
sub_node.subscribe(Q, "n > k", params={{"k": 1}}, on_event=got.append)
eventpy.drain(30)
pub_node.advertise(Q)
eventpy.drain(30)
pub_node.publish(Q, n=5)
pub_node.publish(Q, n=0)
eventpy.drain(30)
print("got", [e.n for e in got])
"""
        run = _run([installed / "python", "-c", script], elsewhere)
        assert run.returncode == 0 and "got [5]" in run.stdout, run.stdout + run.stderr
    finally:
        down = _run([installed / "eventpy", "overlay", "down"], elsewhere)
    assert down.returncode == 0, down.stdout + down.stderr


def test_the_pytest_fixtures_of_the_installed_plugin(installed, elsewhere):
    (elsewhere / "conftest.py").write_text('pytest_plugins = ["eventpy.testing.pytest_plugin"]\n')  # README's line
    (elsewhere / "test_it.py").write_text(
        "import eventpy\n\n"
        "def test_fresh(eventpy_overlay):\n"
        "    Q = eventpy.EventType('t.Q', n=int)\n"
        "    got = []\n"
        "    eventpy.connect().subscribe(Q, 'n > 1', on_event=got.append)\n"
        "    eventpy.connect().publish(Q, n=5)\n"
        "    eventpy.drain(30)\n"
        "    assert [e.n for e in got] == [5] and eventpy.stats()['delivered'] == 1\n")
    run = _run([installed / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"], elsewhere)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr


def test_replay_without_the_replay_extra_names_the_pip_command(installed, elsewhere):
    (elsewhere / "tiny.toml").write_text('[replay]\nworkload = "micro"\nmodes = ["parametric"]\n')
    run = _run([installed / "eventpy", "replay", "tiny.toml", "--out", "runs/tiny"], elsewhere)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "pip install 'eventpy[replay]'" in run.stderr and "make venv" not in run.stderr, run.stderr
    assert not (elsewhere / "runs").exists()
