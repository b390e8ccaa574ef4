"""Per class: its event methods, guard fields, `local` fields and the subscription variables each
field feeds — found on Python's own `ast` of the lowered source (fast, with positions), and the
guards checked against the event schema and the class's fields. User mistakes become
CompileErrors positioned in the .epy file."""

from __future__ import annotations

import ast
import difflib
from typing import Iterator

from ..guards import GuardError, compile_guard
from ..runtime.model import EventType
from ..runtime.model._schema import RESERVED
from ._diagnostics import CompileError, Where, char_offset
from ._lower import Lowered
from ._members import MemberChecks, _field_reads, _in_file, annotated_type
from ._released import ReleasedFieldChecks

RUNTIME = "__eventpy__"


class ClassInfo:
    def __init__(self, node: ast.ClassDef) -> None:
        self.node = node
        self.events: list[ast.FunctionDef] = []
        self.decorated: list[str] = []  # event methods under a decorator
        self.locals: list[str] = []
        self.field_types: dict[str, type | None] = {}
        self.fields: set[str] = set()  # every self.X the class assigns or annotates
        # field -> where each assignment's type comes from: (type or None if unknown, "how")
        self.sources: dict[str, list[tuple[type | None, str]]] = {}
        self.guard_fields: set[str] = set()
        # field -> the set literals (node, members) or set annotations (node, member type) it gets
        self.set_sources: dict[str, list[tuple[ast.AST, list | type]]] = {}
        # field -> the subscription variables a store recomputes: "method: predicates"
        self.variables: dict[str, list[str]] = {}

    @property
    def rewritten(self) -> bool:
        return bool(self.events or self.locals)


def when_call(fn: ast.AST) -> ast.Call | None:
    ann = getattr(fn, "returns", None)
    if (isinstance(ann, ast.Call) and isinstance(ann.func, ast.Attribute)
            and isinstance(ann.func.value, ast.Name) and ann.func.value.id == RUNTIME
            and ann.func.attr == "when"):
        return ann
    return None


