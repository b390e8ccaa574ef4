"""Source files are read as Python reads them (PEP 263: a BOM or a coding declaration on line 1
or 2, else UTF-8; universal newlines), so that eventpyc, `eventpy run` and the import hook accept
what Python accepts; eventpyc writes its output in the encoding the source was read in."""

from __future__ import annotations

import io
import re
import tokenize

from ._diagnostics import CompileError


def decode(data: bytes, path: str) -> tuple[str, str]:
    """(text, encoding) of a source file's bytes; a CompileError when Python could not read it."""
    encoding = "utf-8"
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        text = data.decode(encoding)
    except SyntaxError as e:  # an unknown encoding, or bytes the declaration does not allow
        raise _unreadable(f"{e.msg}; declare the file's encoding on line 1 or 2 (# -*- coding: NAME -*-)"
                          " or save it as UTF-8", data, encoding, 0, path) from None
    except UnicodeDecodeError as e:
        raise _unreadable(f"byte {data[e.start]:#04x} is not valid {encoding}; save the file as {encoding} "
                          "or declare its encoding on line 1 or 2 (# -*- coding: NAME -*-)",
                          data, encoding, e.start, path) from None
    return io.IncrementalNewlineDecoder(None, translate=True).decode(text, final=True), encoding


def read(path: str) -> tuple[str, str]:
    with open(path, "rb") as f:
        return decode(f.read(), path)


def _unreadable(message: str, data: bytes, encoding: str, at: int, path: str) -> CompileError:
    """The error at byte `at`, its column counted in characters of the line as far as it decodes."""
    start = data.rfind(b"\n", 0, at) + 1
    line = data.count(b"\n", 0, at) + 1
    column = len(data[start:at].decode(encoding, errors="replace")) + 1
    shown = data.decode(encoding, errors="replace")
    return CompileError(f"cannot read the file: {message}", line, column, path, shown)


_UNCOMPILABLE = re.compile(r"[\x00\ud800-\udfff]")


def check_characters(text: str, path: str) -> None:
    """Characters Python compiles in no place, said where they are (Python names no position for
    a NUL, and a lone surrogate — only in a str, no file decodes to one — stopped it with a
    UnicodeEncodeError)."""
    m = _UNCOMPILABLE.search(text)
    if m is None:
        return
    line = text.count("\n", 0, m.start()) + 1
    column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    if m.group() == "\x00":
        message = "the source contains a NUL character (\\x00), which Python source cannot hold; remove it"
    else:
        message = (f"the source contains a lone surrogate (U+{ord(m.group()):04X}), which no encoding can "
                   "store; remove it, or decode the file without errors='surrogateescape'")
    raise CompileError(message, line, column, path, text)
