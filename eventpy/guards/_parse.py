"""Guard text -> AST, with lark (LALR) and the grammar in grammar/eventpy.lark."""

from __future__ import annotations

import ast as pyast
import re
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .._names import identifier
from . import _ast as A
from ._errors import GuardError, source_lines
from ._exprs import FUNCTIONS


@lru_cache(maxsize=1)
def grammar_text() -> str:
    return resources.files("eventpy.grammar").joinpath("eventpy.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(grammar_text(), start="guard", parser="lalr", propagate_positions=True,
                maybe_placeholders=True)


def _pos(meta) -> dict:
    return {"line": getattr(meta, "line", 0), "column": getattr(meta, "column", 0)}


@v_args(meta=True)
class _ToAst(Transformer):
    """One method per grammar rule (DESIGN §4: a rule and its method share a name)."""

    def or_test(self, meta, items):
        return A.Or(tuple(items), **_pos(meta))

    def and_test(self, meta, items):
        return A.And(tuple(items), **_pos(meta))

    def not_test(self, meta, items):
        return A.Not(items[0], **_pos(meta))

    def comp_op(self, meta, items):
        return " ".join(str(t) for t in items) if items else "in"

    def comparison(self, meta, items):
        # a < b <= c  ==  a < b and b <= c (Python's chained comparison)
        operands = items[0::2]
        ops = items[1::2]
        parts = [
            A.Compare(op, left, right, line=left.line, column=left.column)
            for op, left, right in zip(ops, operands, operands[1:])
        ]
        return parts[0] if len(parts) == 1 else A.And(tuple(parts), **_pos(meta))

    def binop(self, meta, items):
        left, op, right = items
        return A.BinOp(str(op), left, right, **_pos(meta))

    def neg(self, meta, items):
        operand = items[0]
        if isinstance(operand, A.Const) and type(operand.value) in (int, float):
            return A.Const(-operand.value, **_pos(meta))  # a negative literal is a constant
        return A.Neg(operand, **_pos(meta))

    def number(self, meta, items):
        return A.Const(_number_value(str(items[0])), **_pos(meta))

    def string(self, meta, items):
        return A.Const(pyast.literal_eval(str(items[0])), **_pos(meta))

    def true(self, meta, items):
        return A.Const(True, **_pos(meta))

    def false(self, meta, items):
        return A.Const(False, **_pos(meta))

    def name(self, meta, items):
        return A.Name(identifier(str(items[0])), **_pos(meta))

    def self_field(self, meta, items):
        return A.SelfField(identifier(str(items[0])), **_pos(meta))

    def dotted_name(self, meta, items):
        return ".".join(identifier(str(t)) for t in items)

    def call(self, meta, items):
        func, *args = items
        return A.Call(func, tuple(a for a in args if a is not None), **_pos(meta))

    def set_literal(self, meta, items):
        return A.SetLit(tuple(items), **_pos(meta))

    def const_set(self, meta, items):
        return A.SetLit(_const_members(items[0]), **_pos(meta))


def _number_value(text: str) -> int | float:
    text = text.replace("_", "")
    if text[:2].lower() in ("0x", "0o", "0b"):  # Python's hex, octal and binary integers
        return int(text, 0)
    return float(text) if any(c in text for c in ".eE") else int(text)


# One member of a CONST_SET token (the grammar's CS_MEMBER; the token matched it, so the members
# are found in order with nothing but blanks and commas between them)
_MEMBER = re.compile(r"""'(?:[^'\\\n]|\\(?:.|\n))*'|"(?:[^"\\\n]|\\(?:.|\n))*"|True|False|-?[^\s,}]+""")


def _const_members(token: Token) -> tuple[A.Const, ...]:
    """The members of a set literal lexed whole (CONST_SET), each a Const at its own line and
    column, as the rule-by-rule parse makes them (`-5` is the constant -5 there too)."""
    text = str(token)
    line = token.line
    line_start = -(token.column - 1)  # where the token's first line starts, relative to the token
    members = []
    done = 0  # the text before this has been counted for line ends
    for m in _MEMBER.finditer(text, 1):
        line, line_start = _past_line_ends(text, done, m.start(), line, line_start)
        members.append(A.Const(_member_value(m.group()), line=line, column=m.start() - line_start + 1))
        # a string continued over a line end moves the next member's line
        line, line_start = _past_line_ends(text, m.start(), m.end(), line, line_start)
        done = m.end()
    return tuple(members)


