"""`import stock` for a `stock.epy` on sys.path, once `import eventpy` has run. The module is
compiled in memory and its code object carries the .epy path, so tracebacks name stock.epy and
its lines (the compiler never moves a line)."""

from __future__ import annotations

# Only what the finders need, at import: `import eventpy` installs them, so every program and
# every `eventpy` command loads this module. The loader and the compiler (_epy_loader) come with
# the first .epy module found; os.path rather than pathlib, which costs more than the rest.
import importlib.machinery
import os
import sys

from .._version import GENERATED_INTERFACE

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing)
if TYPE_CHECKING:
    from typing import Any


def __getattr__(name: str) -> Any:
    if name == "EpyLoader":  # as before the split (eventpy.compiler.importhook.EpyLoader)
        from ._epy_loader import EpyLoader

        return EpyLoader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class EpyFinder:  # a meta path finder (importlib.abc.MetaPathFinder has nothing it needs)
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        name = fullname.rpartition(".")[2]
        for entry in path if path is not None else sys.path:
            if os.path.isfile(os.path.join(entry or ".", f"{name}.epy")):
                from pathlib import Path

                from ._epy_loader import epy_spec

                return epy_spec(fullname, str(Path(entry or ".") / f"{name}.epy"))  # (named as it was)
        return None


class StaleFinder:
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
                spec = self._package(fullname, os.path.join(os.path.abspath(directory), name))
                if spec is not None or os.path.isfile(os.path.join(directory, name, "__init__.py")):
                    return spec  # (a plain package: PathFinder's)
            if py_name not in names:
                if epy_name in names:
                    return None  # a .epy alone: EpyFinder's
                continue
            if epy_name not in names:
                return None  # a plain module: PathFinder imports it
            py, epy = os.path.join(directory, py_name), os.path.join(directory, epy_name)
            try:
                if os.stat(epy).st_mtime <= os.stat(py).st_mtime:
                    by = _other_eventpyc(py)
                    return None if by is None else self._epy_spec(fullname, directory, py_name, epy_name, by=by)
            except OSError:
                return None
            return self._epy_spec(fullname, directory, py_name, epy_name)
        return None

    def _package(self, fullname: str, folder: str) -> Any:
        """A folder with an `__init__.epy` is a package, as one with an `__init__.py` is (else
        Python makes it a namespace package and the __init__.epy is never run)."""
        py, epy = os.path.join(folder, "__init__.py"), os.path.join(folder, "__init__.epy")
        by = ""
        try:
            if not os.path.isfile(epy):
                return None  # PathFinder's: a plain package
            if os.path.isfile(py) and os.stat(epy).st_mtime <= os.stat(py).st_mtime:
                by = _other_eventpyc(py) or ""
                if not by:
                    return None  # PathFinder's: eventpyc compiled it since
        except OSError:
            return None
        return self._epy_spec(fullname, folder, "__init__.py" if os.path.isfile(py) else None, "__init__.epy",
                              package=True, by=by)

    @staticmethod
    def _epy_spec(fullname: str, directory: str, py_name: str | None, epy_name: str, package: bool = False,
                  by: str = "") -> Any:
        """The spec of `directory/epy_name`, warning that the .py beside it (if any) is not imported."""
        from pathlib import Path  # (the paths as they were always named: Path(".", "x.py") is x.py)

        from ._epy_loader import epy_spec

        epy = Path(directory, epy_name)
        if py_name is not None:
            why = f"compiled by {by}" if by else "older than"
            print(f"{Path(directory, py_name)}: warning: {why} {epy_name} beside it; importing {epy_name} "
                  f"(run eventpyc {epy_name} again, or delete {py_name})", file=sys.stderr)
        return epy_spec(fullname, str(epy), str(Path(directory)) if package else None)


_BINDS = ("import eventpy.runtime.lang as __eventpy__", '__import__("eventpy.runtime.lang"')
_MARK = r'__eventpy__\.generated_for\((\d+), "([^"]*)"\)|\)\.generated_for\((\d+), "([^"]*)"\)'


def _other_eventpyc(py: str) -> str | None:
    """Whether the .py beside a .epy was written by an eventpyc whose code calls another interface
    of the runtime than this one's (runtime/_generated.py): what wrote it ("an eventpyc older
    than the runtime's interface mark" for eventpy 0.1.0's, which wrote none), or None. Such a
    file may still run, or fail inside the runtime; its .epy is imported instead, as for a .py
    older than its .epy. A .py of plain Python (a .epy without constructs) binds no runtime."""
    import re  # (re caches the compiled pattern)

    try:
        with open(py, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    if not any(b in text for b in _BINDS):
        return None
    mark = re.search(_MARK, text)
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
    from . import compile_source
    from ._positions import compile_epy
    from ._source import read

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
