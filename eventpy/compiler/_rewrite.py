"""Rewrite the classes that have event methods (libcst, so every other byte stays as it was).

* the class line gains the base `__eventpy__.EventObject` (and `locals=(...)` for `local` fields);
* every statement line inside the class that assigns a guard field of `self` is wrapped, on the
  same line, in `with __eventpy__.assigning(self, "field"):` — Fig. 13's lock, store, UPD;
* the runtime is imported on an existing line (no line moves).
Guards are checked here, with the event schema and the class's fields, so that mistakes are
reported at compile time with the position in the .epy file.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..guards import GuardError, compile_guard
from ..runtime.model import EventType
from ._diagnostics import CompileError
from ._imports import place_import
from ._lower import Lowered

RUNTIME = "__eventpy__"
IMPORT = "import eventpy.runtime.lang as __eventpy__"
_TYPES = {"int": int, "float": float, "str": str, "bool": bool}


def _when_call(fn: cst.FunctionDef) -> cst.Call | None:
    ann = fn.returns.annotation if fn.returns is not None else None
    if (isinstance(ann, cst.Call) and isinstance(ann.func, cst.Attribute)
            and isinstance(ann.func.value, cst.Name) and ann.func.value.value == RUNTIME
            and ann.func.attr.value == "when"):
        return ann
    return None


def _is_self_attr(node: cst.BaseExpression, me: str) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == me:
        return node.attr.value
    return None


def _targets(node: cst.BaseExpression, me: str) -> list[str]:
    """Fields of `me` stored by an assignment target (plain, tuple, list, starred)."""
    name = _is_self_attr(node, me)
    if name is not None:
        return [name]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [f for el in node.elements for f in _targets(el.value, me)]
    if isinstance(node, cst.StarredElement):
        return _targets(node.value, me)
    return []


class _ClassInfo:
    def __init__(self, node: cst.ClassDef) -> None:
        self.node = node
        self.events: list[cst.FunctionDef] = []
        self.locals: list[str] = []
        self.field_types: dict[str, type | None] = {}
        self.fields: set[str] = set()  # every self.X the class assigns or annotates
        self.guard_fields: set[str] = set()
        # field -> the subscription variables a store recomputes: "method: predicates"
        self.variables: dict[str, list[str]] = {}


class _Collect(cst.CSTVisitor):
    """Find event classes, their event methods, fields and locals; event defs outside classes."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, lowered: Lowered, errors: list[CompileError], path: str, source: str,
                 offset: int = 0) -> None:
        self.lowered = lowered
        self.offset = offset  # lines before the snippet being visited
        self.errors = errors
        self.path = path
        self.source = source
        self.stack: list[cst.CSTNode] = []
        self.classes: dict[cst.ClassDef, _ClassInfo] = {}

    def pos(self, node: cst.CSTNode) -> tuple[int, int]:
        p = self.get_metadata(PositionProvider, node).start
        line = p.line + self.offset
        return line, self.lowered.original_column(line, p.column + 1)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes[node] = _ClassInfo(node)
        self.stack.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        parent = self.stack[-1] if self.stack else None
        if _when_call(node) is not None:
            if isinstance(parent, cst.ClassDef):
                self.classes[parent].events.append(node)
            else:
                line, col = self.pos(node)
                self.errors.append(CompileError("`event def` must be a method, directly inside a "
                                                "class body", line, col, self.path, self.source))
        self.stack.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()

    def _owner(self) -> _ClassInfo | None:
        for node in reversed(self.stack):
            if isinstance(node, cst.ClassDef):
                return self.classes[node]
        return None

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        owner = self._owner()
        if owner is None:
            return
        if self.stack and self.stack[-1] is owner.node and isinstance(node.target, cst.Name):
            name = node.target.value
            ann = node.annotation.annotation
            owner.field_types[name] = _TYPES.get(ann.value) if isinstance(ann, cst.Name) else None
            owner.fields.add(name)
            if self.pos(node)[0] in self.lowered.locals:
                owner.locals.append(name)
        elif isinstance(node.target, cst.Attribute):
            attr = _is_self_attr(node.target, "self")
            if attr:
                owner.fields.add(attr)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        owner = self._owner()
        if owner is not None:
            owner.fields.update(_targets(node.target, "self"))


