"""Rewrite the classes that have event methods (libcst, so every other byte stays as it was).

* the class line gains the base `__eventpy__.EventObject` (and `locals=(...)` for `local` fields,
  `events=(...)` for event methods under a decorator, which the runtime checks kept their `when`);
* every statement line inside the class that assigns a guard field of `self` is wrapped, on the
  same line, in `with __eventpy__.assigning(self, "field"):` — Fig. 13's lock, store, UPD;
* the runtime is imported on an existing line (no line moves).
Guards are checked here, with the event schema and the class's fields, so that mistakes are
reported at compile time with the position in the .epy file.
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Iterator

import libcst as cst

from .._names import identifier, mangle
from ._diagnostics import CompileError, CompileErrors, Where
from ._analysis import Analysis, ClassInfo, classes_in_order
from ._imports import MARK, place_import
from ._lines import lines as split_lines
from ._lower import Lowered

RUNTIME = "__eventpy__"


def _is_self_attr(node: cst.BaseExpression, me: str) -> str | None:
    # libcst keeps names as written; Python, and the guard's fields, have them NFKC-normalised
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and identifier(node.value.value) == me:
        return identifier(node.attr.value)
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


class _Self:
    """The name a function calls the object of an event class by, and that class (None: a plain
    one). A method's first parameter names an object of the class whose body holds the method (a
    plain class nested in an event class has objects of its own); a function nested in a method
    sees the method's `self`, unless a parameter of its own takes the name."""

    __slots__ = ("name", "info")

    def __init__(self, name: str, info: ClassInfo | None) -> None:
        self.name, self.info = name, info

    @staticmethod
    def of(node: cst.FunctionDef, in_class: bool, cls: ClassInfo | None, outer: _Self | None) -> _Self | None:
        p = node.params
        if in_class:
            decorators = {d.decorator.value for d in node.decorators if isinstance(d.decorator, cst.Name)}
            first = (list(p.posonly_params) + list(p.params))[:1]
            # a classmethod's first parameter is the class, a staticmethod has none
            if not first or decorators & {"classmethod", "staticmethod"}:
                return None
            return _Self(identifier(first[0].name.value), cls)
        names = [identifier(q.name.value) for q in (*p.posonly_params, *p.params, *p.kwonly_params)]
        names += [identifier(q.name.value) for q in (p.star_arg, p.star_kwarg) if isinstance(q, cst.Param)]
        return None if outer is None or outer.name in names else outer


