"""Checks of a class's members that Python accepts and EventPy cannot honour: a @dataclass
decorator, an event method that is a generator, a property a guard reads, a store of a guard
field into the object's `__dict__`. A mixin of `Analysis` (_analysis.py), which has the classes,
`error` and the guards' reads."""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING, Any

from ..guards import Node as GuardNode, parse_guard
from ..guards._ast import SelfField

_TYPES = {"int": int, "float": float, "str": str, "bool": bool}

if TYPE_CHECKING:
    from ._analysis import ClassInfo


class MemberChecks:
    classes: dict[ast.ClassDef, Any]  # ClassInfo
    error: Any

    def _check_decorators(self, info: ClassInfo) -> None:
        for deco in info.node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if ast.unparse(target) in ("dataclass", "dataclasses.dataclass"):
                self.error(f"a class with event methods or `local` fields cannot be a @dataclass: EventPy "
                           f"gives {info.node.name} an __init__ before the decorator runs, so the dataclass "
                           "makes none; write __init__ yourself", deco)
        for fn in info.events:
            for deco in fn.decorator_list:
                name = ast.unparse(deco.func if isinstance(deco, ast.Call) else deco)
                if name.rsplit(".", 1)[-1] in _NOT_METHODS:
                    self.error(f"@{name} cannot decorate an event method: an event method runs on the object that "
                               f"receives the event (self), and {info.node.name}.{fn.name}(...) publishes; remove "
                               f"@{name} (a helper that needs no object can be one of its own, called from "
                               "the body)", deco)

    def _check_deleted_fields(self, info: ClassInfo, fields: set[str]) -> None:
        """`del self.f` of a field a guard reads: the guard would have no value (refused at run time)."""
        for node in _own_nodes(info.node):
            if isinstance(node, ast.Delete):
                for t in node.targets:
                    for el in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                        if (isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name)
                                and el.value.id == "self" and el.attr in fields):
                            self.error(f"self.{el.attr} is read by a guard and cannot be deleted: the guard needs "
                                       "a value; assign one its guard rejects instead (or keep a flag the guard "
                                       "reads, such as self.active)", el)

    def _check_redefined_events(self, info: ClassInfo) -> None:
        """A name of the class body bound again after an `event def` of that name: Python keeps the
        last binding, so the event method, its guard and its subscription would be gone without a
        word (Class.quote(...) would call the later def and publish nothing)."""
        events: dict[str, int] = {}  # name -> line of the event def that binds it
        for stmt in info.node.body:
            for name in _bound_by(stmt):
                if name not in events:
                    continue
                if stmt in info.events:
                    self.error(f"the event method {name} on line {events[name]} is defined again here: Python keeps "
                               "only the last definition, so the first one's guard would never subscribe; give "
                               "one another name, or join the two guards with `or` in one event method", stmt)
                else:
                    self.error(f"{name} is defined again here, after the event method {name} on line "
                               f"{events[name]}: Python keeps the last definition, so the event method (its guard, "
                               f"its subscription, {info.node.name}.{name}(...) publishing) would be lost; rename "
                               "one of them", stmt)
            if stmt in info.events:
                events[stmt.name] = stmt.lineno  # type: ignore[attr-defined]

    def _check_overrides(self, info: ClassInfo) -> None:
        """What the runtime refuses when a subclass is made (lang._event_methods), said by the
        compiler when the base is in this file: `eventpyc --check` passed a plain `def` over an
        `event def`, or an override with other parameters, and the program then failed at its
        `class` line."""
        inherited = self._base_events(info, frozenset({info.node}))
        for stmt in info.node.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or stmt.name not in inherited:
                continue
            base, fn = inherited[stmt.name]
            where = f"{base}.{fn.name}"
            if stmt not in info.events:
                self.error(f"{info.node.name}.{stmt.name} overrides the event method {where} (line {fn.lineno}) with "
                           f"a plain method; declare it `event def {stmt.name}(...) when ...:` to override it, or "
                           "give it another name", stmt)
                continue
            mine, theirs = _attributes(stmt), _attributes(fn)
            if mine is not None and theirs is not None and mine != theirs:
                self.error(f"event method {info.node.name}.{stmt.name}({_describe(mine)}) overrides {where}"
                           f"({_describe(theirs)}) (line {fn.lineno}): an override must keep the parameters "
                           "(names and types), or the base's events would not fit it", stmt)

    def _base_events(self, info: ClassInfo, seen: frozenset) -> dict[str, tuple[str, ast.FunctionDef]]:
        """The event methods of the bases defined in this file, nearest first: name -> (class, def).
        A base name that more than one class of the file has is left out (which is meant?)."""
        out: dict[str, tuple[str, ast.FunctionDef]] = {}
        for b in info.node.bases:
            found = [c for c in self.classes.values() if isinstance(b, ast.Name) and c.node.name == b.id]
            if len(found) != 1 or found[0].node in seen:
                continue
            base = found[0]
            for fn in base.events:
                out.setdefault(fn.name, (base.node.name, fn))
            for name, got in self._base_events(base, seen | {base.node}).items():
                out.setdefault(name, got)
        return out

    def _check_generator(self, fn: ast.FunctionDef) -> None:
        """A `yield` makes a function a generator: calling it on a delivery would only make a
        generator object that nothing iterates, and the body would never run."""
        found = own_yield(fn)
        if found is not None:
            self.error(f"an event method cannot be a generator: this `yield` makes calling {fn.name} return a "
                       "generator that nothing iterates, so its body would never run on a delivery; collect "
                       "the values (a list, a queue) or call a generator function from the body", found)

    def _check_dict_stores(self, info: ClassInfo) -> None:
        """A store into `self.__dict__` passes the fields' descriptors: a guard field stored so,
        once the object has subscribed (after __init__), changes and its subscription never learns."""
        fields = self._guard_fields_with_bases(info)
        if not fields:
            return
        self._check_deleted_fields(info, fields)
        for node, keys, method in dict_stores(info.node):
            if method in ("__init__", "__setstate__"):
                # the object subscribes when __init__ returns, with the values stored then; the one
                # __setstate__ fills is a copy (pickle, copy.copy), which never subscribes
                continue
            hit = sorted(fields & set(keys)) if keys is not None else None
            if hit == []:
                continue
            said = (f"this stores self.{hit[0]}, which a guard reads, into self.__dict__" if hit else
                    f"this store into self.__dict__ may store a field a guard reads ({', '.join(sorted(fields))})")
            fix = ("call super().__setattr__(name, value)" if method == "__setattr__" and keys is None else
                   f"write self.{hit[0]} = ..." if hit else "store each with setattr(self, name, value)")
            self.error(f"{said}, past the field, so its subscription would not learn the new value (only a store "
                       f"in __init__, before the object subscribes, may): {fix}",
                       node)

    def _guard_fields_with_bases(self, info: ClassInfo, seen: frozenset = frozenset()) -> set[str]:
        """The fields the guards of a class and of its bases in this file read."""
        out = set(info.guard_fields)
        for b in info.node.bases:
            for other in self.classes.values():
                if isinstance(b, ast.Name) and other.node.name == b.id and other.node not in seen:
                    out |= self._guard_fields_with_bases(other, seen | {info.node})
        return out

    def _check_properties(self, fn: ast.FunctionDef, info: ClassInfo, fields: set[str],
                          text: str, line: int, col: int) -> bool:
        """A guard reads stored fields, whose stores send their values: a property of the class
        computes its value, and the field the runtime would put in its place would hide it."""
        found = False
        reads = None
        for f in sorted(fields & properties(info.node)):
            reads = reads or _field_reads(text)
            g_line, g_col = reads.get(f, (1, 1))
            self.error(f"the guard of {fn.name} reads self.{f}, a property of {info.node.name}: a guard reads "
                       "fields the object stores (each store sends the new value), not values computed on "
                       "reading; read the field the property stores (or a field you keep up to date) instead",
                       **_in_file(line, col, g_line, g_col))
            found = True
        return found