def _past_line_ends(text: str, start: int, end: int, line: int, line_start: int) -> tuple[int, int]:
    """(line, where it starts) after text[start:end], from those before it."""
    breaks = text.count("\n", start, end)
    return (line + breaks, text.rindex("\n", start, end) + 1) if breaks else (line, line_start)


def _member_value(raw: str) -> object:
    if raw[0] in "'\"":
        return raw[1:-1] if "\\" not in raw else pyast.literal_eval(raw)  # no escape: the text itself
    if raw in ("True", "False"):
        return raw == "True"
    if raw[0] == "-":
        return -_number_value(raw[1:])
    return _number_value(raw)


_AFTER_FIELD = re.compile(r"\bself\s*\.\s*\w+\s*$")
_AFTER_IN = re.compile(r"\bin\s*$")
_SET_HINT = "; `in` takes a set literal {...} or a set-valued field, not a list or a tuple"
_HINTS = {
    "if": "; conditional expressions are not part of a guard: combine conditions with and / or",
    "else": "; conditional expressions are not part of a guard: combine conditions with and / or",
    "is": "; compare with == or != (is and is not are not part of a guard)",
    "[": "; indexing is not part of a guard: keep the element in a field of its own",
    "%": "; the arithmetic of a guard is + - * / (no %, // or **)",
    "=": "; to compare, write == (a guard assigns nothing)",
    "&": "; a guard has no bitwise operators: combine conditions with and / or / not",
    "|": "; a guard has no bitwise operators: combine conditions with and / or / not",
    "~": "; a guard has no bitwise operators: combine conditions with and / or / not",
    "^": "; a guard has no bitwise operators: combine conditions with and / or / not",
}
_NONE_HINT = ("; None is not a value a guard compares with: an event's attributes always have one; keep a flag "
              "in a field for 'no value', e.g. self.has_limit")
_PREFIX_HINT = ("; f-strings and string prefixes are not part of a guard: compare with a plain '...' literal, or "
                "with a field the object keeps up to date (self.f)")
_STRING_PREFIX = re.compile(r"(?<![\w'\"])[rRuUbBfF]{1,2}$")  # `f'...'`: the lexer read the f as a name
_CALLED = re.compile(r"(\w|\))\s*$")  # what comes before a `(` that opens a call's arguments


def _hint(text: str, line: int, column: int, tok: str) -> str:
    """What to do instead, for the Python a guard does not take (\"\" when there is no hint)."""
    lines = source_lines(text)
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    before = src[:column - 1]
    if (tok == "[" and _AFTER_IN.search(before)) or (tok == "," and _AFTER_IN.search(before[:_opened(before)])):
        return _SET_HINT
    if tok == "self" and re.search(r"\blast\s*$", before):  # `name self` is no guard either: only after last
        return ("; `last` is not needed in a guard: a guard reads the released value of a `local` field "
                "already (write self.f)")
    if tok == "is" and re.match(r"is\s+(not\s+)?None\b", src[column - 1:]):
        return _NONE_HINT
    if tok[:1] in "'\"" and _STRING_PREFIX.search(before):
        return _PREFIX_HINT
    if tok == ",":
        opened = _opened(before)
        if before[opened:opened + 1] != "(":  # a comma outside any parenthesis
            return "; a guard is one condition: combine conditions with and / or"
        if re.search(r"\bdist\s*\($", before[:opened]):  # math.dist((x, y), (px, py)): points are tuples
            return ("; math.dist takes points, and tuples are not part of a guard: for the distance between "
                    "(x, y) and (px, py), write math.hypot(x - px, y - py), which brokers narrow to the "
                    "events near (px, py)")
        if not _CALLED.search(before[:opened]):  # `(a, b)`: not a call's arguments
            return "; tuples are not part of a guard: compare each element (x == 1 and y == 2)"
    if tok == "(" and _AFTER_FIELD.search(before):
        return f"; a field cannot be called in a guard (only {', '.join(FUNCTIONS)} can)"
    if tok == "." and _AFTER_FIELD.search(before):
        return ("; a guard reads the fields of its own object (self.f), not attributes of other "
                "objects: keep the value in a field")
    if tok == ":" and src[column:column + 1] == "=":  # `(x := v)`: Python's assignment expression
        return "; `:=` assigns, and a guard assigns nothing: compare with ==, or set the field in the method's body"
    if tok == "*" and "*" in (src[column - 2:column - 1], src[column:column + 1]):  # the second of **
        return ("; powers are not part of a guard (write x * x; for a distance, math.hypot(x - px, y - py) < r, "
                "which brokers narrow to the events near (px, py), where a sum of squares reaches every broker)")
    if tok == "/" and "/" in (src[column - 2:column - 1], src[column:column + 1]):  # //
        return _HINTS["%"]
    return _HINTS.get(tok, "")