class _Rewrite(cst.CSTTransformer):
    def __init__(self, infos: list[ClassInfo], bind_in_header: bool) -> None:
        self.infos = infos  # the snippet's classes in source order, as ast found them
        self.next = 0
        self.bind_in_header = bind_in_header
        self.names: list[str] = []  # the enclosing classes' names: Python mangles by the innermost
        # the enclosing classes ("class", their info or None when not rewritten) and functions
        # ("def", the object their `self` names: see _Self), innermost last
        self.scopes: list[tuple[str, ClassInfo | _Self | None]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = self.infos[self.next]
        self.next += 1
        self.scopes.append(("class", info if info.rewritten else None))
        self.names.append(identifier(node.name.value))

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        info = self.scopes.pop()[1]
        self.names.pop()
        if not isinstance(info, ClassInfo):
            return updated
        runtime: cst.BaseExpression = cst.Name(RUNTIME)
        if self.bind_in_header:
            runtime = _binding(top_level=not self.scopes)
        base = cst.Arg(cst.Attribute(runtime, cst.Name("EventObject")))
        args = list(updated.bases) + [base]
        keywords = list(updated.keywords)
        # EventObject's metaclass and a base's or the program's own (an ABC's) would conflict:
        # __eventpy__.metaclass(...) builds the class with one derived from both (runtime/_lang_class)
        # (the bases ran first: the header's binding of the runtime, if any, is done)
        picker = cst.Attribute(cst.Name(RUNTIME), cst.Name("metaclass"))
        declared = []  # `locals=(...)`, `events=(...)`
        for key, names in (("locals", info.locals), ("events", info.decorated)):
            if names:
                # the names the class body's `__f: T = v` and `def __m` stored (mangled by it)
                items = [cst.Element(cst.SimpleString(repr(mangle(info.node.name, n))), comma=cst.Comma())
                         for n in names]
                declared.append(cst.Arg(cst.Tuple(items), keyword=cst.Name(key), equal=_TIGHT))
        own = next((i for i, k in enumerate(keywords) if k.keyword is not None and k.keyword.value == "metaclass"), None)
        # with a base of the program's, the declarations go to the metaclass picker: as class
        # keywords they would reach that base's own __init_subclass__, which may refuse or drop them
        if own is not None:
            keywords[own] = keywords[own].with_changes(value=cst.Call(picker, _commas([cst.Arg(keywords[own].value)]
                                                                                       + declared)))
        elif updated.bases:
            keywords.append(cst.Arg(cst.Call(picker, _commas(declared)) if declared else cst.Call(picker, []),
                                    keyword=cst.Name("metaclass"), equal=_TIGHT))
        else:  # EventObject is the only base: its __init_subclass__ takes them
            keywords.extend(declared)
        args = _commas(args + keywords)
        return updated.with_changes(bases=args[:len(args) - len(keywords)], keywords=args[len(args) - len(keywords):],
                                    lpar=cst.LeftParen(), rpar=cst.RightParen())

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        kind, cls = self.scopes[-1] if self.scopes else ("", None)
        in_class = kind == "class"
        self.scopes.append(("def", _Self.of(node, in_class, cls if in_class else None, self._self())))

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        return updated

    def _self(self) -> _Self | None:
        """What `self` is where the visit is: a class body inside a method sees the method's."""
        return next((s for kind, s in reversed(self.scopes) if kind == "def"), None)  # type: ignore[return-value]

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return False  # the line is wrapped as a whole: its expressions need no visit

    # nothing to rewrite in parameters, annotations, decorators or class bases: skip them
    def visit_Parameters(self, node: cst.Parameters) -> bool:
        return False

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        return False

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        return False

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> cst.BaseStatement:
        me = self._self()
        if me is None or me.info is None:
            return updated
        info = me.info
        stored: list[str] = []
        for stmt in updated.body:
            if isinstance(stmt, cst.Assign):
                for t in stmt.targets:
                    stored += _targets(t.target, me.name)
            elif isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
                stored += _targets(stmt.target, me.name)
        # the statement stores `self.__f` as Python mangles it here, by the innermost class (in a
        # class nested in the method, another attribute than the guard's `__f`)
        here = self.names[-1] if self.names else None
        guarded = {mangle(info.node.name, f): f for f in info.guard_fields if f not in info.locals}
        stored_as = sorted({mangle(here, f) for f in stored} & set(guarded))
        fields = [guarded[f] for f in stored_as]
        if not fields:
            return updated
        call = cst.Call(cst.Attribute(cst.Name(RUNTIME), cst.Name("assigning")),
                        _commas([cst.Arg(cst.Name(me.name))] + [cst.Arg(cst.SimpleString(f'"{f}"')) for f in stored_as]))
        trailing = updated.trailing_whitespace
        shown = [v for f in fields for v in info.variables.get(f, ())]
        if shown and trailing.comment is None:
            # the generated variables (000 Fig. 14) this store recomputes and sends when they change
            trailing = trailing.with_changes(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(
                "# UPD " + "; ".join(dict.fromkeys(shown))))
        body = cst.SimpleStatementSuite(body=updated.body, trailing_whitespace=trailing)
        return cst.With(items=[cst.WithItem(call)], body=body, leading_lines=updated.leading_lines)


def _line_starts(snippet: str) -> Iterator[tuple[tokenize.TokenInfo, tokenize.TokenInfo | None]]:
    """Each token that starts a line of code or of comment (after a line end, or first), with
    the token before it (INDENT and DEDENT aside)."""
    prev: tokenize.TokenInfo | None = None
    for tok in tokenize.generate_tokens(io.StringIO(snippet).readline):
        if tok.type in (tokenize.INDENT, tokenize.DEDENT):
            continue
        if prev is None or prev.type in (tokenize.NEWLINE, tokenize.NL):
            yield tok, prev
        prev = tok


def _leading_continuations(snippet: str) -> str:
    """A line holding nothing but a backslash where a statement starts: Python takes the
    statement's indentation from it, and libcst drops it, a line with it (every later line moved
    up), or the indentation, or cannot parse it after a `def ...:`. Each such line is left blank
    and the statement's indentation is written where its text starts: the same statement, on the
    same line."""
    if "\\\n" not in snippet:
        return snippet
    lines = snippet.split("\n")
    for tok, prev in _line_starts(snippet):
        gap = range(prev.end[0] + 1 if prev else 1, tok.start[0])  # lines without a token
        if gap and all(lines[g - 1].strip() == "\\" for g in gap):
            # CPython takes the indentation of the first of them that has one; a `\\` at
            # column 0 lets the next line's count (after only those: the statement's own)
            row = tok.start[0]
            spaces = [lines[g - 1][:len(lines[g - 1]) - len(lines[g - 1].lstrip())] for g in gap]
            indent = next((w for w in spaces if w), lines[row - 1][:tok.start[1]])
            for g in gap:
                lines[g - 1] = ""
            lines[row - 1] = indent + lines[row - 1][tok.start[1]:]
    return "\n".join(lines)


def _indentation_as_cpython_counts(snippet: str) -> str:
    """Indentation as CPython counts it, in spaces: a tab to the next multiple of 8, and a form
    feed starts the count again (what precedes it does not indent). libcst counts a mix of
    spaces and tabs otherwise, and a form feed as a column, and refused indentation CPython
    accepts ("no matching outer block for dedent"); only a snippet libcst refused is given to
    it so."""
    lines = snippet.split("\n")
    for tok, _ in _line_starts(snippet):
        row, col = tok.start
        indent = lines[row - 1][:col]
        if "\t" in indent or "\x0c" in indent:
            indent = indent[indent.rfind("\x0c") + 1:]
            lines[row - 1] = indent.expandtabs(8) + lines[row - 1][col:]
    return "\n".join(lines)


def _syntax_position(e: SyntaxError, lowered: Lowered, source: str) -> tuple[int, int]:
    """Where in the .epy file Python's syntax error is (in the lowered text: the same lines)."""
    lines = lowered.text.split("\n")
    line = min(max(1, e.lineno or 1), len(lines))
    text = lines[line - 1]
    offset = _fstring_offset(e, text)
    if offset < 1:  # "expected an indented block" names the line, at offset 0: its first character
        offset = len(text) - len(text.lstrip()) + 1
    column = lowered.original_column(line, min(offset, len(text) + 1))
    # inside a guard's lines (a string literal in the lowered text) no column maps exactly
    return line, min(column, len(source.split("\n")[line - 1]) + 1)


def _fstring_offset(e: SyntaxError, line: str) -> int:
    """The error's column in its line. CPython 3.11 parses a replacement field of an f-string as
    its own text in parentheses, and an error there has its offset in that text: `(last self.)`,
    offset 2 (it showed as column 2 of the file's line). The field is found in the line."""
    text = (e.text or "").rstrip("\n")
    offset = e.offset or 0
    if not (e.msg.startswith("f-string") and text.startswith("(") and line):
        return offset
    inner = text[1:]
    for probe in (inner, inner[:-1]):
        at = line.find(probe) if probe else -1
        if at >= 0:
            return min(max(1, at + offset - 1), len(line) + 1)
    return line.find("{") + 1 or 1  # not found (a field over several lines): the first field


def _binding(top_level: bool) -> cst.BaseExpression:
    """No line before the first statement can take the import, so every rewritten class binds
    the runtime in its header (bases run before the body, and any generated code runs after some
    such header). Only at module level does `:=` bind the module's global: a class nested in
    a class or function sets the global explicitly, for the code outside that scope."""
    load = f'__import__("eventpy.runtime.lang", fromlist=["lang"]).{MARK}'
    if top_level:
        return cst.parse_expression(f"({RUNTIME} := {load})")
    return cst.parse_expression(f'globals().setdefault("{RUNTIME}", {load})')


_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    out = []
    for k, a in enumerate(args):
        last = k == len(args) - 1
        out.append(a.with_changes(comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))))
    return out


