"""A program's own mistakes at run time show the program's frames only, as Python would show
them without EventPy: a constructor called with the wrong arguments, a constructor or `close`
that raises, a guard field deleted from outside the class, an event method that raises on a
delivery. No frame of eventpy's wrappers in between (a user read `lang.py, line 457` and took it
for a crash of eventpy)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback

import pytest

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

PROGRAM = '''
import sys
import eventpy

class Monitor:
    def __init__(self, limit: float):
        if limit < 0:
            raise ValueError("a limit is not negative")
        self.limit = limit

    event def quote(self, firm: str, price: float) when price < self.limit:
        if price < 0:
            raise RuntimeError("negative price from " + firm)

    def close(self):
        raise OSError("the trade log is gone")

case = sys.argv[1]
if case == "arguments":
    Monitor()
elif case == "raises":
    Monitor(-1.0)
elif case == "close":
    Monitor(1.0).close()
elif case == "delete":
    m = Monitor(1.0)
    del m.limit
elif case == "keyword":
    Monitor.quote(firm="IBM", prize=1.0)
elif case == "positional":
    Monitor.quote("IBM", 1.0, 2)
elif case == "delivery":
    m = Monitor(1.0)
    Monitor.quote("IBM", -1.0)
    eventpy.drain(10)
    print("still running")
elif case == "publish":
    Monitor.quote("IBM", 1.0)
'''


def _run(tmp_path, case, env=None):
    prog = tmp_path / "desk.epy"
    prog.write_text(textwrap.dedent(PROGRAM).lstrip("\n"))
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(prog), case],
                         capture_output=True, text=True, timeout=120, env=env)
    frames = [line for line in out.stderr.splitlines() if line.startswith("  File ")]
    return prog, out, frames


@pytest.mark.parametrize("case, lines, last", [
    ("arguments", [19], "TypeError: Monitor.__init__() missing 1 required positional argument: 'limit'"),
    ("raises", [21, 7], "ValueError: a limit is not negative"),
    ("close", [23, 15], "OSError: the trade log is gone"),
])
def test_a_constructor_or_close_of_the_program_raises_through_no_frame_of_eventpy(tmp_path, case, lines, last):
    prog, out, frames = _run(tmp_path, case)
    assert out.returncode == 1
    assert frames == [f'  File "{prog}", line {n}, in {"<module>" if i == 0 else "__init__" if case != "close" else "close"}'
                      for i, n in enumerate(lines)], out.stderr
    assert out.stderr.rstrip().endswith(last), out.stderr


def test_deleting_a_guard_field_is_refused_from_the_line_of_the_del_and_says_what_to_do(tmp_path):
    prog, out, frames = _run(tmp_path, "delete")
    assert out.returncode == 1
    assert frames == [f'  File "{prog}", line 26, in <module>'], out.stderr
    last = out.stderr.rstrip().splitlines()[-1]
    assert last.startswith("AttributeError: Monitor.limit is read by the guard of quote and cannot be deleted")
    assert "assign" in last and "close()" in last, last


def test_an_unknown_keyword_of_an_event_call_is_named(tmp_path):
    prog, out, frames = _run(tmp_path, "keyword")
    assert out.returncode == 1
    assert frames == [f'  File "{prog}", line 28, in <module>'], out.stderr
    last = out.stderr.rstrip().splitlines()[-1]
    assert "unexpected keyword argument 'prize'" in last and "price" in last, last


def test_an_event_method_that_raises_is_logged_with_its_own_frames_and_name(tmp_path):
    prog, out, frames = _run(tmp_path, "delivery")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "still running\n"
    assert ("event method Monitor.quote raised; the event __main__.Monitor.quote(firm='IBM', price=-1.0) "
            "is dropped for this subscriber") in out.stderr, out.stderr
    assert frames == [f'  File "{prog}", line 12, in quote'], out.stderr
    assert out.stderr.rstrip().endswith("RuntimeError: negative price from IBM"), out.stderr


def test_a_guard_field_set_only_after_the_constructor_says_where_to_set_it():
    ns = load('''
    class Desk:
        def __init__(self, name: str):
            self.name = name

        def arm(self, limit: float):
            self.limit = limit

        event def quote(self, firm: str, price: float) when price < self.limit:
            pass
    ''')
    with pytest.raises(AttributeError) as info:
        ns["Desk"]("alice")
    assert str(info.value) == ("Desk.quote: the guard reads self.limit, which is not set when the constructor "
                               "returns (the object subscribes then): assign self.limit in __init__, or give the "
                               "class a default (`limit = ...` in its body)")
    assert traceback.extract_tb(info.value.__traceback__)[-1].filename == __file__


def test_too_many_arguments_of_an_event_call_says_what_the_event_takes(tmp_path):
    prog, out, frames = _run(tmp_path, "positional")
    assert out.returncode == 1
    assert frames == [f'  File "{prog}", line 30, in <module>'], out.stderr
    assert out.stderr.rstrip().splitlines()[-1] == ("TypeError: __main__.Monitor.quote: takes 2 attributes "
                                                    "(firm, price), got 3 positional arguments")


@pytest.mark.parametrize("url, error", [("tcp://127.0.0.1:1", "ConnectionRefusedError: EVENTPY_BROKER: cannot attach to "
                                                             "tcp://127.0.0.1:1"),
                                        ("garbage", "ValueError: EVENTPY_BROKER: cannot attach to 'garbage'")])
@pytest.mark.parametrize("case, line", [("delivery", 32), ("publish", 37)])
def test_an_unusable_broker_url_is_raised_from_the_line_that_first_needs_the_overlay(tmp_path, url, error, case, line):
    # the first object made (or event published) attaches the process: the error went on through
    # lang.py's __init__, _subscribe and node(), and api.py's connect
    prog, out, frames = _run(tmp_path, case, env={**os.environ, "EVENTPY_BROKER": url})
    assert out.returncode == 1
    assert frames == [f'  File "{prog}", line {line}, in <module>'], out.stderr
    assert out.stderr.rstrip().splitlines()[-1].startswith(error), out.stderr
