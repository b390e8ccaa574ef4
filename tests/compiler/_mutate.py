"""Mutated .epy sources for the compiler's fuzz test (test_fuzz.py): the seeds are the programs
users and tests write (examples/*.epy, the README's .epy blocks, the test programs, the corpus
check's event class alone and after a few standard library modules), the mutations what an editor in mid-edit leaves behind: a token or a line
deleted, duplicated or moved, a construct's keyword where it does not belong, an odd operator, an
unbalanced bracket or quote, non-ASCII text, tabs and indentation changes."""

from __future__ import annotations

import re
import sys
import sysconfig
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# small modules of the standard library with the corpus check's event class appended, as
# tools/corpus_check.py (test_corpus.py) feeds them: constructs among plain Python
CORPUS = ("colorsys.py", "bisect.py", "keyword.py")


def seeds() -> list[str]:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from corpus_check import EVENT_CLASS
    finally:
        sys.path.remove(str(ROOT / "tools"))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    corpus = [(stdlib / name).read_text(encoding="utf-8") + EVENT_CLASS for name in CORPUS]
    from _programs import MONITOR
    from test_diagnostics import BASE, GUARD_LAYOUTS, SETS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"^```python\n(.*?)^```", readme, flags=re.S | re.M)
              if re.search(r"\bevent def\b", b)]
    examples = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("examples/**/*.epy"))]
    # guards over several lines (parentheses, backslashes, a comment): their diagnostics' positions
    guards = [BASE.replace('firm == "IBM" and price < self.limit', g.format("price < self.limit"), 1)
              for g in GUARD_LAYOUTS]
    return examples + blocks + [textwrap.dedent(MONITOR), BASE, SETS, EVENT_CLASS.lstrip("\n")] + guards + corpus


# inserted, or put in a token's place
PAYLOADS = [
    # the constructs and their parts
    "event", "when", "local", "release", "last", "event def", "elapsed()", "self", "self.", "self.x",
    "self.limit", "release self.", "last self.", "release self.x, ", "local x:", "local x: int = 1",
    "event def e(self, x: int) when x > 1:", "when x <", "async ", "def", "class", "lambda", "yield",
    "await", "return", "pass", "global", "nonlocal", "match", "case", "import", "from", "del", "with",
    # operators, odd and not
    ":", ":=", "->", "**", "//", "@", "...", ".", ",", ";", "=", "==", "!=", "!", "$", "?", "`", "*", "/",
    "%", "<", ">", "<<", "~", "-", "and", "or", "not", "in", "is", "if", "else", "not in",
    # brackets and quotes, unbalanced
    "(", ")", "[", "]", "{", "}", "'", '"', '"""', "'''", 'f"{', "f'{", "{{", "}}", 'f"', "rb'", "\\",
    # literals and names
    "_", "1", "1.5", "1e999", "0x", "'s'", '"IBM"', "True", "None", "abs(", "math.sqrt(", "x", "price",
    # layout and text
    "\n", "\\\n", "\t", "    ", "  ", "#", "\r", "\x0c", "\x00", "\x1b", "é", "λ", "😀", "\u00a0",
    "\u200b", "\ufeff", "\u2028", "\uff10", "\ud800",
]

OPS = ["delete_token", "duplicate_token", "swap_tokens", "insert", "replace_token",
       "delete_line", "duplicate_line", "swap_lines", "indent", "dedent", "tab_indent", "join_lines"]

_TOKEN = re.compile(r"\n|[ \t]+|\w+|.", re.S)


def mutate(text: str, mutations: list[tuple[str, int, int, str]]) -> str:
    """Apply (operation, i, j, payload) in turn; i and j are taken modulo the length."""
    for op, i, j, payload in mutations:
        if op in ("delete_line", "duplicate_line", "swap_lines", "indent", "dedent", "tab_indent", "join_lines"):
            text = _on_lines(text, op, i, j)
        else:
            text = _on_tokens(text, op, i, j, payload)
    return text


def _on_tokens(text: str, op: str, i: int, j: int, payload: str) -> str:
    toks = _TOKEN.findall(text)
    if not toks:
        return payload if op in ("insert", "replace_token") else text
    i %= len(toks)
    j %= len(toks)
    if op == "delete_token":
        del toks[i]
    elif op == "duplicate_token":
        toks.insert(i, toks[i])
    elif op == "swap_tokens":
        toks[i], toks[j] = toks[j], toks[i]
    elif op == "insert":
        toks.insert(i, payload)
    elif op == "replace_token":
        toks[i] = payload
    return "".join(toks)


def _on_lines(text: str, op: str, i: int, j: int) -> str:
    lines = text.split("\n")
    i %= len(lines)
    j %= len(lines)
    line = lines[i]
    if op == "delete_line":
        del lines[i]
    elif op == "duplicate_line":
        lines.insert(i, line)
    elif op == "swap_lines":
        lines[i], lines[j] = lines[j], line
    elif op == "indent":
        lines[i] = " " * (1 + j % 8) + line
    elif op == "dedent":
        lines[i] = line[min(len(line) - len(line.lstrip()), 1 + j % 8):]
    elif op == "tab_indent":  # the indentation, or part of it, as a tab
        body = line.lstrip(" ")
        lines[i] = "\t" * (1 + j % 2) + body if body is not line else "\t" + line
    elif op == "join_lines" and i + 1 < len(lines):
        lines[i:i + 2] = [line + " " + lines[i + 1].lstrip()]
    return "\n".join(lines)
