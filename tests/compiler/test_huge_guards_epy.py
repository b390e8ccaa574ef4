"""`eventpyc` on guards larger than their author expected: one nested thousands deep is a
diagnostic at its place in the .epy file (it was "the file nests expressions too deeply" at
1:1, an empty line and a caret: a RecursionError caught for the whole file), and one with a
set literal of many thousand members compiles in time linear in its length (the file was split
into lines once per token of the guard)."""

from __future__ import annotations

import textwrap

from eventpy.compiler import _lower
from eventpy.compiler.cli import main


def _monitor(guard: str) -> str:
    return textwrap.dedent(f"""\
        class M:
            def __init__(self, p: float):
                self.p = p

            event def q(self, firm: str, price: float) when {guard}:
                print(price)
        """)


def test_a_guard_nested_thousands_deep_is_a_diagnostic_not_a_traceback(tmp_path, capsys):
    src = tmp_path / "deep.epy"
    src.write_text(_monitor("price < " + "-" * 3_000 + "self.p"))
    assert main(["--check", str(src)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{src}:5:") and "error: the guard nests its operations more than 200 levels deep" in err
    assert "Traceback" not in err and "RecursionError" not in err


def test_a_guard_nested_within_the_limit_compiles(tmp_path, capsys):
    src = tmp_path / "nested.epy"
    src.write_text(_monitor("price < " + "-" * 150 + "self.p"))
    assert main([str(src)]) == 0
    assert "-" * 150 + "self.p" in (tmp_path / "nested.py").read_text()


def test_a_huge_set_literal_splits_the_file_once_not_once_a_token(tmp_path, monkeypatch):
    members = ", ".join(repr(f"f{i}") for i in range(5_000))
    calls = []
    real = _lower.split_lines

    def counting(text, keepends=False):
        calls.append(len(text))
        return real(text, keepends)

    monkeypatch.setattr(_lower, "split_lines", counting)
    out = _lower.lower(_monitor(f"firm in {{{members}}}"), "big.epy")
    assert len(out.events) == 1 and "'f4999'" in out.events[0].guard
    assert len(calls) < 10, f"the source was split {len(calls)} times"
