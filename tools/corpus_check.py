"""Corpus check for eventpyc (the language issue's must-reach):

1. every .py file of the Python standard library that Python itself compiles, fed to eventpyc as
   .epy, comes out byte for byte identical;
2. the same file with an event class appended still compiles, and every original top-level
   statement comes out as it went in (same text, same lines).

    python tools/corpus_check.py [--limit N] [--appended-limit N]
Prints a summary line and exits 1 if a file differs. The test suite runs it on a sample.
"""

from __future__ import annotations

import argparse
import ast
import sys
import sysconfig
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventpy.compiler import compile_source  # noqa: E402

EVENT_CLASS = '''

class CorpusProbe:
    local mark: int = 0

    def __init__(self, limit: float):
        self.limit = limit

    event def ping(self, x: float, tag: str) when x < self.limit and tag != "skip":
        self.limit = x
        if self.mark != last self.mark:
            release self.mark
'''


def stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for p in sorted(root.rglob("*.py")):
        if "site-packages" in p.parts or "test" in p.parts and "bad" in p.name:
            continue
        out.append(p)
    return out


def compiles(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def check_identity(p: Path, text: str) -> str | None:
    out = compile_source(text, str(p))
    return None if out == text else "changed"


def _mark(st: ast.stmt) -> bool:
    """The call of the runtime interface's mark eventpyc puts beside its import."""
    return (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "generated_for"
            and isinstance(st.value.func.value, ast.Name) and st.value.func.value.id == "__eventpy__")


def check_appended(p: Path, text: str) -> str | None:
    src = text if text.endswith("\n") else text + "\n"
    src += EVENT_CLASS
    out = compile_source(src, str(p))
    if not compiles(out, str(p)):
        return "does not compile"
    if len(out.splitlines()) != len(src.splitlines()):
        return "line count changed"
    # every original top-level statement: same AST, same line; the runtime import and its
    # interface mark (__eventpy__.generated_for(...)) are extra
    old = ast.parse(text).body
    new = [st for st in ast.parse(out).body if not (
        isinstance(st, ast.Import) and st.names[0].name == "eventpy.runtime.lang") and not _mark(st)]
    for a, b in zip(old, new):
        if ast.dump(a) != ast.dump(b) or (a.lineno, a.end_lineno) != (b.lineno, b.end_lineno):
            return f"statement at line {a.lineno} changed"
    if len(new) != len(old) + 1:
        return "statements added or lost"
    return None


def _guarded(check, p: Path, text: str) -> str | None:
    try:
        return check(p, text)
    except Exception as e:  # a crash is a failure of its own, reported with the file
        return f"eventpyc raised {type(e).__name__}: {str(e)[:200]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0, help="check only every k-th file (0: all)")
    ap.add_argument("--appended-limit", type=int, default=0, help="every k-th file for check 2")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", SyntaxWarning)  # the stdlib's own test data warns
    files = stdlib_files()
    t0 = time.perf_counter()
    checked = appended = 0
    failures = []
    for i, p in enumerate(files):
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if not compiles(text, str(p)):
            continue
        if args.limit and i % args.limit:
            continue
        checked += 1
        why = _guarded(check_identity, p, text)
        if why:
            failures.append((p, why))
        if not args.appended_limit or i % args.appended_limit == 0:
            appended += 1
            why = _guarded(check_appended, p, text)
            if why:
                failures.append((p, "appended: " + why))
    for p, why in failures[:20]:
        print(f"{p}: {why}")
    print(f"corpus: {checked} files identical check, {appended} with an event class appended, "
          f"{len(failures)} failure(s), {time.perf_counter() - t0:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
