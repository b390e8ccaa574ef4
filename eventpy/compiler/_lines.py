"""Lines as Python numbers them. Once newlines are translated (compile_source does it), only
"\n" ends a line: str.splitlines also splits at \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and \u2029,
which Python reads as characters inside a line, and a line number found by the tokenizer or
`ast` then named another line (a form feed in a line moved every later edit)."""

from __future__ import annotations


def lines(text: str, keepends: bool = False) -> list[str]:
    """`text.splitlines(keepends)`, split at "\n" only."""
    parts = text.split("\n")
    last = parts.pop()  # what follows the final "\n" ("" when the text ends with one)
    out = [p + "\n" for p in parts] if keepends else parts
    if last:
        out.append(last)
    return out


def translate_newlines(text: str) -> str:
    """\r\n and \r as \n, as Python reads a file (universal newlines)."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
