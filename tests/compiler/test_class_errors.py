"""Mistakes in a class that only its creation can find (a field typed by a base class the
compiler does not see, a metaclass conflict): shown as the compiler shows its own — the .epy
file, line and column, the line and a caret — with a traceback that ends at the class statement."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import traceback

import pytest

from eventpy.guards import GuardError

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

PROGRAM = '''
    from base import Typed


    class B(Typed):
        def __init__(self):
            self.limit = "x"

        event def quote(self, firm: str,
                        price: float) when firm == "IBM" and price < self.limit:
            pass
'''


def test_a_guard_error_found_when_the_class_is_made_points_into_the_epy_file(tmp_path):
    (tmp_path / "base.py").write_text("class Typed:\n    limit: str\n")
    prog = tmp_path / "prog.epy"
    prog.write_text(textwrap.dedent(PROGRAM).lstrip("\n"))
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(prog)], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    # the program's frame only, then the diagnostic as eventpyc would print it
    assert lines[:3] == ["Traceback (most recent call last):", f'  File "{prog}", line 4, in <module>',
                         "    class B(Typed):"], out.stderr
    assert lines[3].endswith(f"{prog}:9:58: error: matching: attribute 'price' of type float cannot be "
                             "compared with field self.limit"), out.stderr
    assert lines[4].strip() == 'price: float) when firm == "IBM" and price < self.limit:'
    assert lines[5].index("^") == lines[4].index("price <"), out.stderr


def test_without_the_file_the_guards_own_text_is_shown_at_its_place(monkeypatch):
    base = type(sys)("base")
    exec("class Typed:\n    limit: str\n", base.__dict__)
    monkeypatch.setitem(sys.modules, "base", base)
    with pytest.raises(GuardError) as info:
        load(PROGRAM)                   # compiled from a string: no file for linecache
    text = str(info.value).splitlines()
    assert text[0] == ("prog.epy:10:58: error: matching: attribute 'price' of type float cannot be compared "
                       "with field self.limit")
    assert text[1].strip() == 'firm == "IBM" and price < self.limit'  # at its columns in the file
    assert text[1].index("firm") == 4 + 39 and text[2].index("^") == text[1].index("price <")
    assert [f.name for f in traceback.extract_tb(info.value.__traceback__)][-1] == "<module>"


def test_a_metaclass_conflict_is_the_programs_line():
    with pytest.raises(TypeError, match="metaclass conflict") as info:
        load('''
        import abc

        class Meta(type):
            pass

        class Odd(metaclass=Meta):
            pass

        class Both(abc.ABC, Odd):
            event def e(self, x: int) when x > 0:
                pass
        ''')
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == "prog.epy" and last.lineno == 10, traceback.format_tb(info.value.__traceback__)
