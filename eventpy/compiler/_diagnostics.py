"""Compile errors: `path:line:col: error: message`, the source line and a caret. User mistakes
are `CompileError`s; anything else escaping the compiler is reported as an internal error."""

from __future__ import annotations

from ._lines import translate_newlines


class CompileError(Exception):
    def __init__(self, message: str, line: int = 0, column: int = 0, path: str = "<epy>",
                 source: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.path = path
        self.source = source

    def render(self) -> str:
        head = f"{self.path}:{self.line}:{self.column}: error: {self.message}"
        lines = translate_newlines(self.source).split("\n")  # as Python numbers them (_lines)
        if not (0 < self.line <= len(lines)):
            return head
        # a tab as one space, under which the caret is counted; a lone surrogate (only a str
        # holds one) as U+FFFD, which can be printed
        import re  # (here: `import eventpy` imports this module, and a program may never need it)

        text = re.sub("[\ud800-\udfff]", "\ufffd", lines[self.line - 1].expandtabs(1))
        return f"{head}\n    {text}\n    {' ' * max(0, self.column - 1)}^"

    def __str__(self) -> str:
        return self.render()


def char_offset(line: str, offset: int) -> int:
    """`ast` counts columns in UTF-8 bytes; a str line is indexed in characters."""
    return len(line.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))


class CompileErrors(Exception):
    """Several errors found in one file (all are reported, in source order)."""

    def __init__(self, errors: list[CompileError]) -> None:
        super().__init__(f"{len(errors)} error(s)")
        self.errors = sorted(errors, key=lambda e: (e.line, e.column))

    def render(self) -> str:
        return "\n".join(e.render() for e in self.errors)

    def __str__(self) -> str:
        return self.render()


class Where:
    """The line the compiler is working on, so that a bug in eventpyc can be reported with the
    file and line it was compiling (`InternalError`)."""

    line = 0


class InternalError(Exception):
    """A bug in eventpyc (not a mistake in the program), with where it happened."""

    def __init__(self, path: str, line: int, cause: BaseException) -> None:
        super().__init__(f"{path}:{line}: internal error in eventpyc ({type(cause).__name__}: {cause}); "
                         "this is a bug in eventpyc, please report it with this file")
        self.path, self.line, self.cause = path, line, cause