def _opened(before: str) -> int:
    """Where the `(` still open at the end of `before` is (0 if none): `n in (1, 2)` is a tuple."""
    depth = 0
    for k in range(len(before) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(before[k], 0)
        if depth < 0:
            return k
    return 0


_DOTTED_AT_END = re.compile(r"(?<![\w.])((?!self\b)[^\W\d]\w*(\s*\.\s*[^\W\d]\w*)+)\s*$")


def _dotted_value(text: str, line: int, column: int) -> GuardError | None:
    """`x < math.pi`, `x < Desk.CAP`: a dotted name the grammar takes only as a function's (a
    call must follow), found just before where the parse failed."""
    lines = source_lines(text)
    found = _DOTTED_AT_END.search(lines[line - 1][:column - 1]) if 0 < line <= len(lines) else None
    if found is None:
        return None
    name = re.sub(r"\s+", "", found.group(1))
    return GuardError(f"{name} is not a value a guard reads (only a function after a dot: math.sqrt(...)); a guard "
                      "reads literals, event attributes and fields (self.f): write the value, or keep it in a field",
                      text, line, found.start(1) + 1)


#: How deep a guard's operations may nest (`-(-(-x))`, `a + b + c` is two). Every later pass walks
#: the tree recursively, and lark's transformer first, so a guard nested a thousand deep (a
#: generated one, say) raised a RecursionError from inside the parser instead of a diagnostic.
#: Parentheses alone do not count; brokers take at most 32 levels of an attribute expression.
MAX_NESTING = 200


def _check_nesting(tree: Tree, text: str) -> None:
    """GuardError at the first operation nested deeper than MAX_NESTING (walked with a stack:
    this is the check that keeps the recursive passes after it within Python's limit)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            raise GuardError(f"the guard nests its operations more than {MAX_NESTING} levels deep; "
                             "split it, or compute part of it in a field", text,
                             getattr(meta, "line", 0) or 1, getattr(meta, "column", 0) or 1)
        # (a leaf rule, a name or a number, is no operation)
        stack.extend((c, depth + 1) for c in node.children
                     if isinstance(c, Tree) and any(isinstance(g, Tree) for g in c.children))


def parse_guard(text: str) -> A.Node:
    """Parse a guard; a syntax error is a GuardError pointing at the offending token."""
    try:
        tree = _parser().parse(text)
    except UnexpectedEOF:
        lines = source_lines(text)
        raise (_dotted_value(text, len(lines), len(lines[-1]) + 1)
               or GuardError("the guard ends too early", text, len(lines), len(lines[-1]) + 1)) from None
    except UnexpectedToken as e:
        tok: Token = e.token
        if tok.type == "$END":
            lines = source_lines(text)
            raise (_dotted_value(text, len(lines), len(lines[-1]) + 1)
                   or GuardError("the guard ends too early", text, len(lines), len(lines[-1]) + 1)) from None
        dotted = _dotted_value(text, e.line, e.column) if tok != "(" else None
        if dotted is not None:
            raise dotted from None
        raise GuardError(f"unexpected {str(tok)!r} in guard" + _hint(text, e.line, e.column, str(tok)),
                         text, e.line, e.column) from None
    except UnexpectedCharacters as e:
        ch = source_lines(text)[e.line - 1][e.column - 1] if text else "?"
        raise GuardError(f"unexpected character {ch!r} in guard" + _hint(text, e.line, e.column, ch),
                         text, e.line, e.column) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark input errors
        raise GuardError("the guard is not valid", text, e.line, e.column) from None
    _check_nesting(tree, text)
    node = _ToAst().transform(tree)
    if isinstance(node, A.Name | A.SelfField | A.Call | A.Const):
        node = A.Truth(node, line=node.line, column=node.column)
    return node
