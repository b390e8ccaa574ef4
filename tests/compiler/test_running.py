"""Compiled programs run as Python runs its own: from files and imports, in the file's encoding,
with tracebacks that name the .epy lines and columns."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time

import pytest

import eventpy

from _programs import MONITOR, load  # tests/compiler/_programs.py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def test_traceback_names_the_epy_file_and_line(tmp_path):
    prog = tmp_path / "boom.epy"
    prog.write_text(textwrap.dedent('''
        class A:
            event def e(self, x: int):
                pass

        def fail():
            raise RuntimeError("from line 7")

        fail()
    ''').lstrip("\n"))
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(prog)], capture_output=True, text=True)
    assert out.returncode == 1
    assert f'File "{prog}", line 6, in fail' in out.stderr
    # from the program's first frame on, as `python boom.py` would show it: not the runner's frames
    assert out.stderr.splitlines()[:2] == ["Traceback (most recent call last):",
                                           f'  File "{prog}", line 8, in <module>'], out.stderr


def test_traceback_carets_point_into_the_epy_line_on_a_rewritten_line(tmp_path):
    prog = tmp_path / "carets.epy"
    prog.write_text(textwrap.dedent('''
        class M:
            def __init__(self):
                self.limit = 1.0
                self.zero = 0.0

            event def q(self, px: float) when px < self.limit:
                pass

            def spoil(self, px: float):
                self.limit = self.limit + px / self.zero

        M().spoil(0.5)
    ''').lstrip("\n"))
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(prog)], capture_output=True, text=True)
    # the store is rewritten as `with __eventpy__.assigning(self, "limit"): self.limit = ...`;
    # the carets were drawn with its columns, past the end of the line shown
    lines = out.stderr.splitlines()
    shown = lines.index("    self.limit = self.limit + px / self.zero")
    assert lines[shown + 1] == "                              ~~~^~~~~~~~~~~", out.stderr


@pytest.mark.parametrize("program", [
    '''
    def make():
        class A:
            def __init__(self):
                self.got = []
            event def q(self, px: float) when px < 1.0:
                self.got.append(("A", px))
        return A

    class B:
        def __init__(self):
            self.got = []
        event def q(self, px: float) when px < 1.0:
            self.got.append(("B", px))
    ''',
    '''
    class B:
        def __init__(self):
            self.got = []
        event def q(self, px: float) when px < 1.0:
            self.got.append(("B", px))
        class A:
            def __init__(self):
                self.got = []
            event def q(self, px: float) when px < 1.0:
                self.got.append(("A", px))
            def nudge(self):
                self.got.append("nudged")

    def make():
        return B.A
    ''',
])
def test_without_an_import_line_every_event_class_sees_the_runtime(program):
    # the first line is a compound statement: no line before it can take the import
    ns = load(textwrap.dedent(program).lstrip("\n"))
    A, B = ns["make"](), ns["B"]
    a, b = A(), B()
    A.q(0.5)
    B.q(0.5)
    eventpy.drain(5.0)
    assert a.got == [("A", 0.5)] and b.got == [("B", 0.5)]


def test_an_asyncio_program_gets_its_events_on_its_loop_as_the_readme_shows():
    ns = load('''
    import asyncio
    import eventpy

    class Watcher:
        def __init__(self, loop, queue, limit: float):
            self.loop, self.queue, self.limit = loop, queue, limit

        event def quote(self, firm: str, price: float) when price < self.limit:
            asyncio.run_coroutine_threadsafe(self.queue.put((firm, price)), self.loop)

    async def main():
        queue = asyncio.Queue()
        w = Watcher(asyncio.get_running_loop(), queue, 10.0)
        for firm, price in (("IBM", 9.0), ("HP", 11.0), ("SUN", 2.0)):
            Watcher.quote(firm, price)
        got = [await asyncio.wait_for(queue.get(), 10) for _ in range(2)]
        w.limit = 1.0
        await asyncio.to_thread(eventpy.drain, 5.0)
        Watcher.quote("IBM", 2.0)
        await asyncio.to_thread(eventpy.drain, 5.0)
        return got, queue.qsize()
    ''')
    assert asyncio.run(ns["main"]()) == ([("IBM", 9.0), ("SUN", 2.0)], 0)


def test_last_in_an_f_string_reads_the_released_value():
    ns = load('''
    class Probe:
        local x: float = 1.0

        event def hit(self, px: float) when px < self.x:
            pass

        def show(self):
            self.x = 9.0
            a = f"{last self.x:.1f} {{last self.x}} {self.x}"
            b = f'{last self.x}'
            c = f"""{
                last self.x
            }!"""
            return a, b, c
    ''')
    assert ns["Probe"]().show() == ("1.0 {last self.x} 9.0", "1.0", "1.0!")


def test_last_in_an_f_string_beside_strings_and_format_specs():
    # a string inside a field is text (its braces, its words); a quote in a format spec is a fill
    # character: the scanner counted braces in strings and rewrote words inside them
    ns = load('''
    class Probe:
        local x: int = 7

        event def hit(self, px: float) when px < self.x:
            pass

        def show(self):
            a = f"{'last self.x'}|{'}' + str(last self.x)}|{'{' + str(last self.x)}"
            b = f\'\'\'{ "}" + str(last self.x)}|{last self.x:'>3}|{last self.x!r:>{2}}\'\'\'
            c = f"{3.14159:.{last self.x - 5}f}|{last self.x != 1}"
            return a, b, c
    ''')
    assert ns["Probe"]().show() == ("last self.x|}7|{7", "}7|''7| 7", "3.14|True")


def test_last_in_a_nested_f_string():
    # Python 3.11 hands the outer f-string over as one token and the inner one is a string in
    # its field: `last` there reached Python, whose error ("f-string: invalid syntax") said nothing
    # of EventPy. Inside both quotes no quote is left for the field's name: none is used
    ns = load('''
    class Probe:
        local x: int = 7

        event def hit(self, px: float) when px < self.x:
            a = f"{f'{last self.x}'}|{f'{last   self . x:>3}' + 'q'}|{f'{{last self.x}}'}|{'{last self.x}'}"
            b = f"""{f'{f"{last self.x}"}'}|{rf'{last self.x!r:{last self.x}}'}|{f'{px:.{last self.x - 6}f}'}"""
            self.got = a, b
    ''')
    p = ns["Probe"]()
    p.x = 9  # local: the released 7 is what last reads
    ns["Probe"].hit(1.25)
    eventpy.drain(5.0)
    assert p.got == ("7|  7q|{last self.x}|{last self.x}", "7|7      |1.2")  # !r: a str, aligned left


def test_release_of_several_fields_releases_each():
    ns = load('''
    class Box:
        local x: float = 0.0
        local y: float = 0.0

        def __init__(self):
            self.got = []

        event def hit(self, px: float) when px < self.x + self.y:
            self.got.append(px)

        def move(self):
            self.x, self.y = 5.0, 5.0
            release self.x, self.y
    ''')
    b = ns["Box"]()
    b.move()
    eventpy.drain(5.0)
    ns["Box"].hit(7.0)  # below x + y only when both were released
    eventpy.drain(5.0)
    assert b.got == [7.0]


def test_an_edited_epy_is_imported_instead_of_the_older_py_eventpyc_wrote(tmp_path):
    market = tmp_path / "market.epy"
    market.write_text(textwrap.dedent(MONITOR).replace("append(price)", "append(('v1', price))"))
    cli = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", str(market)], capture_output=True, text=True)
    assert cli.returncode == 0 and (tmp_path / "market.py").exists(), cli.stderr
    market.write_text(market.read_text().replace("'v1'", "'v2'"))  # edited after eventpyc ran
    py_time = (tmp_path / "market.py").stat().st_mtime
    os.utime(market, (py_time + 5, py_time + 5))
    (tmp_path / "main.epy").write_text(textwrap.dedent('''
        import eventpy
        from market import Monitor
        m = Monitor(10.0)
        Monitor.quote("IBM", 1.0)
        eventpy.drain(5.0)
        print(m.got)
    '''))
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", "main.epy"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "[('v2', 1.0)]", out.stdout + out.stderr
    assert f"{tmp_path / 'market.py'}: warning: older than market.epy" in out.stderr


@pytest.mark.parametrize("head, encoding", [("", "utf-8-sig"), ("# -*- coding: latin-1 -*-\n", "latin-1")])
def test_sources_are_read_in_the_encoding_python_would_use(tmp_path, head, encoding):
    prog = tmp_path / "cafe.epy"
    prog.write_bytes((head + textwrap.dedent('''
        import eventpy
        class M:
            def __init__(self):
                self.got = []
            event def q(self, s: str) when s == "café":
                self.got.append(s)
        m = M()
        M.q("café")
        eventpy.drain(5.0)
        print(m.got == ["café"])
    ''')).encode(encoding))
    for run in (["-m", "eventpy", "run", str(prog)], ["-m", "eventpy.compiler.cli", str(prog)],
                [str(tmp_path / "cafe.py")]):
        out = subprocess.run([sys.executable, *run], capture_output=True, text=True)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert out.stdout == "True\n"  # the .py eventpyc wrote, run by Python, in the source's encoding


def test_guards_take_comments_and_identifiers_in_any_script():
    ns = load('''
    class Würfel:
        def __init__(self):
            self.größe = 3.0
            self.got = []

        event def wurf(self, höhe: float,
                       name: str) when (höhe < self.größe  # a comment, as Python allows
                                        and name != "é"):
            self.got.append(höhe)
    ''')
    w, W = ns["Würfel"](), ns["Würfel"]
    W.wurf(1.0, "a")
    W.wurf(5.0, "a")
    W.wurf(1.0, "é")
    eventpy.drain(5.0)
    assert w.got == [1.0]


def test_eventpy_run_shows_the_traceback_from_the_programs_own_frames(tmp_path):
    prog = tmp_path / "wrong.epy"
    prog.write_text(textwrap.dedent('''
        def check(limit):
            if limit < 0:
                raise ValueError("a limit is not negative")

        check(-1)
    ''').lstrip("\n"))
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(prog)], capture_output=True, text=True)
    assert out.returncode == 1
    # as `python wrong.py` shows it: no frames of runpy, of this command or of the import hook
    frames = [line for line in out.stderr.splitlines() if line.startswith("  File ")]
    assert frames == [f'  File "{prog}", line 5, in <module>', f'  File "{prog}", line 3, in check'], out.stderr
    assert out.stderr.rstrip().endswith("ValueError: a limit is not negative")


def test_an_event_method_guard_evolves_with_elapsed():
    ns = load('''
    import time

    class Player:
        def __init__(self, speed: float):
            self.speed = speed
            self.since = time.time()
            self.heard = []

        event def boom(self, x: float) when abs(x - self.speed * elapsed()) < 50:
            self.heard.append(x)

        def here(self) -> float:
            return self.speed * (time.time() - self.since)
    ''')
    p = ns["Player"](100.0)
    ns["Player"].boom(400.0)  # ahead of the player
    ns["Player"].boom(p.here())  # where it is
    eventpy.drain(5.0)
    time.sleep(1.0)
    ns["Player"].boom(0.0)  # left behind by now
    x = p.here()
    ns["Player"].boom(x)
    eventpy.drain(5.0)
    assert len(p.heard) == 2 and p.heard[1] == x


@pytest.mark.parametrize("more", ["", "\n    event def trade(self, qty: int) when qty > self.cap:\n        pass\n"])
def test_a_plain_python_program_importing_a_wrong_epy_sees_its_import_line_and_the_diagnostic(tmp_path, more):
    # `python subscriber.py` (README, A real overlay) importing a market.epy with a typo showed a
    # traceback through importlib, the import hook and the compiler before the diagnostic
    text = textwrap.dedent('''
        class Trader:
            def __init__(self, limit: float):
                self.limit = limit

            event def quote(self, firm: str, price: float) when price < self.limt:
                pass
    ''').lstrip("\n") + more
    (tmp_path / "market.epy").write_text(text)
    prog = tmp_path / "subscriber.py"
    prog.write_text("import eventpy\n\nimport market\n")
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, str(prog)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1
    frames = [line for line in out.stderr.splitlines() if line.startswith("  File ")]
    assert frames == [f'  File "{prog}", line 3, in <module>'], out.stderr
    col = text.splitlines()[4].index("self.limt") + 1
    assert f"market.epy:5:{col}: error: the guard of quote reads self.limt" in out.stderr, out.stderr
    assert out.stderr.count(": error: ") == (2 if more else 1), out.stderr


def test_an_object_of_a_subclass_has_one_origin_of_elapsed_for_all_its_subscriptions():
    # a Truck listens as Truck and as Car (two subscriptions): each took its own subscription time,
    # so elapsed() was a different number in its two guards (by the time one subscribe took)
    ns = load('''
    class Car:
        def __init__(self, x0: float, vx: float):
            self.x0, self.vx = x0, vx

        event def alert(self, x: float) when abs(x - (self.x0 + self.vx * elapsed())) < 1:
            pass

    class Truck(Car):
        pass
    ''')
    from eventpy.guards import SUBSCRIBED_AT
    from eventpy.runtime.lang import subscriptions_of

    t = ns["Truck"](0.0, 10.0)
    origins = {s._state.env[SUBSCRIBED_AT] for s in subscriptions_of(t)}
    assert len(subscriptions_of(t)) == 2 and len(origins) == 1, origins


def test_an_object_re_anchors_its_motion_with_eventpy_elapsed():
    # turning needs the time on elapsed()'s clock; time.time() in __init__ is earlier than the
    # subscription (the first object connects the node first), so the window jumped away
    ns = load('''
    import eventpy

    class Car:
        def __init__(self, x0: float, vx: float):
            self.x0, self.vx = x0, vx
            self.got = []

        event def alert(self, x: float) when abs(x - (self.x0 + self.vx * elapsed())) < 0.5:
            self.got.append(x)

        def where(self) -> float:
            return self.x0 + self.vx * eventpy.elapsed(self)

        def turn(self, vx: float):
            t = eventpy.elapsed(self)
            pos = self.x0 + self.vx * t
            self.x0, self.vx = pos - vx * t, vx     # one statement: both land together
    ''')
    c = ns["Car"](0.0, 1.0)
    c.turn(-1.0)
    eventpy.confirm(c, timeout=10)
    x = c.where()
    ns["Car"].alert(x)       # where the car is now (published a moment after the reading)
    ns["Car"].alert(x + 5)   # well ahead of it, within the next few seconds either way
    eventpy.drain(10.0)
    assert c.got == [x]
    with pytest.raises(TypeError, match="elapsed takes a Subscription or an object of an .epy class"):
        eventpy.elapsed(object())
    c.close()
    with pytest.raises(RuntimeError, match="closed"):
        eventpy.elapsed(c)


def _epy_package(root):
    """app/__init__.epy (no __init__.py), app/models.epy, app/__main__.epy importing relatively."""
    app = root / "app"
    app.mkdir()
    (app / "__init__.epy").write_text("from .models import Monitor\n")
    (app / "models.epy").write_text(textwrap.dedent(MONITOR))
    (app / "__main__.epy").write_text(textwrap.dedent('''
        import sys
        import eventpy
        from . import Monitor
        m = Monitor(10.0)
        Monitor.quote("IBM", 1.0)
        eventpy.drain(5.0)
        print(__name__, __package__, m.got, sys.argv[1:])
    '''))


def test_a_folder_with_an_init_epy_is_a_package(tmp_path):
    # without an __init__.py, Python made `app` a namespace package: `app.Monitor` was an
    # AttributeError, and `from . import Monitor` in the package's modules an ImportError
    _epy_package(tmp_path)
    out = subprocess.run([sys.executable, "-c", "import eventpy, app; print(app.Monitor.__module__, app.__path__)"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.stdout.split() == ["app.models", f"['{tmp_path / 'app'}']"], out.stderr


def test_eventpy_run_m_runs_a_package_as_python_m_does(tmp_path):
    # `python -m app` is what a Python programmer types for a package; `eventpy run` took files only
    _epy_package(tmp_path)
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", "-m", "app", "x", "-v"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.stdout.strip() == "__main__ app [1.0] ['x', '-v']", out.stdout + out.stderr
