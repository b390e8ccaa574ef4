"""Fuzzing eventpyc: whatever a mutated program looks like, the compiler either compiles it (to
Python that Python compiles, line for line) or reports diagnostics, each at a line and column of
the source — never an uncaught exception, an internal error or a traceback.

The suite runs a modest, derandomized number of examples. To hunt for bugs, run many more:

    EVENTPY_FUZZ_EXAMPLES=20000 EVENTPY_FUZZ_RANDOM=1 .venv/bin/python -m pytest -q tests/compiler/test_fuzz.py

Each input a run found is kept below in FOUND: an @example of the test, and a case for the CLI.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import warnings

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from eventpy.compiler import CompileError, CompileErrors, compile_source

from _mutate import OPS, PAYLOADS, mutate, seeds  # tests/compiler/_mutate.py
from test_diagnostics import BASE

SEEDS = seeds()
EXAMPLES = int(os.environ.get("EVENTPY_FUZZ_EXAMPLES", "300"))

mutation = st.tuples(st.sampled_from(OPS), st.integers(0, 1 << 16), st.integers(0, 1 << 16),
                     st.sampled_from(PAYLOADS))
programs = st.builds(mutate, st.sampled_from(SEEDS), st.lists(mutation, min_size=1, max_size=5))


def python_lines(text: str) -> list[str]:
    """The lines as Python numbers them (\\r\\n, \\r and \\n end a line; \\x0c, \\u2028 do not)."""
    return re.split(r"\r\n|\r|\n", text)


def check(text: str) -> None:
    plain = not re.search(r"event|when|local|release|last", text)  # no construct: Python's verdict
    try:
        out = compile_source(text, "fuzz.epy")
    except (CompileError, CompileErrors) as e:
        if plain:
            _refused_by_python(text)
        lines = python_lines(text)
        for err in e.errors if isinstance(e, CompileErrors) else [e]:
            assert err.message and err.render().startswith(f"fuzz.epy:{err.line}:{err.column}: error: "), err
            assert 1 <= err.line <= len(lines), (err.render(), len(lines))
            assert 1 <= err.column <= len(lines[err.line - 1]) + 1, (err.render(), lines[err.line - 1])
            shown = re.sub("[\ud800-\udfff]", "\ufffd", lines[err.line - 1].expandtabs(1))
            assert err.render().split("\n")[1] == "    " + shown, err.render()  # the line it names
            named = _NAMED.search(err.message)  # a message that quotes a token: at that token
            token = next((g for g in named.groups() if g), "") if named else ""
            if token and "\\" not in token:
                assert lines[err.line - 1][err.column - 1:].startswith(token), err.render()
        return
    compile(out, "fuzz.epy", "exec", dont_inherit=True)  # what the compiler accepts, Python runs
    assert len(python_lines(out)) == len(python_lines(text))
    if plain:
        assert out == text


# name 'x' is neither..., guard calls f(), reads self.f, which..., unexpected 'x' in guard
_NAMED = re.compile(r"^(?:name '(\w+)' is neither|guard calls (\w+)|the guard of \w+ reads (self)\.|"
                    r"unexpected (?:character )?'([^']+)' in guard)")


def _refused_by_python(text: str) -> None:
    try:
        compile(text, "fuzz.epy", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return
    raise AssertionError("a program Python compiles, without any construct, was refused")


# what the fuzzing found, each fixed where it went wrong (the commit that fixed it says how)
FOUND = [
    # Python's IndentationError at offset 0: shown as column 0
    "class W:\n    def __init__(self):\n\nevent def q(self, sym: str, ok: bool) when sym in self.names:\n        pass\n",
    # a NUL: line 0; a lone surrogate: an internal error (UnicodeEncodeError)
    "class M:\n    def __init__(self,\x00 limit: float):\n        self.limit = limit\n",
    "x = 1\n\ud800        self.limit = price\n",
    # \u2028 in a guard: an internal error (IndexError) looking up the line of the guard's error
    BASE.replace("price < self.limit", "price < \u2028.limit"),
    # the end of a guard over two lines, then no body: the column was past the line's end
    BASE.replace('"IBM" and price < self.limit:\n        self.limit = price', '"IBM" and price \\\n< self.limit:'),
    # a comment ending in a backslash on the last line of a class: the next line joined it
    BASE + "        self.limit = price  # a comment \\\nprint(1)\n",
    # a reserved attribute name: an internal error (TypeError from EventType)
    BASE.replace("firm: str", "_firm: str").replace('firm == "IBM"', "True"),
    # a line holding only a backslash before a statement: libcst dropped it (a line less, or
    # here an internal error); at column 0 after the class line, the first fix of that put the
    # statement at column 0, where CPython takes the next line's indentation
    BASE.replace("        self.limit = price", "        \\\nself.limit = price"),
    BASE.replace("class M:\n", "class M:\n\\\n"),
    # the guard on the line after `when \`: a line less
    BASE.replace('when firm == "IBM"', 'when\\\n firm == "IBM"'),
    # spaces then tabs, as CPython accepts them: libcst refused the class (an internal error)
    BASE.replace("        self.limit = price", "   \t\tself.limit = price"),
    # `last` and `self.x` on two lines: the replacement was one line (found with a \r, which
    # ends a line as \n does once eventpyc reads newlines as Python does)
    BASE.replace("class M:\n", "class M:\n    local x: int = 0\n").replace("self.limit = price",
                                                                      "print(abs(self.x - last\n self.x))"),
    # a form feed in a line's indentation, where CPython starts counting again: libcst refused
    # the class (an internal error)
    BASE.replace("        self.limit = limit", "\x0c        self.limit = limit"),
    BASE.replace("        self.limit = limit", "    \x0c    self.limit = limit"),
]


def found(test):
    """Every input in FOUND as an @example: run first, on every run."""
    for text in reversed(FOUND):
        test = example(text)(test)
    return test


@found
@settings(max_examples=EXAMPLES, derandomize=not os.environ.get("EVENTPY_FUZZ_RANDOM"), deadline=None,
          database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs)
def test_mutated_programs_compile_or_get_diagnostics(text):
    with warnings.catch_warnings():  # SyntaxWarnings of mutated literals ("invalid decimal literal")
        warnings.simplefilter("ignore")
        check(text)


def test_the_seeds_compile():
    for text in SEEDS:
        check(text)
        compile_source(text, "seed.epy")


def cli_cases() -> list[str]:
    """What the fuzzing found, and a few mutations picked at random (always the same ones)."""
    rng = random.Random(7)
    picked = [mutate(rng.choice(SEEDS), [(rng.choice(OPS), rng.randrange(1 << 16), rng.randrange(1 << 16),
                                          rng.choice(PAYLOADS)) for _ in range(rng.randint(1, 5))])
              for _ in range(40)]
    return FOUND + SEEDS + picked


def test_the_cli_reports_mutated_programs_without_a_traceback(tmp_path):
    # through the command itself, on a folder of them, in one run (a lone surrogate is written as
    # its bytes, which the CLI cannot decode: a diagnostic too)
    for k, text in enumerate(cli_cases()):
        (tmp_path / f"case{k}.epy").write_bytes(text.encode("utf-8", "surrogatepass"))
    out = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", "--check", str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr and "internal error" not in out.stderr, \
        out.stderr[-3000:]
    for line in out.stderr.splitlines():
        if " error: " in line and line.startswith(str(tmp_path)):
            assert re.match(rf"{re.escape(str(tmp_path))}/case\d+\.epy:\d+:\d+: error: ", line), line
