"""Put `import eventpy.runtime.lang as __eventpy__` (and the mark of the runtime interface the code
calls: runtime/_generated.py) on a line that already exists, so no line of
the program moves (tracebacks and diagnostics keep the .epy line numbers)."""

from __future__ import annotations

import ast

from .._version import GENERATED_INTERFACE, __version__
from ._diagnostics import char_offset

# the runtime's interface the generated code calls, checked when it is imported (runtime/_generated)
MARK = f'generated_for({GENERATED_INTERFACE}, "{__version__}")'

IMPORT = f"import eventpy.runtime.lang as __eventpy__; __eventpy__.{MARK}"
_COMPOUND = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.For, ast.AsyncFor,
             ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
if hasattr(ast, "TryStar"):
    _COMPOUND += (ast.TryStar,)


def _prelude(stmt: ast.stmt, k: int) -> bool:
    """The module docstring or a __future__ import: they must stay first."""
    if k == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
            and isinstance(stmt.value.value, str):
        return True
    return isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"


def place_import(lines: list[str], tree: ast.Module) -> bool:
    """Edit `lines` in place; False when no existing line can take the import (every event
    class then binds the runtime in its own header)."""
    body = tree.body
    k = 0
    while k < len(body) and _prelude(body[k], k):
        k += 1
    if k < len(body) and not isinstance(body[k], _COMPOUND) and body[k].col_offset == 0:
        n = body[k].lineno - 1  # before the first ordinary statement, on its line
        lines[n] = f"{IMPORT}; {lines[n]}"
        return True
    if k > 0:
        prev = body[k - 1]  # after the docstring or the last __future__ import, on its last line
        n = (prev.end_lineno or prev.lineno) - 1
        col = char_offset(lines[n], prev.end_col_offset or 0)
        lines[n] = f"{lines[n][:col]}; {IMPORT}{lines[n][col:]}"
        return True
    stop = body[0].lineno - 1 if body else len(lines)
    for n in range(stop):
        if not lines[n].strip():
            lines[n] = IMPORT + "\n"  # a blank line before the first statement
            return True
    return False