def annotated_type(ann: ast.AST | None) -> type | None:
    """The type an annotation names, if it is one a guard knows (int, float, str, bool); also
    written as a string (`x: "float"`), as Python's forward references and `from __future__
    import annotations` have it (the runtime reads those strings too)."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return _TYPES.get(ann.value.strip())
    return _TYPES.get(ann.id) if isinstance(ann, ast.Name) else None


def _attributes(fn: ast.FunctionDef) -> dict[str, type] | None:
    """An event method's attributes and their types; None when an annotation is not a plain type."""
    out = {}
    for p in (fn.args.posonlyargs + fn.args.args)[1:]:
        t = annotated_type(p.annotation)
        if t is None:
            return None
        out[p.arg] = t
    return out


def _describe(attributes: dict[str, type]) -> str:
    return ", ".join(f"{k}: {t.__name__}" for k, t in attributes.items())


def _bound_by(stmt: ast.stmt) -> list[str]:
    """The names a statement of a class body binds there."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.AnnAssign) and stmt.value is not None):
        targets = [stmt.target]  # (an annotation without a value binds nothing)
    else:
        targets = []
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _own_nodes(cls: ast.ClassDef) -> list[ast.AST]:
    """The nodes of a class body and its methods, not of a class inside it (another self)."""
    out, todo = [], list(ast.iter_child_nodes(cls))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))
    return out


_NOT_METHODS = ("staticmethod", "classmethod", "property", "cached_property")


def properties(cls: ast.ClassDef) -> set[str]:
    """The names the class body binds to a property (`@property`, `@x.setter`, `x = property(...)`,
    `@functools.cached_property`)."""
    def is_property(e: ast.AST) -> bool:
        e = e.func if isinstance(e, ast.Call) else e
        name = ast.unparse(e)
        return name in ("property", "cached_property", "functools.cached_property") or (
            isinstance(e, ast.Attribute) and e.attr in ("setter", "getter", "deleter"))

    out = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(is_property, node.decorator_list)):
            out.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and is_property(node.value):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def own_yield(fn: ast.AST) -> ast.AST | None:
    """The first `yield` (or `yield from`) of a function's own body, not of a function, lambda or
    class inside it (in a comprehension Python refuses one itself)."""
    todo = list(ast.iter_child_nodes(fn))
    todo = [n for n in todo if n not in (*fn.decorator_list, fn.args, fn.returns)]  # type: ignore[attr-defined]
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo[:0] = ast.iter_child_nodes(node)
    return None


def _is_own_dict(node: ast.AST) -> bool:
    """`self.__dict__` or `vars(self)`."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return isinstance(node.value, ast.Name) and node.value.id == "self"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self")


