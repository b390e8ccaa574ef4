"""Ctrl-C while an `eventpy` or `eventpyc` command starts: exit status 130 and one line, never a
traceback (it printed the import machinery's frames, from numpy's or lark's import, and Python's
own status for a SIGINT).

The SIGINT is sent at a chosen moment, not after a sleep: when the command starts to import a
given module, the process sends it to itself (a finder placed first on sys.meta_path), as a
user's Ctrl-C would arrive there. The command is started as its console script starts it:
`from MODULE import main; sys.exit(main())`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_INTERRUPTED_AT = textwrap.dedent("""
    import os, signal, sys

    class InterruptAt:
        def __init__(self, name):
            self.name = name

        def find_spec(self, fullname, path, target=None):
            if fullname == self.name:  # the user's Ctrl-C, just as this import starts
                sys.meta_path.remove(self)
                os.kill(os.getpid(), signal.SIGINT)
            return None

    where, entry, *argv = sys.argv[1:]
    sys.meta_path.insert(0, InterruptAt(where))
    sys.argv = argv
    module, _, function = entry.partition(":")
    main = getattr(__import__(module, fromlist=[function]), function)
    sys.exit(main())
""")

EVENTPY, EVENTPYC = "eventpy.__main__:main", "eventpy.compiler.cli:main"

PROGRAM = '''
class Monitor:
    def __init__(self, limit: float):
        self.limit = limit

    event def quote(self, price: float) when price < self.limit:
        print(price)


print("the program ran")
'''


def _interrupted_at(module: str, entry: str, *argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _INTERRUPTED_AT, module, entry, *argv], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("module, entry, argv", [
    ("argparse", EVENTPY, ["eventpy", "--version"]),
    ("eventpy.runtime.launcher", EVENTPY, ["eventpy", "overlay", "status", "--run-dir", "{tmp}/run"]),
    ("eventpy.runtime.overlay", EVENTPY, ["eventpy", "overlay", "up", "--brokers", "1", "--run-dir", "{tmp}/run"]),
    ("numpy", EVENTPY, ["eventpy", "broker", "--config", "{tmp}/overlay.toml", "--id", "b0"]),
    ("rich", EVENTPY, ["eventpy", "demo"]),
    ("eventpy.replay.cli", EVENTPY, ["eventpy", "replay", "{tmp}/x.toml", "--out", "{tmp}/out"]),
    ("lark", EVENTPY, ["eventpy", "run", "{tmp}/monitor.epy"]),
    ("numpy", EVENTPY, ["eventpy", "run", "{tmp}/monitor.epy"]),
    ("lark", EVENTPY, ["eventpy", "run", "-m", "monitor"]),
    ("argparse", EVENTPYC, ["eventpyc", "--version"]),
    ("lark", EVENTPYC, ["eventpyc", "{tmp}/monitor.epy"]),
], ids=lambda v: v if isinstance(v, str) else " ".join(v[:3]))
def test_ctrl_c_while_a_command_starts_is_one_line_and_status_130(tmp_path, module, entry, argv):
    (tmp_path / "monitor.epy").write_text(PROGRAM)
    out = _interrupted_at(module, entry, *(a.format(tmp=tmp_path) for a in argv), cwd=tmp_path)
    prog = "eventpyc" if entry == EVENTPYC else "eventpy"
    assert (out.returncode, out.stderr) == (130, f"{prog}: interrupted\n"), out.stderr
    assert "the program ran" not in out.stdout and not list(tmp_path.glob("run/*.pid")), out.stdout


def test_ctrl_c_in_the_program_run_still_shows_the_programs_traceback(tmp_path):
    """`eventpy run` shows a program's own KeyboardInterrupt as `python prog.py` does: only the
    Ctrl-C before the program's first line is eventpy's to report in one line."""
    (tmp_path / "prog.py").write_text("import wave\nprint('after')\n")
    out = _interrupted_at("wave", EVENTPY, "eventpy", "run", str(tmp_path / "prog.py"), cwd=tmp_path)
    assert out.returncode == 130 and "after" not in out.stdout, out
    lines = out.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):" and lines[-1] == "KeyboardInterrupt", out.stderr
    assert f'File "{tmp_path / "prog.py"}", line 1, in <module>' in out.stderr, out.stderr


def test_ctrl_c_in_a_package_run_with_m_is_the_programs_too(tmp_path):
    """`eventpy run -m app`: app/__init__.py is the program's, although importlib runs it."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("import wave\n")
    (tmp_path / "app" / "__main__.py").write_text("print('after')\n")
    out = _interrupted_at("wave", EVENTPY, "eventpy", "run", "-m", "app", cwd=tmp_path)
    assert out.returncode == 130 and "after" not in out.stdout, out
    assert f'File "{tmp_path / "app" / "__init__.py"}", line 1, in <module>' in out.stderr, out.stderr
    assert out.stderr.splitlines()[-1] == "KeyboardInterrupt", out.stderr


# a console script as pip writes it (its name and its import line are what eventpy looks for),
# with the interrupting finder put first
_CONSOLE_SCRIPT = _INTERRUPTED_AT.split("where, entry")[0] + textwrap.dedent("""
    sys.meta_path.insert(0, InterruptAt(os.environ["INTERRUPT_AT"]))
    import re
    import sys
    from {module} import main
    if __name__ == '__main__':
        sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
        sys.exit(main())
""")


@pytest.mark.parametrize("prog, module, where", [
    ("eventpy", "eventpy.__main__", "eventpy._version"),  # in `import eventpy`, before main() runs
    ("eventpy", "eventpy.__main__", "eventpy.compiler.importhook"),
    ("eventpy", "eventpy.__main__", "eventpy.__main__"),  # between the package and the command's module
    ("eventpyc", "eventpy.compiler.cli", "eventpy.compiler"),
    ("eventpyc", "eventpy.compiler.cli", "eventpy.compiler.cli"),
])
def test_ctrl_c_while_the_console_script_imports_eventpy_is_one_line_and_status_130(tmp_path, prog, module, where):
    """The window before main()'s `except KeyboardInterrupt`: `import eventpy` and the import of
    the command's module (tens of milliseconds, about half of a command's start). A Ctrl-C there
    printed Python's traceback of the import machinery and ended the process by SIGINT; it is
    held until main() runs, which reports it."""
    script = tmp_path / prog
    script.write_text(_CONSOLE_SCRIPT.replace("{module}", module))
    out = subprocess.run([sys.executable, str(script), "--version"], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={**os.environ, "INTERRUPT_AT": where})
    assert (out.returncode, out.stderr) == (130, f"{prog}: interrupted\n"), out.stderr
    assert out.stdout == ""


def test_a_program_that_imports_eventpy_keeps_its_own_ctrl_c(tmp_path):
    """Only eventpy's own commands hold a Ctrl-C until their main(): a program named otherwise
    (here, one whose import of eventpy is interrupted) sees it where it lands, as always."""
    script = tmp_path / "app.py"
    script.write_text(_CONSOLE_SCRIPT.replace("{module}", "eventpy.__main__"))
    out = subprocess.run([sys.executable, str(script), "--version"], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={**os.environ, "INTERRUPT_AT": "eventpy._version"})
    assert out.returncode != 0 and out.stderr.splitlines()[-1] == "KeyboardInterrupt", out.stderr
