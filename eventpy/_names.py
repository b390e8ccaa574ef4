"""Python's private name mangling, for the names eventpyc and the runtime carry as strings.

Python rewrites `self.__x` written in the body of class `C` to `self._C__x` when it compiles the
class; a field name inside a string (a guard's text, `assigning(self, "x")`, `locals=("x",)`) is
not rewritten, so whoever turns such a string into an attribute name applies the same rule."""

from __future__ import annotations

import unicodedata


def mangle(class_name: str | None, name: str) -> str:
    """`name` as Python stores it when written in the body of class `class_name` (None: no class)."""
    if not class_name or not name.startswith("__") or name.endswith("__") or "." in name:
        return name
    stripped = class_name.lstrip("_")
    return f"_{stripped}{name}" if stripped else name  # a class named only `_`s mangles nothing


def identifier(name: str) -> str:
    """A name as Python reads it in source: NFKC-normalised (PEP 3131: `ﬁeld` is `field`). A name
    the compiler or a guard takes from the text as written must be this to be the attribute."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)
