"""Python written by an eventpyc of another version, on this runtime: it runs, or its import fails
saying to recompile or to upgrade (not an AttributeError or a TypeError from inside the runtime).
eventpyc marks what it writes with the runtime interface it calls (runtime/_generated.py)."""

from __future__ import annotations

import importlib
import itertools
import os
import textwrap

import pytest

import eventpy
from eventpy import __version__
from eventpy._version import GENERATED_INTERFACE
from eventpy.compiler import compile_source
from eventpy.runtime import _generated

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

_names = itertools.count()

# What the eventpyc of eventpy 0.1.0 wrote for WATCH_EPY before the interface mark (at 2da5ed4),
# and, for its class of its own metaclass, before `__eventpy__.metaclass` (at 8b085da): the
# latter fails on this runtime with Python's "metaclass conflict".
WATCH_EPY = '''\
class Meta(type):
    pass


class Watch(metaclass=Meta):
    local seen: int = 0

    def __init__(self, limit: float):
        self.limit = limit
        self.got = []

    event def quote(self, price: float) when price < self.limit:
        self.got.append(price)
        self.seen += 1
        self.limit = price
        release self.seen

    def count(self) -> int:
        return last self.seen
'''
WATCH_0_1_0 = '''\
class Meta(type):
    pass


class Watch((__eventpy__ := __import__("eventpy.runtime.lang", fromlist=["lang"])).EventObject, metaclass=__eventpy__.metaclass(Meta), locals=('seen',)):
    seen: int = 0

    def __init__(self, limit: float):
        with __eventpy__.assigning(self, "limit"): self.limit = limit  # UPD quote: price < self.limit
        self.got = []

    def quote(self, price: float) -> __eventpy__.when('price < self.limit', 12, 46):
        self.got.append(price)
        self.seen += 1
        with __eventpy__.assigning(self, "limit"): self.limit = price  # UPD quote: price < self.limit
        __eventpy__.release(self, "seen")

    def count(self) -> int:
        return __eventpy__.last(self, "seen")
'''
WATCH_OLDER = WATCH_0_1_0.replace("metaclass=__eventpy__.metaclass(Meta)", "metaclass=Meta")
assert WATCH_OLDER != WATCH_0_1_0


def _module(tmp_path, monkeypatch, text: str, epy: str | None = None) -> str:
    """A module of `text` (and its .epy, older) in tmp_path, on sys.path; its name."""
    name = f"generated_{next(_names)}"
    if epy is not None:
        (tmp_path / f"{name}.epy").write_text(epy)
    (tmp_path / f"{name}.py").write_text(text)
    if epy is not None:  # the .py eventpyc wrote is the newer file
        t = (tmp_path / f"{name}.py").stat().st_mtime
        os.utime(tmp_path / f"{name}.epy", (t - 10, t - 10))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _runs(module) -> None:
    w = module.Watch(10.0)
    for price in (5.0, 7.0, 3.0):
        module.Watch.quote(price)
    eventpy.drain(10.0)
    assert (w.got, w.count()) == ([5.0, 3.0], 2)


def test_eventpyc_marks_its_output_with_the_runtime_interface_and_it_runs(tmp_path, monkeypatch):
    python = compile_source(WATCH_EPY, "watch.epy", "watch")  # a class first: it binds the runtime
    assert (f'class Watch((__eventpy__ := __import__("eventpy.runtime.lang", fromlist=["lang"])'
            f'.generated_for({GENERATED_INTERFACE}, "{__version__}")).EventObject') in python
    _runs(importlib.import_module(_module(tmp_path, monkeypatch, python)))


def test_the_line_of_the_runtimes_import_carries_the_mark(tmp_path, monkeypatch):
    python = compile_source("import eventpy\n" + WATCH_EPY, "watch.epy", "watch")
    assert python.splitlines()[0] == (f'import eventpy.runtime.lang as __eventpy__; __eventpy__.generated_for('
                                      f'{GENERATED_INTERFACE}, "{__version__}"); import eventpy')
    _runs(importlib.import_module(_module(tmp_path, monkeypatch, python)))


