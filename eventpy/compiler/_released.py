"""Where `release self.f` and `last self.f` may be: in a method of a class that declares `local f`
(or inherits it), where `self` is the object — not outside a class, not in a class body outside
its methods, not in a method's header (defaults and annotations are computed when the class is
made). A mixin of `Analysis` (_analysis.py), which has the classes, the lowered text and `error`."""

from __future__ import annotations

import ast
import difflib
from typing import TYPE_CHECKING, Any

from .._names import mangle
from ._diagnostics import char_offset

if TYPE_CHECKING:
    from ._lower import Lowered


class ReleasedFieldChecks:
    lowered: Lowered
    lines: list[str]
    classes: dict[ast.ClassDef, Any]  # ClassInfo
    error: Any
    field_type: Any

    def _check_released_fields(self, tree: ast.Module) -> None:
        """`release self.f` and `last self.f` belong in a method of a class that declares `local f`
        (or inherits it from a base in this file; a base from elsewhere is checked at run time)."""
        scopes = _scopes(tree)
        for line, col, name in self.lowered.releases + self.lowered.lasts:
            word = "release" if (line, col, name) in self.lowered.releases else "last"
            what = f"`{word} self.{name}`"
            # by position, not line: `(lambda: 0) if last self.f else 1` is not in the lambda
            chain = [node for first, end, node in scopes if first <= line <= end
                     and self._source_position(node) <= (line, col) < self._source_position(node, end=True)]
            inner = next((n for n in reversed(chain) if isinstance(n, ast.ClassDef)), None)
            owner = self._self_owner(chain, line, col)
            if owner is not None and inner is not None and chain.index(inner) > owner:
                # a class made inside a method: its body (and its methods, unless one takes a
                # self of its own) reads the method's `self`, as Python resolves the name
                chain = chain[:owner + 1]
            cls = next((n for n in reversed(chain) if isinstance(n, ast.ClassDef)), None)
            if cls is not inner and inner is not None and mangle(inner.name, name) != name:
                method = getattr(chain[-1], "name", "a lambda")
                self.error(f"{what} is in class {inner.name}, made inside {method}: Python names self.{name} "
                           f"there {mangle(inner.name, name)} (by the innermost class), not {cls.name}'s "  # type: ignore[union-attr]
                           f"field; read `{word} self.{name}` into a variable in {method}, outside class "
                           f"{inner.name}", line=line, col=col + 1)
                continue
            if cls is None:
                self.error(f"{what} is outside any class: `{word}` works on a `local` field of the object a "
                           f"method runs on; put it in a method of the class that declares `local {name}: "
                           "TYPE = VALUE`", line=line, col=col + 1)
            elif chain[-1] is cls:
                self.error(f"{what} is in the body of class {cls.name}, outside its methods (no self there): "
                           f"put it in a method of {cls.name}", line=line, col=col + 1)
            elif (part := self._in_header(chain[chain.index(cls) + 1], line, col)) is not None:
                method = chain[chain.index(cls) + 1]
                fix = (f"default it to None and read the released value in the body: `if {part[1]} is None: "
                       f"{part[1]} = {word} self.{name}`" if part[1] else f"read it in the body of {method.name}")
                self.error(f"{what} in {part[0]} of {cls.name}.{getattr(method, 'name', 'lambda')}: Python "
                           f"computes a method's defaults and annotations once, when class {cls.name} is made, "
                           f"and there is no self then (no object, no released value); {fix}",
                           line=line, col=col + 1)
            elif _unbound_lambda(chain[chain.index(cls) + 1:]):
                self.error(f"{what} in a lambda in the body of class {cls.name}, outside its methods: Python makes "
                           f"the lambda when class {cls.name} is made, and its `self` is no parameter, so there is "
                           f"no self when it runs (no object, no released value); read it in a method of "
                           f"{cls.name}, or take the object as the lambda's first parameter: `lambda self: ...`",
                           line=line, col=col + 1)
            else:
                private = mangle(cls.name, name) != name  # a base's `__f` is another field (`_Base__f`)
                declared = set(self.classes[cls].locals) if private else self._local_fields(cls, set())
                if declared is not None and name not in declared:
                    info = self.classes[cls]
                    t = self.field_type(info, name)
                    bases = [c.name for c in self.classes if c is not cls and name in self.classes[c].locals]
                    near = difflib.get_close_matches(name, sorted(declared), 1)
                    if near and name not in info.fields:  # a typo of a local field, not a field of its own
                        self.error(f"{what}: the class has no field {name}; did you mean `{word} self.{near[0]}`? "
                                   f"(self.{near[0]} is declared `local` in class {cls.name})", line=line, col=col + 1)
                        continue
                    self.error(f"{what}: {name} is not declared `local` in class {cls.name}; declare it in the "
                               f"class body: `local {name}: {t.__name__ if t else 'TYPE'} = VALUE`"
                               + (f" (a private name: {bases[0]}'s {name} is another field)"
                                  if private and bases else ""), line=line, col=col + 1)

    def _self_owner(self, chain: list[ast.AST], line: int, col: int) -> int | None:
        """The index in `chain` of the function whose parameter `self` is the name at (line, col)
        as Python resolves it: the innermost scope around it first (a function's own header is
        computed in the scope around the function), then the functions around it; a class's body
        is seen only from itself, not from the functions inside it."""
        for k in range(len(chain) - 1, -1, -1):
            node = chain[k]
            if isinstance(node, ast.ClassDef) or self._in_header(node, line, col) is not None:
                continue  # a class binds no parameter; a header is computed in the scope around
            a = node.args  # type: ignore[attr-defined]
            if any(p is not None and p.arg == "self"
                   for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)):
                return k
        return None

    def _source_position(self, node: ast.AST, end: bool = False) -> tuple[int, int]:
        """(line, 0-based column) in the .epy file of where a node starts (or ends)."""
        line = node.end_lineno if end else node.lineno  # type: ignore[attr-defined]
        offset = node.end_col_offset if end else node.col_offset  # type: ignore[attr-defined]
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        return line, self.lowered.original_column(line, char_offset(text, offset) + 1) - 1

    def _in_header(self, fn: ast.AST, line: int, col: int) -> tuple[str, str] | None:
        """Where (line, col) is in the header of `fn` (a method directly in a class body, whose
        header Python evaluates in the class body): ("the default value of parameter p", "p"),
        ("an annotation", ""), or None when it is in the body."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return None
        body = fn.body if isinstance(fn, ast.Lambda) else fn.body[0]
        if (line, col) >= self._source_position(body):
            return None
        a = fn.args
        positional = a.posonlyargs + a.args
        defaults = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
        defaults += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
        for p, d in defaults:
            if self._source_position(d) <= (line, col) < self._source_position(d, end=True):
                return f"the default value of parameter {p.arg}", p.arg
        return "an annotation", ""

    def _local_fields(self, cls: ast.ClassDef, seen: set[ast.ClassDef]) -> set[str] | None:
        """The `local` fields of a class and its bases, or None when a base is not a class of
        this file the compiler can tell apart by its name (then the run time checks)."""
        out = set(self.classes[cls].locals)
        seen.add(cls)
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id == "object":
                continue
            found = [c for c in self.classes if isinstance(b, ast.Name) and c.name == b.id]
            if len(found) != 1 or found[0] in seen:
                return None
            more = self._local_fields(found[0], seen)
            if more is None:
                return None
            out |= more
        return out


def _unbound_lambda(chain: list[ast.AST]) -> bool:
    """Whether the functions between a class body and a `last` are lambdas none of which takes a
    `self`: a lambda in a class body that does is a method (`x = lambda self: ...`)."""
    return all(isinstance(n, ast.Lambda) for n in chain) and not any(
        a.arg == "self" for n in chain for a in (*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs))


def _scopes(tree: ast.Module) -> list[tuple[int, int, ast.AST]]:
    """(first line, last line, node) of every class, function and lambda, outer ones first."""
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    out: list[tuple[int, int, ast.AST]] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, kinds):
                out.append((child.lineno, child.end_lineno or child.lineno, child))
            walk(child)

    walk(tree)
    return out