def classes_in_order(node: ast.AST) -> Iterator[ast.ClassDef]:
    """Class definitions in source (pre-)order, as libcst's transformer meets them."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            yield child
        yield from classes_in_order(child)


def _self_targets(t: ast.AST) -> list[str]:
    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
        return [t.attr]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [f for el in t.elts for f in _self_targets(el)]
    if isinstance(t, ast.Starred):
        return _self_targets(t.value)
    return []


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the module binds anywhere: defs, classes, imports, assignments, parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)  # `except E as release`, `case [release]`: names Store misses
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _star_import(tree: ast.Module) -> bool:
    """`from m import *` may bind any name (a helper called release, say)."""
    return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree))


class Analysis(ReleasedFieldChecks, MemberChecks):
    def __init__(self, lowered: Lowered, module_name: str, path: str, source: str) -> None:
        self.lowered = lowered
        self.module_name = module_name
        self.path = path
        self.source = source
        self.errors: list[CompileError] = []
        self.lines = lowered.text.split("\n")  # as Python numbers lines (not str.splitlines)
        self.classes: dict[ast.ClassDef, ClassInfo] = {}
        self.declared: set[int] = set()  # the lines of `local` declarations in a class body
        self.said_sets: set[ast.AST] = set()  # set assignments already reported

    def error(self, message: str, node: ast.AST | None = None, line: int = 0, col: int = 0) -> None:
        if node is not None:
            text = self.lines[node.lineno - 1] if node.lineno <= len(self.lines) else ""
            line = node.lineno
            col = self.lowered.original_column(line, char_offset(text, node.col_offset) + 1)
        self.errors.append(CompileError(message, line, col, self.path, self.source))

    def run(self, tree: ast.Module) -> None:
        self.module_names = _bound_names(tree)
        self._visit(tree, None)
        for info in self.classes.values():
            if info.rewritten:
                self._check_decorators(info)
                self._check_redefined_events(info)
            for fn in info.events:
                Where.line = fn.lineno
                self._check_generator(fn)
                self._check_guard(fn, info)
        for info in self.classes.values():
            self._check_dict_stores(info)
            self._check_overrides(info)
        for line, name in self.lowered.locals.items():
            if line not in self.declared:  # lowered to a plain annotated variable: say so
                self.error(f"`local` declares a field of a class: put `local {name}: ...` directly in the "
                           "class body", line=line, col=self.lowered.local_columns[line])
        self._check_called_constructs(tree)
        self._check_elapsed_outside_guards(tree)
        self._check_released_fields(tree)

    def field_type(self, info: ClassInfo, name: str) -> type | None:
        """A field's type, declared or inferred, if the compiler can tell it."""
        return info.field_types.get(name) or (_inferred(info, name) or (None, ""))[0]

    def _check_called_constructs(self, tree: ast.Module) -> None:
        """`release(self.f)` and `last(self.f)` written as calls: Python would read a call of an
        undefined name, a NameError only when the line runs. Unless the program defines the name."""
        if _star_import(tree):
            return
        bound = _bound_names(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("release", "last") and node.func.id not in bound
                    and node.args and not node.keywords):
                continue
            fields = [_self_targets(a) for a in node.args]
            if all(len(f) == 1 and isinstance(a, ast.Attribute) for f, a in zip(fields, node.args)):
                word = node.func.id
                if word == "last" and len(fields) > 1:
                    continue
                written = ", ".join(f"self.{f[0]}" for f in fields)
                kind = "a statement" if word == "release" else "an operator"
                self.error(f"`{word}` is {kind}, not a function: write `{word} {written}`", node)

    def _check_elapsed_outside_guards(self, tree: ast.Module) -> None:
        """`elapsed()` exists only in a guard (a guard is lowered to a string, not to code): anywhere
        else Python would call an undefined name, a NameError when the line runs (in an event
        method's body: each delivery logged as a failure). Unless the program defines the name."""
        if _star_import(tree) or "elapsed" in self.module_names:
            return
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "elapsed":
                self.error("elapsed() can be read only in a guard (`when ...`), where it is the seconds from "
                           "the object's subscription to each event's publication; outside a guard, "
                           "eventpy.elapsed(self) reads it for an event published now", node)

    def _visit(self, node: ast.AST, owner: ClassInfo | None, direct: bool = False,
               params: dict[str, type | None] | None = None) -> None:
        """`params`: the annotated types of the enclosing methods' parameters (None: unknown)."""
        for child in ast.iter_child_nodes(node):
            Where.line = getattr(child, "lineno", Where.line)
            if isinstance(child, ast.ClassDef):
                info = self.classes[child] = ClassInfo(child)
                self._visit(child, info, direct=True)
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and when_call(child):
                if owner is not None and direct:
                    owner.events.append(child)  # type: ignore[arg-type]
                    if child.decorator_list:  # the runtime checks that the decorator kept the `when`
                        owner.decorated.append(child.name)
                else:
                    self.error("`event def` must be a method, directly inside a class body", child)
            if owner is not None:
                if isinstance(child, ast.AnnAssign):
                    if direct and isinstance(child.target, ast.Name):
                        name = child.target.id
                        ann = child.annotation
                        owner.field_types[name] = _annotated(ann)
                        owner.fields.add(name)
                        _note_set(owner, name, child, ann, child.value)
                        if child.lineno in self.lowered.locals:
                            owner.locals.append(name)
                            self.declared.add(child.lineno)
                            if child.value is None:  # the guard reads the released copy from the start
                                self.error(f"local field {name} needs a default, e.g. `local {name}: "
                                           f"{ast.unparse(ann)} = ...`: a guard sees its released value "
                                           "from the start, before any `release`", child)
                    else:
                        ann = child.annotation
                        t = _annotated(ann)
                        for f in _self_targets(child.target):
                            owner.fields.add(f)
                            owner.sources.setdefault(f, []).append(
                                (t, f"annotated {ann.id} on line {child.lineno}" if t else ""))
                            _note_set(owner, f, child, ann, child.value)
                elif isinstance(child, ast.Assign):
                    value = child.value
                    for t in child.targets:
                        # `self.x = param`: the parameter's annotation types the field
                        src = (params.get(value.id) if params and isinstance(t, ast.Attribute)
                               and isinstance(value, ast.Name) else None)
                        how = (f"assigned from parameter {value.id}: {src.__name__} on line {child.lineno}"  # type: ignore[attr-defined]
                               if src else "")
                        for f in _self_targets(t):
                            owner.fields.add(f)
                            owner.sources.setdefault(f, []).append((src, how))
                            if isinstance(t, ast.Attribute):
                                _note_set(owner, f, child, None, value)
                        if direct and isinstance(t, ast.Name):  # a class-level default, as the runtime takes it
                            owner.fields.add(t.id)
                            owner.sources.setdefault(t.id, []).append((None, ""))
                            _note_set(owner, t.id, child, None, value)
                elif isinstance(child, ast.AugAssign):
                    for f in _self_targets(child.target):
                        owner.fields.add(f)
                        owner.sources.setdefault(f, []).append((None, ""))
            inner = params
            if owner is not None and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = child.args
                rebound = _rebound_names(child)  # `limit = float(limit)`: the annotation no longer says
                inner = {**(params or {}), **{
                    p.arg: None if p.arg in rebound else _annotated(p.annotation)
                    for p in a.posonlyargs + a.args + a.kwonlyargs}}
            self._visit(child, owner, direct=direct and isinstance(child, ast.ClassDef), params=inner)

    def _schema(self, fn: ast.FunctionDef, cls: str) -> EventType | None:
        args = fn.args
        params = args.posonlyargs + args.args
        if not params or params[0].arg != "self":
            self.error(f"event method {fn.name} needs `self` as its first parameter", fn)
            return None
        for star, p in (("*", args.vararg), ("**", args.kwarg)):
            if p is not None:
                self.error(f"event methods take named, annotated parameters only: remove {star}{p.arg}", p)
                return None
        if args.kwonlyargs:  # events are delivered by position: a keyword-only one never arrives
            p = args.kwonlyargs[0]
            self.error(f"event parameter {p.arg!r} is keyword-only; an event's attributes are plain "
                       "positional parameters: remove the '*' before it", p)
            return None
        if len(params) == 1:  # an event is its attributes: one with none could not be told apart
            self.error(f"event method {fn.name} has no parameters besides self; an event carries at least "
                       f"one attribute: add one, e.g. `event def {fn.name}(self, n: int)`", fn)
            return None
        schema = {}
        for p in params[1:]:
            if p.arg.startswith("_") or p.arg in RESERVED:  # the event type would refuse it
                self.error(f"event parameter {p.arg!r}: an event's attributes cannot start with '_' or be "
                           f"{', '.join(sorted(RESERVED))} (an event reads them as its own members); rename it", p)
                return None
            t = _annotated(p.annotation)
            if t is None:
                what = "has no annotation" if p.annotation is None else "has an unsupported type"
                self.error(f"event parameter {p.arg!r} {what}; annotate it with int, float, str or bool", p)
                return None
            schema[p.arg] = t
        return EventType(f"{cls}.{fn.name}", **schema)

    def _check_guard(self, fn: ast.FunctionDef, info: ClassInfo) -> None:
        etype = self._schema(fn, f"{self.module_name}.{info.node.name}")
        call = when_call(fn)
        if etype is None or call is None or not call.args:
            return
        values = [a.value for a in call.args if isinstance(a, ast.Constant)]
        text, line, col = (values + ["True", 0, 0])[:3] if values else ("True", 0, 0)
        declared = {f: info.field_types.get(f) for f in info.fields}
        inferred = {f: _inferred(info, f) for f in info.fields if declared[f] is None}
        inferred = {f: t for f, t in inferred.items() if t is not None}
        try:
            # the types only add checks: the plan's variables (all this reads of it) are the ones
            # the runtime's plan, compiled from the class's annotations alone, will have
            plan = compile_guard(text, etype, {**declared, **{f: t for f, (t, _) in inferred.items()}}, mode="epy")
        except GuardError as e:
            message = e.message
            if inferred:  # a mistake only the inferred types show: say where they come from
                try:
                    compile_guard(text, etype, declared, mode="epy")
                    message += "".join(f" (self.{f} is {how})" for f, (_, how) in sorted(inferred.items())
                                       if f"self.{f}" in message)
                except GuardError as plain:
                    e, message = plain, plain.message
            if "is not a parameter of the event method" in message and message.split("'")[1] == "None":
                message = ("None is not a value a guard compares with: an event's attributes always have one "
                           "(int, float, str or bool); keep a flag in a field for 'no value', e.g. self.has_limit")
            elif "is not a parameter of the event method" in message:
                name = message.split("'")[1]
                message = (f"name {name!r} is neither a parameter of {fn.name} nor a field; "
                           + (f"did you mean self.{name}?" if name in info.fields else
                              f"parameters: {', '.join(etype.attrs)}"))
                if name not in info.fields and name in self.module_names:  # a constant, an import
                    field = name.lower()
                    field = field if field not in {*etype.attrs, *info.fields} else f"{field}_value"
                    message += (f"; a guard reads no other names (a new value of {name} would reach no "
                                f"broker): keep it in a field, `self.{field} = {name}` in __init__, and "
                                f"read self.{field} in the guard")
            self.error(message, **_in_file(line, col, e.line, e.column))
            return
        if self._check_properties(fn, info, plan.param_names, text, line, col):
            return
        self._check_fields_assigned(fn, info, plan.param_names, text, line, col)
        self._check_set_members(fn, info, plan)
        info.guard_fields |= plan.param_names
        for var in plan.vars:
            if var.kind == "constraint" and var.text:
                for f in var.deps:
                    info.variables.setdefault(f, []).append(f"{fn.name}: {var.text}")

    def _check_set_members(self, fn: ast.FunctionDef, info: ClassInfo, plan) -> None:
        """The members a set-valued field is given in the class (a literal, or `set[T]`) against the
        attribute the guard tests it with: a member of another type could never match (the runtime
        refuses it when the object is made; here it is said at compile time, at the assignment)."""
        schema = plan.etype.schema
        for var in plan.vars:
            if var.kind != "constraint" or var.attr is None:
                continue
            t = schema[var.attr]
            for f in sorted(var.deps):
                for node, members in info.set_sources.get(f, ()):
                    wrong = _wrong_member(members, t)
                    if wrong is not None and node not in self.said_sets:  # once per assignment
                        self.said_sets.add(node)
                        self.error(f"self.{f} gets {wrong}, which can never equal attribute {var.attr!r} "
                                   f"({t.__name__}) that the guard of {fn.name} tests it against", node)

    def _check_fields_assigned(self, fn: ast.FunctionDef, info: ClassInfo, fields: set[str],
                               text: str, line: int, col: int) -> None:
        """A field the guard reads must be set when the constructor returns (the subscription
        needs its value). When the class assigns it nowhere and nothing else could (no base
        class, metaclass or decorator, no setattr/vars/__dict__ in the class), say so here instead
        of when the first object is made."""
        missing = sorted(f for f in fields if f not in info.fields)
        node = info.node
        if not missing or node.bases or node.keywords or node.decorator_list or _writes_fields_dynamically(node):
            return
        reads = _field_reads(text)
        for f in missing:
            g_line, g_col = reads.get(f, (1, 1))
            close = difflib.get_close_matches(f, sorted(info.fields), n=1)
            self.error(f"the guard of {fn.name} reads self.{f}, which no method of {info.node.name} assigns "
                       "(it must be set when the constructor returns)"
                       + (f"; did you mean self.{close[0]}?" if close else ""),
                       **_in_file(line, col, g_line, g_col))