def _schema(fn: cst.FunctionDef, cls: str, errors: list, pos, path: str, source: str) -> EventType | None:
    params = fn.params.params
    if not params or params[0].name.value != "self":
        line, col = pos(fn)
        errors.append(CompileError(f"event method {fn.name.value} needs `self` as its first "
                                   "parameter", line, col, path, source))
        return None
    schema = {}
    for p in list(params[1:]) + list(fn.params.kwonly_params):
        ann = p.annotation.annotation if p.annotation is not None else None
        t = _TYPES.get(ann.value) if isinstance(ann, cst.Name) else None
        if t is None:
            line, col = pos(p)
            what = "has no annotation" if ann is None else "has an unsupported type"
            errors.append(CompileError(f"event parameter {p.name.value!r} {what}; annotate it with "
                                       "int, float, str or bool", line, col, path, source))
            return None
        schema[p.name.value] = t
    if fn.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or fn.params.star_kwarg is not None:
        line, col = pos(fn)
        errors.append(CompileError("event methods take named, annotated parameters only (no *args or "
                                   "**kwargs)", line, col, path, source))
        return None
    return EventType(f"{cls}.{fn.name.value}", **schema)


class _Rewrite(cst.CSTTransformer):
    def __init__(self, classes: dict[cst.ClassDef, _ClassInfo], bind_in_header: bool) -> None:
        self.classes = {id(k): v for k, v in classes.items() if v.events or v.locals}
        self.bind_in_header = bind_in_header
        self.stack: list[_ClassInfo | None] = []
        self.me: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.append(self.classes.get(id(node)))

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        info = self.stack.pop()
        if info is None:
            return updated
        runtime: cst.BaseExpression = cst.Name(RUNTIME)
        if self.bind_in_header:
            # nothing precedes this class: bind the runtime name here (bases run before the body)
            runtime = cst.parse_expression(f'({RUNTIME} := __import__("eventpy.runtime.lang", fromlist=["lang"]))')
            self.bind_in_header = False
        base = cst.Arg(cst.Attribute(runtime, cst.Name("EventObject")))
        args = list(updated.bases) + [base]
        keywords = list(updated.keywords)
        if info.locals:
            names = [cst.Element(cst.SimpleString(repr(n)), comma=cst.Comma()) for n in info.locals]
            keywords.append(cst.Arg(cst.Tuple(names), keyword=cst.Name("locals"), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))))
        args = _commas(args + keywords)
        return updated.with_changes(bases=args[:len(args) - len(keywords)], keywords=args[len(args) - len(keywords):],
                                    lpar=cst.LeftParen(), rpar=cst.RightParen())

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = node.params.params
        self.me.append(params[0].name.value if params else "")

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.me.pop()
        return updated

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> cst.BaseStatement:
        info = next((c for c in reversed(self.stack) if c is not None), None)
        if info is None or not self.me or not self.me[-1]:
            return updated
        me = self.me[-1]
        stored: list[str] = []
        for stmt in updated.body:
            if isinstance(stmt, cst.Assign):
                for t in stmt.targets:
                    stored += _targets(t.target, me)
            elif isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
                stored += _targets(stmt.target, me)
        fields = sorted({f for f in stored if f in info.guard_fields and f not in info.locals})
        if not fields:
            return updated
        call = cst.Call(cst.Attribute(cst.Name(RUNTIME), cst.Name("assigning")),
                        _commas([cst.Arg(cst.Name(me))] + [cst.Arg(cst.SimpleString(f'"{f}"')) for f in fields]))
        trailing = updated.trailing_whitespace
        shown = [v for f in fields for v in info.variables.get(f, ())]
        if shown and trailing.comment is None:
            # the generated variables (000 Fig. 14) this store recomputes and sends when they change
            trailing = trailing.with_changes(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(
                "# UPD " + "; ".join(dict.fromkeys(shown))))
        body = cst.SimpleStatementSuite(body=updated.body, trailing_whitespace=trailing)
        return cst.With(items=[cst.WithItem(call)], body=body, leading_lines=updated.leading_lines)


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    out = []
    for k, a in enumerate(args):
        last = k == len(args) - 1
        out.append(a.with_changes(comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))))
    return out


