"""`eventpyc`: .epy source -> plain Python (lower the constructs, check guards, rewrite classes)."""

from __future__ import annotations

from ._diagnostics import CompileError, CompileErrors, InternalError, Where

for _exc in (CompileError, CompileErrors):
    _exc.__module__ = __name__  # as tracebacks name them: eventpy.compiler.CompileError


def compile_source(source: str, path: str = "<epy>", module_name: str | None = None) -> str:
    """The Python text of an .epy source; raises CompileError(s) for the user's mistakes."""
    # lark and libcst are imported on the first compilation, not by `import eventpy` (which
    # installs the import hook from this package): a program without .epy modules never loads them
    from ._lines import translate_newlines
    from ._lower import lower
    from ._rewrite import rewrite
    from ._source import check_characters

    if module_name is None:
        from pathlib import Path  # (here: `import eventpy` imports this package for the import hook)

        module_name = Path(path).stem if path and not path.startswith("<") else "__main__"
    Where.line = 1
    # as Python reads it: \r\n and \r end lines as \n does (eventpyc and the import hook read
    # files so; a str may still hold them); a text with nothing to rewrite comes back as it was
    text = translate_newlines(source)
    try:
        check_characters(text, path)
        lowered = lower(text, path)
        python = rewrite(lowered, module_name, path, text)
        return source if python == text else python
    except (CompileError, CompileErrors):
        raise
    except RecursionError:
        raise CompileError("the file nests expressions too deeply for eventpyc to rewrite it",
                           1, 1, path, text) from None
    except Exception as e:  # not the user's mistake: say so, with where it happened
        raise InternalError(path, Where.line, e) from e


__all__ = ["CompileError", "CompileErrors", "InternalError", "compile_source"]