def test_code_for_a_newer_runtime_interface_is_refused_at_import(tmp_path, monkeypatch):
    newer = GENERATED_INTERFACE + 1
    name = _module(tmp_path, monkeypatch, f'import eventpy.runtime.lang as __eventpy__; '
                                          f'__eventpy__.generated_for({newer}, "9.0.0")\n')
    with pytest.raises(ImportError) as e:
        importlib.import_module(name)
    assert str(e.value) == (
        f"{tmp_path / name}.py was compiled by eventpyc 9.0.0 for the runtime's interface {newer}; eventpy "
        f"{__version__} runs interface {GENERATED_INTERFACE}: upgrade eventpy where the program runs (pip install "
        f"-U) to one of interface {newer}, as `eventpy --version` says, or recompile the .epy with the eventpyc of "
        f"eventpy {__version__}")


def test_code_for_an_interface_no_longer_run_is_refused_saying_to_recompile(tmp_path, monkeypatch):
    monkeypatch.setattr(_generated, "INTERFACE", GENERATED_INTERFACE + 1)
    monkeypatch.setattr(_generated, "OLDEST", GENERATED_INTERFACE + 1)
    name = _module(tmp_path, monkeypatch, compile_source(WATCH_EPY, "watch.epy", "watch"))
    with pytest.raises(ImportError, match=r"for the runtime's interface 1; eventpy .* runs interface 2: "
                                          r"recompile the \.epy with the eventpyc of eventpy"):
        importlib.import_module(name)


def test_a_runtime_name_code_of_a_newer_eventpyc_calls_says_to_upgrade_or_recompile(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "import eventpy.runtime.lang as __eventpy__\n"
                                          "class A(__eventpy__.EventObject, metaclass=__eventpy__.someday()):\n"
                                          "    pass\n")
    with pytest.raises(AttributeError) as e:
        importlib.import_module(name)
    assert str(e.value) == (
        f"eventpy.runtime.lang has no 'someday': code compiled by an eventpyc newer than this runtime (eventpy "
        f"{__version__}) calls it; upgrade eventpy where the program runs (pip install -U), or recompile "
        f"the .epy with the eventpyc of eventpy {__version__}")


def test_code_of_eventpyc_0_1_0_without_the_mark_runs(tmp_path, monkeypatch):
    _runs(importlib.import_module(_module(tmp_path, monkeypatch, WATCH_0_1_0)))


def test_unmarked_code_beside_its_epy_is_imported_from_the_epy_with_a_warning(tmp_path, monkeypatch, capsys):
    """The oldest form fails on this runtime (Python's 'metaclass conflict' from the class statement):
    its .epy beside it is compiled instead, as for a .py older than its .epy."""
    name = _module(tmp_path, monkeypatch, WATCH_OLDER, epy=WATCH_EPY)
    _runs(importlib.import_module(name))
    assert (f"{tmp_path / name}.py: warning: compiled by an eventpyc older than this runtime (eventpy 0.1.0's, "
            f"before the interface mark) {name}.epy beside it; importing {name}.epy (run eventpyc {name}.epy "
            f"again, or delete {name}.py)") in capsys.readouterr().err


def test_code_of_this_interface_beside_its_epy_is_imported_as_it_is(tmp_path, monkeypatch, capsys):
    python = compile_source(WATCH_EPY, "watch.epy", "watch").replace("self.got.append(price)",
                                                                      "self.got.append(price)  # the .py's")
    name = _module(tmp_path, monkeypatch, python, epy=WATCH_EPY)
    module = importlib.import_module(name)
    assert module.__file__ == str(tmp_path / f"{name}.py")
    assert "warning" not in capsys.readouterr().err
    _runs(module)


def test_code_marked_for_another_interface_beside_its_epy_is_imported_from_the_epy(tmp_path, monkeypatch, capsys):
    newer = GENERATED_INTERFACE + 1
    python = compile_source(WATCH_EPY, "watch.epy", "watch").replace(
        f"generated_for({GENERATED_INTERFACE}, ", f"generated_for({newer}, ")
    name = _module(tmp_path, monkeypatch, python, epy=WATCH_EPY)
    _runs(importlib.import_module(name))
    assert (f"warning: compiled by eventpyc {__version__} (for the runtime's interface {newer}; this one's is "
            f"{GENERATED_INTERFACE}) {name}.epy beside it" in capsys.readouterr().err)


def test_a_plain_python_module_beside_an_epy_without_constructs_is_imported_as_it_is(tmp_path, monkeypatch):
    text = textwrap.dedent('''
        VALUE = 3
    ''')
    name = _module(tmp_path, monkeypatch, text, epy=text)
    assert importlib.import_module(name).__file__ == str(tmp_path / f"{name}.py")
