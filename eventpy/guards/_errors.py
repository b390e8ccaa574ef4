"""Errors in a guard, with the position and a caret under the offending part."""

from __future__ import annotations


def source_lines(text: str) -> list[str]:
    """The lines of a guard as lark counts them: split at "\n" only (str.splitlines also splits
    at \x0c, \u2028 and others, which are characters inside a line for lark and for Python)."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


class GuardError(ValueError):
    """A guard outside the language, or ill-typed. `str()` names the part and says why."""

    __module__ = "eventpy"  # as a traceback's last line names it: eventpy.GuardError (its public name)

    def __init__(self, message: str, source: str = "", line: int = 0, column: int = 0,
                 filename: str = "<guard>") -> None:
        self.message = message
        self.source = source  # the guard's text, or the whole file's when line and column are the file's
        self.line = line
        self.column = column
        self.filename = filename
        super().__init__(self.render())

    def render(self, filename: str | None = None) -> str:
        """The diagnostic as `filename:line:col: error: ...`, the guard's line and a caret."""
        filename = filename or self.filename
        if not self.line:
            return self.message
        lines = source_lines(self.source)
        text = lines[self.line - 1] if self.source and self.line <= len(lines) else ""
        head = f"{filename}:{self.line}:{self.column}: error: {self.message}"
        if not text:
            return head
        return f"{head}\n    {text}\n    {' ' * (self.column - 1)}^"

    def at(self, node) -> "GuardError":
        """The same error, placed at `node` if it has no position yet."""
        if not self.line and getattr(node, "line", 0):
            return GuardError(self.message, self.source, node.line, node.column)
        return self


def error_at(node, message: str, source: str = "") -> GuardError:
    return GuardError(message, source, getattr(node, "line", 0), getattr(node, "column", 0))