_SET_CALLS = ("set", "frozenset")


def _note_set(owner: ClassInfo, f: str, node: ast.AST, ann: ast.AST | None, value: ast.AST | None) -> None:
    """Record the members a field is given, if the assignment spells them out."""
    if (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id in _SET_CALLS
            and _annotated(ann.slice) is not None):
        owner.set_sources.setdefault(f, []).append((node, _annotated(ann.slice)))  # type: ignore[arg-type]
    elems = None
    if isinstance(value, ast.Set):
        elems = value.elts
    elif (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _SET_CALLS
          and len(value.args) == 1 and not value.keywords
          and isinstance(value.args[0], (ast.Set, ast.List, ast.Tuple))):
        elems = value.args[0].elts
    if elems and all(isinstance(e, ast.Constant) for e in elems):
        owner.set_sources.setdefault(f, []).append((node, [e.value for e in elems]))  # type: ignore[union-attr]


def _wrong_member(members: list | type, t: type) -> str | None:
    """How a member (or the member type) that could never equal an attribute of type t is shown."""
    numeric = (int, float)
    if isinstance(members, type):
        ok = members is t if t in (str, bool) else members in numeric
        return None if ok else f"members of type {members.__name__}"
    for x in members:
        ok = isinstance(x, t) if t in (str, bool) else isinstance(x, numeric) and not isinstance(x, bool)
        if not ok:
            return f"member {x!r} ({type(x).__name__})"
    return None


def _annotated(ann: ast.AST | None) -> type | None:
    """The type an annotation names, if it is one a guard knows (int, float, str, bool)."""
    return annotated_type(ann)


def _rebound_names(fn: ast.AST) -> set[str]:
    """Names a function (or anything inside it) stores to or deletes."""
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _inferred(info: ClassInfo, field: str) -> tuple[type, str] | None:
    """A field's type when every assignment in the class gives one (a parameter's or an
    annotation's), with where the first comes from; int and float together are a float."""
    sources = info.sources.get(field)
    if not sources or any(t is None for t, _ in sources):
        return None
    types = {t for t, _ in sources}
    if types <= {int, float}:
        return (float if float in types else int), sources[0][1]
    if len(types) == 1:
        return types.pop(), sources[0][1]
    return None


def _writes_fields_dynamically(cls: ast.ClassDef) -> bool:
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "vars"):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return True
    return False
