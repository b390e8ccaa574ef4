"""`import stock` for a `stock.epy` on sys.path, once `import eventpy` has run. The module is
compiled in memory and its code object carries the .epy path, so tracebacks name stock.epy and
its lines (the compiler never moves a line)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

from importlib._bootstrap import _call_with_frames_removed  # type: ignore[attr-defined]

from .._version import GENERATED_INTERFACE
from . import CompileError, CompileErrors, compile_source
from ._positions import compile_epy
from ._source import decode, read


def _compiled(source: str, path: str, module_name: str) -> str:
    """compile_source for an import; a CompileError keeps no frame of the compiler (_boundary)."""
    try:
        return compile_source(source, path, module_name)
    except (CompileError, CompileErrors) as e:
        e.__traceback__ = None
        raise


class EpyLoader(importlib.abc.SourceLoader):
    def __init__(self, fullname: str, path: str) -> None:
        self.fullname = fullname
        self.path = path

    def get_filename(self, fullname: str) -> str:
        return self.path

    def get_data(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> Any:  # type: ignore[override]
        source = decode(data, str(path))[0] if isinstance(data, bytes) else data
        try:
            python = _call_with_frames_removed(_compiled, source, str(path), self.fullname.rpartition(".")[2])
        except (CompileError, CompileErrors) as e:
            # a mistake in the .epy, shown as Python shows a SyntaxError in a module it imports:
            # the program's `import` line, then the error. With this frame gone, the traceback's
            # frames below the program's are importlib's up to _call_with_frames_removed, which
            # Python leaves out; they were importlib's, this loader's and the compiler's
            if e.__traceback__ is not None:
                e.__traceback__ = e.__traceback__.tb_next
            raise
        return compile_epy(python, source, str(path))

    def path_stats(self, path: str) -> dict:  # no bytecode cache for .epy
        raise OSError


class EpyFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        name = fullname.rpartition(".")[2]
        for entry in path if path is not None else sys.path:
            candidate = Path(entry or ".") / f"{name}.epy"
            if candidate.is_file():
                loader = EpyLoader(fullname, str(candidate))
                return importlib.util.spec_from_file_location(fullname, str(candidate), loader=loader)
        return None


class StaleFinder(importlib.abc.MetaPathFinder):
    """Just before PathFinder: `eventpyc stock.epy` writes stock.py beside it, which PathFinder
    would import even after stock.epy was edited. A module found as X.py beside an X.epy that is
    newer is imported from X.epy, with a warning (the .py would still be run by plain `python`).
    eventpyc leaves no mark in what it writes (a file without constructs compiles to exactly its
    own text), so the .py beside the .epy is taken as its output, as eventpyc names it.

    A folder with an `__init__.epy` (and no newer `__init__.py`) is a package, imported from it
    here: PathFinder would make it a namespace package, which never runs the __init__.epy.

    Every import passes here: a directory's names are listed once (again when it changes), and a
    module is looked at only where its .py and .epy sit together in the first directory that
    has it, so other imports cost a dict lookup per path entry, not a second search."""

    def __init__(self) -> None:
        self._names: dict[str, tuple[float, frozenset[str]]] = {}  # directory -> (mtime, names)

    def _listing(self, directory: str) -> frozenset[str]:
        try:
            mtime = os.stat(directory).st_mtime
        except OSError:
            return frozenset()
        cached = self._names.get(directory)
        if cached is None or cached[0] != mtime:
            try:
                names = frozenset(os.listdir(directory))
            except OSError:
                names = frozenset()
            cached = self._names[directory] = (mtime, names)
        return cached[1]

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        name = fullname.rpartition(".")[2]
        py_name, epy_name = f"{name}.py", f"{name}.epy"
        for entry in path if path is not None else sys.path:
            if not isinstance(entry, str):
                continue
            directory = entry or "."
            names = self._listing(directory)
            if name in names:  # a package: with an __init__.epy (and no newer __init__.py), ours
                # (absolute, as Python makes a package's __path__ and __file__ from '' on sys.path)
                spec = self._package(fullname, Path(os.path.abspath(directory), name))
                if spec is not None or Path(directory, name, "__init__.py").is_file():
                    return spec  # (a plain package: PathFinder's)
            if py_name not in names:
                if epy_name in names:
                    return None  # a .epy alone: EpyFinder's
                continue
            if epy_name not in names:
                return None  # a plain module: PathFinder imports it
            py, epy = Path(directory, py_name), Path(directory, epy_name)
            try:
                if epy.stat().st_mtime <= py.stat().st_mtime:
                    by = _other_eventpyc(py)
                    return None if by is None else self._epy_spec(fullname, py, epy, by=by)
            except OSError:
                return None
            return self._epy_spec(fullname, py, epy)
        return None

    def _package(self, fullname: str, folder: Path) -> Any:
        """A folder with an `__init__.epy` is a package, as one with an `__init__.py` is (else
        Python makes it a namespace package and the __init__.epy is never run)."""
        py, epy = folder / "__init__.py", folder / "__init__.epy"
        by = ""
        try:
            if not epy.is_file():
                return None  # PathFinder's: a plain package
            if py.is_file() and epy.stat().st_mtime <= py.stat().st_mtime:
                by = _other_eventpyc(py) or ""
                if not by:
                    return None  # PathFinder's: eventpyc compiled it since
        except OSError:
            return None
        return self._epy_spec(fullname, py if py.is_file() else None, epy, package=folder, by=by)

    @staticmethod
    def _epy_spec(fullname: str, py: Path | None, epy: Path, package: Path | None = None, by: str = "") -> Any:
        if py is not None:
            why = f"compiled by {by}" if by else "older than"
            print(f"{py}: warning: {why} {epy.name} beside it; importing {epy.name} "
                  f"(run eventpyc {epy.name} again, or delete {py.name})", file=sys.stderr)
        loader = EpyLoader(fullname, str(epy))
        return importlib.util.spec_from_file_location(
            fullname, str(epy), loader=loader,
            submodule_search_locations=[str(package)] if package is not None else None)


_BINDS = ("import eventpy.runtime.lang as __eventpy__", '__import__("eventpy.runtime.lang"')
_MARK = re.compile(r'__eventpy__\.generated_for\((\d+), "([^"]*)"\)|\)\.generated_for\((\d+), "([^"]*)"\)')


def _other_eventpyc(py: Path) -> str | None:
    """Whether the .py beside a .epy was written by an eventpyc whose code calls another interface
    of the runtime than this one's (runtime/_generated.py): what wrote it ("an eventpyc older
    than the runtime's interface mark" for eventpy 0.1.0's, which wrote none), or None. Such a
    file may still run, or fail inside the runtime; its .epy is imported instead, as for a .py
    older than its .epy. A .py of plain Python (a .epy without constructs) binds no runtime."""
    try:
        text = py.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not any(b in text for b in _BINDS):
        return None
    mark = _MARK.search(text)
    if mark is None:
        return "an eventpyc older than this runtime (eventpy 0.1.0's, before the interface mark)"
    interface, version = (mark.group(1), mark.group(2)) if mark.group(1) else (mark.group(3), mark.group(4))
    if int(interface) == GENERATED_INTERFACE:
        return None
    return f"eventpyc {version} (for the runtime's interface {interface}; this one's is {GENERATED_INTERFACE})"


def install() -> None:
    if not any(isinstance(f, StaleFinder) for f in sys.meta_path):
        finders = sys.meta_path
        at = next((k for k, f in enumerate(finders) if f is importlib.machinery.PathFinder), len(finders))
        finders.insert(at, StaleFinder())
    if not any(isinstance(f, EpyFinder) for f in sys.meta_path):
        sys.meta_path.append(EpyFinder())


def run_path(path: str) -> None:
    """`python -m eventpy run file.epy`: compile in memory and run as __main__."""
    source = read(path)[0]
    python = compile_source(source, path, "__main__")
    code = compile_epy(python, source, path)
    module = type(sys)("__main__")
    module.__file__ = path
    sys.modules["__main__"] = module
    exec(code, module.__dict__)


def run_module(name: str) -> None:
    """`eventpy run -m pkg.app`: run a module as `python -m` does (`pkg/app.epy`, or a package's
    `__main__.epy`), found by the import hook: its relative imports work, as a file's do not."""
    import runpy

    install()
    runpy.run_module(name, run_name="__main__", alter_sys=True)