def rewrite(lowered: Lowered, module_name: str, path: str, source: str) -> str:
    """Only the top-level statements that hold a construct go through libcst (parsed one by one,
    as snippets); every other line is copied as it is, and Python's own parser checks the rest."""
    try:
        tree = ast.parse(lowered.text, path)
        compile(tree, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        line = e.lineno or 0
        raise CompileError(e.msg, line, lowered.original_column(line, e.offset or 0), path, source) from None
    if not lowered.changed:
        return lowered.text
    marked = ({e.line for e in lowered.events} | set(lowered.locals)
              | {r[0] for r in lowered.releases} | {r[0] for r in lowered.lasts})
    lines = lowered.text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    snippets = []
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        last = stmt.end_lineno or stmt.lineno
        if any(first <= ln <= last for ln in marked):
            snippets.append((first, last, cst.parse_module("".join(lines[first - 1:last]))))
    errors: list[CompileError] = []
    classes: dict[cst.ClassDef, _ClassInfo] = {}
    wrappers = []
    for first, last, module in snippets:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # the module is ours: no copy
        collect = _Collect(lowered, errors, path, source, offset=first - 1)
        wrapper.visit(collect)
        positions = wrapper.resolve(PositionProvider)

        def pos(node: cst.CSTNode, positions=positions, offset=first - 1) -> tuple[int, int]:
            p = positions[node].start
            return p.line + offset, lowered.original_column(p.line + offset, p.column + 1)

        for info in collect.classes.values():
            for fn in info.events:
                _check_guard(fn, info, module_name, errors, pos, path, source)
        classes.update(collect.classes)
        wrappers.append((first, last, wrapper.module, collect.classes))
    locals_all = {n for i in classes.values() for n in i.locals}
    for line, col, name in lowered.releases + lowered.lasts:
        if name not in locals_all:
            word = "release" if (line, col, name) in lowered.releases else "last"
            errors.append(CompileError(f"`{word} self.{name}`: {name} is not declared `local` in the "
                                       "class", line, col + 1, path, source))
    if errors:
        raise errors[0] if len(errors) == 1 else _many(errors)
    bind_in_header = not place_import(lines, tree)
    for first, last, module, found in reversed(wrappers):
        first_event_class = bind_in_header and (first, last) == wrappers[0][:2]
        new = module.visit(_Rewrite(found, bind_in_header=first_event_class))
        lines[first - 1:last] = [new.code]
    text = "".join(lines)
    return text if lowered.text.endswith("\n") or not text.endswith("\n") else text[:-1]


def _many(errors: list[CompileError]) -> Exception:
    from ._diagnostics import CompileErrors

    return CompileErrors(errors)


def _check_guard(fn: cst.FunctionDef, info: _ClassInfo, module_name: str, errors: list, pos,
                 path: str, source: str) -> None:
    etype = _schema(fn, f"{module_name}.{info.node.name.value}", errors, pos, path, source)
    call = _when_call(fn)
    if etype is None or call is None or not call.args:
        return
    text = "".join(a.value.evaluated_value for a in [call.args[0]]
                   if isinstance(a.value, (cst.SimpleString, cst.ConcatenatedString)))
    line = int(call.args[1].value.value) if len(call.args) > 1 else 0
    col = int(call.args[2].value.value) if len(call.args) > 2 else 0
    types = {f: info.field_types.get(f) for f in info.fields}
    try:
        plan = compile_guard(text, etype, _Fields(types), mode="epy")
    except GuardError as e:
        message = e.message
        if "is not a parameter of the event method" in message:
            name = message.split("'")[1]
            message = (f"name {name!r} is neither a parameter of {fn.name.value} nor a field; "
                       + (f"did you mean self.{name}?" if name in info.fields else
                          f"parameters: {', '.join(etype.attrs)}"))
        errors.append(CompileError(message, line + e.line - 1, (col + e.column - 1) if e.line == 1 else e.column,
                                   path, source))
        return
    info.guard_fields |= plan.param_names
    for var in plan.vars:
        if var.kind == "constraint" and var.text:
            for f in var.deps:
                info.variables.setdefault(f, []).append(f"{fn.name.value}: {var.text}")


class _Fields(dict):
    """Guard fields: any self.X is allowed (it may be set elsewhere); known types are checked."""

    def __contains__(self, key: object) -> bool:
        return True

    def get(self, key, default=None):
        return dict.get(self, key, default)