def dict_stores(cls: ast.ClassDef) -> list[tuple[ast.AST, list[str] | None, str]]:
    """Stores into the object's own `__dict__` in the methods of a class (not of a class inside
    it): (node, the keys when the source spells them, the method's name). Not `setdefault`,
    which leaves a field that is there as it is."""
    out: list[tuple[ast.AST, list[str] | None, str]] = []

    def keys(call: ast.Call) -> list[str] | None:
        found = [k.arg for k in call.keywords]
        if None in found:  # **kwargs
            return None
        for a in call.args:
            if not (isinstance(a, ast.Dict) and all(isinstance(k, ast.Constant) for k in a.keys)):
                return None
            found += [k.value for k in a.keys]  # type: ignore[union-attr]
        return found  # type: ignore[return-value]

    def walk(node: ast.AST, method: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and method == "":
                walk(child, child.name)
                continue
            targets = (child.targets if isinstance(child, ast.Assign) else
                       [child.target] if isinstance(child, (ast.AugAssign, ast.AnnAssign)) else [])
            for t in targets:
                if isinstance(t, ast.Subscript) and _is_own_dict(t.value):
                    key = t.slice
                    out.append((t, [key.value] if isinstance(key, ast.Constant) else None, method))
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and child.func.attr in ("update", "__setitem__") and _is_own_dict(child.func.value)):
                spelled = (keys(child) if child.func.attr == "update" else
                           [child.args[0].value] if child.args and isinstance(child.args[0], ast.Constant) else None)
                out.append((child, spelled, method))
            walk(child, method)

    walk(cls, "")
    return out


def _in_file(line: int, col: int, g_line: int, g_col: int) -> dict[str, int]:
    """`error`'s line and col for a position inside a guard that starts at (line, col) of the
    file: the guard's first line continues the file's line, its other lines are the file's own."""
    return {"line": line + g_line - 1, "col": (col + g_col - 1) if g_line == 1 else g_col}


def _field_reads(guard: str) -> dict[str, tuple[int, int]]:
    """Where in the guard (line, column from 1) each field is first read: from the parsed guard,
    not its text, in which a comment or a string may spell `self.f` earlier."""
    first: dict[str, tuple[int, int]] = {}

    def walk(node: object) -> None:
        if isinstance(node, GuardNode):
            if isinstance(node, SelfField):
                first[node.name] = min(first.get(node.name, (node.line, node.column)), (node.line, node.column))
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name))
        elif isinstance(node, tuple):
            for item in node:
                walk(item)

    walk(parse_guard(guard))  # it parsed before (compile_guard): no GuardError here
    return first
