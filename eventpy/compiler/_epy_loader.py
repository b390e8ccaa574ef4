"""The loader of `.epy` modules: compiles one in memory when it is imported. Apart from the
finders (importhook), which `import eventpy` installs: this module, importlib.abc and the
compiler are loaded when the first `.epy` module is found, not by every `import eventpy`."""

from __future__ import annotations

import importlib.abc
import importlib.util
from pathlib import Path
from typing import Any

from importlib._bootstrap import _call_with_frames_removed  # type: ignore[attr-defined]

from . import CompileError, CompileErrors, compile_source
from ._positions import compile_epy
from ._source import decode


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


def epy_spec(fullname: str, path: str, package: str | None = None) -> Any:
    """The module spec of an .epy file (`package`: the folder of a package's `__init__.epy`)."""
    return importlib.util.spec_from_file_location(
        fullname, path, loader=EpyLoader(fullname, path),
        submodule_search_locations=[package] if package is not None else None)