def rewrite(lowered: Lowered, module_name: str, path: str, source: str) -> str:
    """Python's `ast` checks the syntax, finds the classes and checks the guards; only the
    top-level statements holding a construct go through libcst (parsed one by one, as snippets);
    every other line is copied as it is."""
    # not the .epy path: CPython would re-read that file's line to turn the error's offset in the
    # lowered line into a column, and measure it against a line that is not the one it parsed
    name = f"<{path}>"
    try:
        tree = ast.parse(lowered.text, name)
        compile(tree, name, "exec", dont_inherit=True)
    except SyntaxError as e:
        line, column = _syntax_position(e, lowered, source)
        raise CompileError(e.msg, line, column, path, source) from None
    if not lowered.changed:
        return lowered.text
    analysis = Analysis(lowered, module_name, path, source)
    analysis.run(tree)
    if analysis.errors:
        raise analysis.errors[0] if len(analysis.errors) == 1 else _many(analysis.errors)
    marked = ({e.line for e in lowered.events} | set(lowered.locals)
              | {r[0] for r in lowered.releases} | {r[0] for r in lowered.lasts})
    lines = split_lines(lowered.text, keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    snippets = []
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        last = stmt.end_lineno or stmt.lineno
        if any(first <= ln <= last for ln in marked):
            infos = [analysis.classes[c] for c in ([stmt] if isinstance(stmt, ast.ClassDef) else [])]
            infos += [analysis.classes[c] for c in classes_in_order(stmt)]
            snippets.append((first, last, infos))
    bind_in_header = not place_import(lines, tree)
    for first, last, infos in reversed(snippets):
        Where.line = first
        snippet = _leading_continuations("".join(lines[first - 1:last]))
        try:
            module = cst.parse_module(snippet)
        except cst.ParserSyntaxError:
            module = cst.parse_module(_indentation_as_cpython_counts(snippet))
        code = module.visit(_Rewrite(infos, bind_in_header=bind_in_header)).code
        if snippet.endswith("\n") and not code.endswith("\n"):
            # libcst takes a text ending in "\\\n" for one without a final newline even when the
            # backslash ends a comment (its PR #119), and drops it: the next line joined the comment
            code += "\n"
        lines[first - 1:last] = [code]
    text = "".join(lines)
    return text if lowered.text.endswith("\n") or not text.endswith("\n") else text[:-1]


def _many(errors: list[CompileError]) -> Exception:
    return CompileErrors(errors)
