"""The README's Python blocks do what the README says they do: the tour runs on the embedded
overlay, each .epy block compiles, and the asyncio one prints what its comment says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

import eventpy
from eventpy.compiler import compile_source

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```", README, flags=re.S | re.M)

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def test_the_readme_has_its_blocks():
    assert len(BLOCKS) >= 3 and BLOCKS[0].startswith("import eventpy")


def test_the_tour_delivers_the_event_it_publishes():
    ns: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(BLOCKS[0], "README tour", "exec"), ns)
    assert [ev.price for ev in ns["got"]] == [9.5]
    stats = out.getvalue()
    for counter in ("published", "delivered", "spurious", "sub_sent", "unsub_sent", "upd_sent"):
        assert f"'{counter}'" in stats, stats


@pytest.mark.parametrize("index", [i for i, b in enumerate(BLOCKS) if "event def" in b])
def test_every_epy_block_compiles(index):
    compile_source(BLOCKS[index], f"README block {index}.epy", "readme")


def run_block(marker: str, name: str) -> tuple[dict, str]:
    """Compile and run the one .epy block holding `marker`, then drain: its namespace and output."""
    (block,) = [b for b in BLOCKS if marker in b]
    ns: dict = {"__name__": name}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(compile_source(block, f"{name}.epy", name), f"{name}.epy", "exec"), ns)
        eventpy.drain(5.0)
    return ns, out.getvalue()


def test_the_asyncio_block_prints_what_its_comment_says():
    assert run_block("asyncio.run(main())", "readme_asyncio")[1] == "('IBM', 9.0)\n"


def test_the_language_block_buys_as_it_says():
    ns, out = run_block("class StockMonitor", "readme_stock")
    assert out == "m1 buys IBM at 99.0\n" and ns["m"].limit == 99.0


def test_the_p2p_block_prints_what_its_comments_say():
    (block,) = [b for b in BLOCKS if "from eventpy import EventType, p2p" in b]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README p2p", "exec"), {})
    assert out.getvalue() == "{'temp': 35, 'wind': 80}\n1.0 1.0\n"


def test_the_replay_recipe_runs_both_modes_against_the_ground_truth():
    (block,) = [b for b in BLOCKS if "from eventpy.replay.simulate import run_trace" in b]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README replay recipe", "exec"), {})
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["parametric", "resub"]
    for line in lines:
        assert re.fullmatch(r"\w+ \d+ missed, 0 not owed, \d+ sub messages", line), line


def test_an_epy_module_is_found_once_eventpy_is_imported_as_the_readme_says(tmp_path):
    # a user's subscriber began with `import bands` and met "No module named 'bands'" beside bands.epy
    import os
    import subprocess
    import sys

    (tmp_path / "stock.epy").write_text("class M:\n    event def quote(self, price: float) when price < 1:\n"
                                        "        pass\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60)

    assert "ModuleNotFoundError: No module named 'stock'" in run("import stock").stderr
    done = run("import eventpy, stock; print(stock.M.quote.__name__)")
    assert done.returncode == 0 and done.stdout == "quote\n", done.stderr
    assert "a plain `python` program imports it before its first\n`.epy` module" in README


def test_the_guard_mistake_is_reported_as_the_readme_shows_it():
    (shown,) = re.findall(r"Mistakes are reported with the position:\n\n  ```\n(.*?)  ```", README, flags=re.S)
    shown = "\n".join(line[2:] for line in shown.splitlines())  # the block is indented under its bullet
    guard = shown.splitlines()[1].strip()
    Quote = eventpy.EventType("stocks.Quote", firm=str, price=float)
    with pytest.raises(eventpy.GuardError) as refused:
        eventpy.connect().subscribe(Quote, guard)
    assert str(refused.value) == shown


CONSOLE = "\n".join(re.findall(r"^```console\n(.*?)^```", README, flags=re.S | re.M))


def test_every_eventpy_command_in_the_readme_parses_and_names_files_that_exist():
    # a renamed option or subcommand, or a moved example config, must not leave the README behind
    import shlex

    from eventpy.__main__ import parser

    root = Path(__file__).resolve().parents[1]
    lines = [ln.split("#")[0] for ln in CONSOLE.splitlines()]
    commands = [shlex.split(ln) for ln in lines if re.match(r"(\S+=\S+ )*eventpy ", ln)]
    assert len(commands) >= 6
    for argv in commands:
        argv = argv[argv.index("eventpy") + 1:]
        try:
            parser().parse_args(argv)
        except SystemExit:
            raise AssertionError(f"eventpy {' '.join(argv)} does not parse") from None
        for arg in argv:
            if arg.endswith(".toml"):
                assert (root / arg).is_file(), arg


def test_the_eventpyc_commands_do_what_their_comments_say(tmp_path, monkeypatch, capsys):
    from eventpy.compiler.cli import main

    monkeypatch.chdir(tmp_path)
    (block,) = [b for b in BLOCKS if "class StockMonitor" in b]
    (tmp_path / "stock.epy").write_text(block)
    assert "eventpyc stock.epy            # writes stock.py beside it" in CONSOLE
    assert main(["stock.epy"]) == 0 and (tmp_path / "stock.py").is_file()
    assert main(["-o", "out.py", "stock.epy"]) == 0 and (tmp_path / "out.py").is_file()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.epy").write_text(block.replace("price < self.limit", "price < self.limt"))
    assert "eventpyc --check src/         # diagnostics only: path:line:col: error: ..., the line, a caret" in CONSOLE
    assert main(["--check", "src/"]) == 1 and not (tmp_path / "src" / "bad.py").exists()
    path_line_col, line, caret = capsys.readouterr().err.splitlines()[:3]
    assert re.match(r"src/bad\.epy:\d+:\d+: error: ", path_line_col), path_line_col
    assert "self.limt" in line and caret.strip() == "^"


def test_the_aio_block_prints_what_its_comment_says():
    import asyncio

    from eventpy import aio

    (block,) = [b for b in BLOCKS if "aio.subscribe(node, Quote" in b]
    ns: dict = {"eventpy": eventpy, "aio": aio, "Quote": eventpy.EventType("stocks.Quote", firm=str, price=float)}
    exec(compile(block, "README aio block", "exec"), ns)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        asyncio.run(asyncio.wait_for(ns["main"](), 60))
    assert out.getvalue() == "9.5\n"


def test_the_refusal_log_bound_is_the_one_the_readme_gives():
    from eventpy.runtime._log_limit import LogLimit

    limit = LogLimit()
    assert (limit.burst, limit.window) == (10, 60.0)
    assert "the first 10 a minute per link (refused messages) and per peer host" in " ".join(README.split())


def test_the_interrupted_lines_are_the_ones_the_readme_shows(capsys, monkeypatch):
    # README said eventpyc printed `eventpy: interrupted`; it names itself
    from eventpy.compiler import cli

    def ctrl_c_while_starting(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_main", ctrl_c_while_starting)
    assert cli.main(["x.epy"]) == 130
    said = capsys.readouterr().err.strip()
    flat = " ".join(README.split())
    assert said == "eventpyc: interrupted" and f"`{said}`" in flat
    assert "says `eventpy: interrupted`" in flat and "exits with status 130" in flat


def test_the_end_of_a_program_has_the_bounds_the_readme_gives():
    # the shutdown bounds, in the order the README's "The end of a program" gives them (it said
    # the subscriptions ended first, leaving out the exit drain the tour and concurrency.md describe)
    import inspect

    from eventpy.runtime import _exit
    from eventpy.runtime.transports import tcp_client

    assert inspect.signature(_exit.drain_at_exit).parameters["budget"].default == 5.0
    assert _exit.CALLBACKS_BUDGET == 5.0 and tcp_client.CLOSE_BUDGET == 5.0
    flat = " ".join(README.split())
    end = flat[flat.index("**The end of a program**"):flat.index("**Slow brokers**")]
    drained, callbacks = end.index("embedded overlay is first drained"), end.index("callbacks already running finish")
    assert drained < callbacks and "for 5 s from the close" in end


def test_the_testing_helpers_are_called_as_the_readme_calls_them():
    # names and keywords of "Testing your program" that a rename would leave behind
    import inspect

    from eventpy import testing

    flat = " ".join(README.split())
    assert "fresh_overlay(clock=None, mode=...)" in flat
    assert {"clock", "mode"} <= set(inspect.signature(testing.fresh_overlay).parameters)
    assert "clock=eventpy.testing.ManualClock()" in flat and hasattr(testing.ManualClock(), "advance")
    assert "eventpy.testing.start_broker(run_dir)" in flat
    assert {"stop", "log_text"} <= set(dir(testing.BrokerProcess))  # and .url, set by __init__
    assert "eventpy.testing.why_not(obj, Class.method, **attrs)" in flat
    assert list(inspect.signature(testing.why_not).parameters)[:2] == ["target", "event"]
    assert "callback_errors" in dir(testing.TestOverlay) and "LeftoverSubscriptions" in testing.__all__


def test_the_aio_calls_have_the_signatures_the_readme_gives():
    import inspect

    from eventpy import aio

    flat = " ".join(README.split())
    shown = "aio.subscribe(node, etype, guard, params, *, maxsize=1024, rum=None)"
    assert f"`{shown}`" in flat
    sig = inspect.signature(aio.subscribe)
    assert list(sig.parameters) == ["node", "etype", "guard", "params", "maxsize", "rum"]
    assert sig.parameters["maxsize"].default == 1024 and sig.parameters["maxsize"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "`await aio.publish(node, etype, **attrs)`" in flat and "`await aio.drain(timeout)`" in flat
    assert "`await aio.confirm(target, timeout)`" in flat
    assert list(inspect.signature(aio.confirm).parameters) == ["target", "timeout"]
    assert "aio.Inbox(maxsize=100)" in flat and "maxsize" in inspect.signature(aio.Inbox).parameters
    assert "raises `aio.InboxClosed` once it is closed and empty" in flat and "InboxClosed" in aio.__all__


def test_every_extra_is_installed_and_explained_in_the_readme():
    """A user of a wheel did not learn from README what `pip install 'eventpy[...]'` to run for
    `eventpy replay` (nor what the test extra was): README named no extra."""
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    for name in extras:
        line = re.search(rf"^pip install 'eventpy\[{name}\]' +# (.+)$", README, flags=re.M)
        assert line, f"README has no `pip install 'eventpy[{name}]'  # what it is for` line"
        assert f"The `{name}` extra" in README, f"README does not say what the {name} extra is for"
