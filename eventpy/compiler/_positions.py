"""Code objects whose columns are those of the .epy file. The compiler keeps every line where it
was, but a rewritten line is longer than the one the user wrote (`self.limit = price` becomes
`with __eventpy__.assigning(self, "limit"): self.limit = price`), and a traceback draws its carets
with the compiled columns under the .epy line: they pointed past its end. Each node on such a line
is moved back by the length of what was added in front of the user's text (the added part maps
to the start of that text)."""

from __future__ import annotations

import ast
from types import CodeType

from ._lines import lines, translate_newlines


def compile_epy(python: str, source: str, path: str) -> CodeType:
    """Compile the generated `python` of the .epy `source` with the .epy file's columns."""
    shifts = _shifts(lines(python), lines(translate_newlines(source)))
    tree = ast.parse(python, path)
    if shifts:
        for node in ast.walk(tree):
            line = getattr(node, "lineno", None)
            if line in shifts:
                node.col_offset = _moved(node.col_offset, shifts[line])
            end = getattr(node, "end_lineno", None)
            if end in shifts and node.end_col_offset is not None:
                node.end_col_offset = _moved(node.end_col_offset, shifts[end])
    return compile(tree, path, "exec", dont_inherit=True)


def _shifts(generated: list[str], original: list[str]) -> dict[int, tuple[int, int]]:
    """line -> (where the user's text starts, bytes added before it), for the lines that are the
    user's text with something in front (columns in ast are UTF-8 byte offsets)."""
    out = {}
    for no, (new, old) in enumerate(zip(generated, original), 1):
        text = old.strip()
        if new == old or not text:
            continue
        indent = len(old) - len(old.lstrip())
        at = new.find(text, indent + 1)
        if at < 0 or new[:indent] != old[:indent]:
            continue
        start = len(old[:indent].encode())
        out[no] = (start, len(new[:at].encode()) - start)
    return out


def _moved(col: int, shift: tuple[int, int]) -> int:
    start, added = shift
    if col >= start + added:
        return col - added
    return min(col, start)
