"""Guard text -> AST (DESIGN §1.2, grammar/eventpy.lark): shapes, positions, precedence, literals
and syntax errors. Expected shapes follow Python's own grammar for the same expressions."""

from __future__ import annotations

import ast as pyast
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.guards import GuardError, parse_guard
from eventpy.guards import _ast as A


def walk(n):
    yield n
    for f in ("left", "right", "operand", "item", "expr"):
        c = getattr(n, f, None)
        if isinstance(c, A.Node):
            yield from walk(c)
    for f in ("items", "args"):
        for c in getattr(n, f, ()) or ():
            yield from walk(c)


def at(text: str, n: A.Node) -> str:
    """The source from the node's position to the end of that line."""
    return text.splitlines()[n.line - 1][n.column - 1:]


def shape(n):
    """A position-free rendering of the AST, to compare structures."""
    if isinstance(n, A.Const):
        return n.value
    if isinstance(n, A.Name):
        return n.name
    if isinstance(n, A.SelfField):
        return f"self.{n.name}"
    if isinstance(n, A.BinOp):
        return (n.op, shape(n.left), shape(n.right))
    if isinstance(n, A.Neg):
        return ("neg", shape(n.operand))
    if isinstance(n, A.Call):
        return (n.func, *map(shape, n.args))
    if isinstance(n, A.SetLit):
        return ("set", *map(shape, n.items))
    if isinstance(n, A.Compare):
        return (n.op, shape(n.left), shape(n.right))
    if isinstance(n, A.And):
        return ("and", *map(shape, n.items))
    if isinstance(n, A.Or):
        return ("or", *map(shape, n.items))
    if isinstance(n, A.Not):
        return ("not", shape(n.item))
    if isinstance(n, A.Truth):
        return ("truth", shape(n.expr))
    raise AssertionError(n)


# -- shapes and precedence ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        # boolean precedence: not > and > or, as in Python
        ("a or b and c", ("or", "a", ("and", "b", "c"))),
        ("a and b or c", ("or", ("and", "a", "b"), "c")),
        ("not a and b", ("and", ("not", "a"), "b")),
        ("not a or not b", ("or", ("not", "a"), ("not", "b"))),
        ("not not a", ("not", ("not", "a"))),
        ("(a or b) and c", ("and", ("or", "a", "b"), "c")),
        ("a or b or c", ("or", "a", "b", "c")),
        ("a and b and c", ("and", "a", "b", "c")),
        # not binds looser than comparisons
        ("not x < 1", ("not", ("<", "x", 1))),
        ("not x in {1}", ("not", ("in", "x", ("set", 1)))),
        ("x not in {1, 2}", ("not in", "x", ("set", 1, 2))),
        ("not(x)", ("not", "x")),
        # arithmetic: unary minus > * / > + -, left associative
        ("a + b * c < 1", ("<", ("+", "a", ("*", "b", "c")), 1)),
        ("a - b - c < 1", ("<", ("-", ("-", "a", "b"), "c"), 1)),
        ("a / b * c < 1", ("<", ("*", ("/", "a", "b"), "c"), 1)),
        ("-a * b < 1", ("<", ("*", ("neg", "a"), "b"), 1)),
        ("- - a < 1", ("<", ("neg", ("neg", "a")), 1)),
        ("+a < 1", ("<", "a", 1)),
        ("(a + b) * c < 1", ("<", ("*", ("+", "a", "b"), "c"), 1)),
        ("a < b + 1 and c", ("and", ("<", "a", ("+", "b", 1)), "c")),
        # chained comparisons: a < b <= c is a < b and b <= c
        ("1 < x <= 3", ("and", ("<", 1, "x"), ("<=", "x", 3))),
        ("a == b != c > d", ("and", ("==", "a", "b"), ("!=", "b", "c"), (">", "c", "d"))),
        ("x < y in {1}", ("and", ("<", "x", "y"), ("in", "y", ("set", 1)))),
        ("not 1 < x < 3", ("not", ("and", ("<", 1, "x"), ("<", "x", 3)))),
        # calls, fields, sets
        ("abs(x - 1) > 2", (">", ("abs", ("-", "x", 1)), 2)),
        ("math.hypot(x, y,) < 1", ("<", ("math.hypot", "x", "y"), 1)),
        ("min(x, self.limit) > 0", (">", ("min", "x", "self.limit"), 0)),
        ("self . x < 1", ("<", "self.x", 1)),
        ("x in {1, 2.5, -3,}", ("in", "x", ("set", 1, 2.5, -3))),
        ("x in{'a'}", ("in", "x", ("set", "a"))),
        ("f() == 1", ("==", ("f",), 1)),
        # a bare operand is a Truth predicate
        ("x", ("truth", "x")),
        ("self.active", ("truth", "self.active")),
        ("math.sqrt(x)", ("truth", ("math.sqrt", "x"))),
        ("True", ("truth", True)),
        ("(x)", ("truth", "x")),
        ("True == x", ("==", True, "x")),
        ("x == False", ("==", "x", False)),
    ],
)
def test_shapes(text, expected):
    assert shape(parse_guard(text)) == expected


def test_shapes_agree_with_python_for_arithmetic():
    # the parse of an arithmetic comparison evaluates like Python's parse of the same text
    env = {"a": 7, "b": 3, "c": 2, "d": 5}

    def ev(n):
        if isinstance(n, A.Const):
            return n.value
        if isinstance(n, A.Name):
            return env[n.name]
        if isinstance(n, A.Neg):
            return -ev(n.operand)
        if isinstance(n, A.BinOp):
            x, y = ev(n.left), ev(n.right)
            return {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[n.op]
        raise AssertionError(n)

    for text in ["a - b - c - d", "a / b / c", "a - b * c + d / a", "-a - -b * -c", "a * (b - c) / d",
                 "a - (b - (c - d))", "- a * - b + c", "a + b - c * d / a - b"]:
        assert ev(parse_guard(f"{text} < 0").left) == eval(text, {}, env), text


@pytest.mark.parametrize(
    "text, value",
    [
        ("1_000", 1000), (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0), ("2.5e-3", 0.0025), ("0", 0),
        ("12", 12), ("1E+2", 100.0), ("3.25", 3.25),
        # Python's other integer literals: a programmer compares flags and codes with them
        ("0x10", 16), ("0XfF", 255), ("0o17", 15), ("0b101", 5), ("0x_ff_ff", 65535), ("0b1_0", 2),
    ],
)
def test_numbers(text, value):
    c = parse_guard(f"x < {text}").right
    assert isinstance(c, A.Const) and c.value == value and type(c.value) is type(value)


@pytest.mark.parametrize(
    "literal, value",
    [
        (r"'I\'BM'", "I'BM"),
        (r'"a\"b"', 'a"b'),
        (r"'\\'", "\\"),
        (r"'\n\t'", "\n\t"),
        (r"'\x41\u00e9'", "A\u00e9"),
        ("\"it's\"", "it's"),
        ("'say \"hi\"'", 'say "hi"'),
        ("''", ""),
        ('""', ""),
        ("'a and b or not c in {1}'", "a and b or not c in {1}"),
        ("'héllo'", "héllo"),
    ],
)
def test_strings_with_both_quotes_and_escapes(literal, value):
    c = parse_guard(f"firm == {literal}").right
    assert isinstance(c, A.Const) and c.value == value
    assert c.value == pyast.literal_eval(literal)


def test_booleans_are_constants_not_names():
    n = parse_guard("x == True or y != False")
    assert [c.right.value for c in n.items] == [True, False]
    assert all(type(c.right) is A.Const for c in n.items)


@pytest.mark.parametrize(
    "name",
    ["order", "android", "index", "notable", "nothing", "not_in", "in_", "or_", "andor", "Trueish",
     "Falsey", "selfie", "self_x", "x1_2", "_x", "inf",
     # the five EventPy words are ordinary names inside a guard
     "event", "when", "local", "release", "last"],
)
def test_keyword_prefixes_and_eventpy_words_are_ordinary_names(name):
    n = parse_guard(f"{name} < 1 and {name}")
    assert shape(n) == ("and", ("<", name, 1), name)


# -- positions ----------------------------------------------------------------------------------
def test_positions_one_line():
    text = "firm == 'IBM' and price < self.limit * 2"
    n = parse_guard(text)
    assert (n.line, n.column) == (1, 1)
    eq, lt = n.items
    assert (eq.line, eq.column) == (1, 1)
    assert (eq.right.line, eq.right.column) == (1, 9)
    assert (lt.line, lt.column) == (1, 19)
    assert (lt.right.line, lt.right.column) == (1, 27)  # the BinOp starts at self
    assert (lt.right.left.line, lt.right.left.column) == (1, 27)
    assert (lt.right.right.line, lt.right.right.column) == (1, 40)


def test_positions_multi_line():
    text = "firm == 'IBM'\n  and (price < 3\n       or not hot)\n  and vol in {1,\n  2}"
    n = parse_guard(text)
    eq, par, inn = n.items
    assert (par.line, par.column) == (2, 8)  # the parenthesized Or starts at its first operand
    lt, neg = par.items
    assert (lt.right.line, lt.right.column) == (2, 16)
    assert (neg.line, neg.column) == (3, 11) and (neg.item.line, neg.item.column) == (3, 15)
    assert (inn.line, inn.column) == (4, 7)
    one, two = inn.right.items
    assert (one.line, one.column) == (4, 15) and (two.line, two.column) == (5, 3)


def test_positions_of_chained_comparisons():
    text = "1 < price <= limit"
    n = parse_guard(text)
    first, second = n.items
    assert (first.line, first.column) == (1, 1)
    assert (second.line, second.column) == (1, 5)  # starts at its left operand, `price`
    assert first.right is second.left or first.right == second.left


def test_positions_with_backslash_continuation():
    text = "price < \\\n    limit"
    n = parse_guard(text)
    assert (n.right.line, n.right.column) == (2, 5)


def test_position_is_not_part_of_equality():
    assert parse_guard("x < 1") == parse_guard("  x   <   1")


# random layouts: every name, call, field and string starts where the AST says
_TOKENS = st.lists(
    st.sampled_from(["price", "self.limit", "abs(vol)", "'a b'", '"q"', "math.floor(x)", "12",
                     "-y", "(z)"]),
    min_size=2, max_size=6,
)
_SEP = st.sampled_from([" ", "  ", "\n", " \n   ", "\t", " \\\n "])


@given(_TOKENS, st.lists(_SEP, min_size=12, max_size=12), st.lists(st.sampled_from(
    ["<", "==", "!=", ">=", "+", "*", "and", "or"]), min_size=6, max_size=6))
@settings(max_examples=200)
def test_positions_point_at_the_source(tokens, seps, ops):
    parts = []
    for i, tok in enumerate(tokens):
        if i:
            parts += [seps[2 * i], ops[i], seps[2 * i + 1]]
        parts.append(tok)
    text = seps[0].replace("\\\n", "") + "".join(parts)
    tree = parse_guard(text)  # a tab counts as one column, like any character
    for n in walk(tree):
        src = at(text, n)
        if isinstance(n, A.Name):
            assert src.startswith(n.name), (text, n)
        elif isinstance(n, A.SelfField):
            assert re.match(rf"self\s*\.\s*{n.name}", src), (text, n)
        elif isinstance(n, A.Call):
            assert src.startswith(n.func), (text, n)
        elif isinstance(n, A.Const) and isinstance(n.value, str):
            assert src[0] in "'\"", (text, n)
        elif isinstance(n, A.Const):
            assert src.startswith(str(n.value)), (text, n)
        elif isinstance(n, A.Neg):
            assert src.startswith("-"), (text, n)


# -- syntax errors ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, line, column, message",
    [
        ("price < < 3", 1, 9, "unexpected '<' in guard"),
        ("price <", 1, 8, "the guard ends too early"),
        ("price $ 3", 1, 7, "unexpected character '$' in guard"),
        ("price < 3)", 1, 10, "unexpected ')' in guard"),
        ("(price < 3", 1, 11, "the guard ends too early"),
        ("price < 3 and\n   vol > > 1", 2, 10, "unexpected '>' in guard"),
        ("price < 3 and\n   vol >", 2, 9, "the guard ends too early"),
        ("x = 3", 1, 3, "unexpected character '=' in guard; to compare, write == (a guard assigns nothing)"),
        ("x is 3", 1, 3, "unexpected 'is' in guard; compare with == or != (is and is not are not part of a guard)"),
        ("x ** 2 > 1", 1, 4, "unexpected '*' in guard; powers are not part of a guard (write x * x; for a "
                             "distance, math.hypot(x - px, y - py) < r, which brokers narrow to the events near "
                             "(px, py), where a sum of squares reaches every broker)"),
        ("math.dist((x, y), (px, py)) < r", 1, 13, "unexpected ',' in guard; math.dist takes points, and tuples "
                                                   "are not part of a guard: for the distance between (x, y) and "
                                                   "(px, py), write math.hypot(x - px, y - py), which brokers "
                                                   "narrow to the events near (px, py)"),
        ("n % 2 == 0", 1, 3, "unexpected character '%' in guard; the arithmetic of a guard is + - * / (no %, // "
                             "or **)"),
        ("n // 2 == 0", 1, 4, "unexpected '/' in guard; the arithmetic of a guard is + - * / (no %, // or **)"),
        ("x[0] > 1", 1, 2, "unexpected character '[' in guard; indexing is not part of a guard: keep the element "
                           "in a field of its own"),
        ("price < self.limit()", 1, 19, "unexpected '(' in guard; a field cannot be called in a guard (only abs, "
                                        "min, max, round, math.sqrt, math.hypot, math.floor, math.ceil can)"),
        ("price < self.cfg.limit", 1, 17, "unexpected '.' in guard; a guard reads the fields of its own object "
                                          "(self.f), not attributes of other objects: keep the value in a field"),
        ("price < x if ok else 0", 1, 11, "unexpected 'if' in guard; conditional expressions are not part of a "
                                          "guard: combine conditions with and / or"),
        ("price < last self.x", 1, 14, "unexpected 'self' in guard; `last` is not needed in a guard: a guard reads "
                                       "the released value of a `local` field already (write self.f)"),
        ("lambda: 1", 1, 7, "unexpected character ':' in guard"),
        ("f(,)", 1, 3, "unexpected ',' in guard"),
        ("firm == 'a' 'b'", 1, 13, "unexpected \"'b'\" in guard"),
        ("firm == 'abc", 1, 9, "unexpected character \"'\" in guard"),
        ("self < 1", 1, 6, "unexpected '<' in guard"),
        ("not", 1, 4, "the guard ends too early"),
        ("x < 1 and", 1, 10, "the guard ends too early"),
        ("a\n  and\n  or b", 3, 3, "unexpected 'or' in guard"),
        # the Python a programmer reaches for, each refused with what to write instead
        ("x is None", 1, 3, "unexpected 'is' in guard; None is not a value a guard compares with: an event's "
                            "attributes always have one; keep a flag in a field for 'no value', e.g. self.has_limit"),
        ("self.opt is not None", 1, 10, "unexpected 'is' in guard; None is not a value a guard compares with: an "
                                        "event's attributes always have one; keep a flag in a field for 'no value', "
                                        "e.g. self.has_limit"),
        ("firm == f'{self.name}'", 1, 10, "unexpected \"'{self.name}'\" in guard; f-strings and string prefixes are "
                                          "not part of a guard: compare with a plain '...' literal, or with a field "
                                          "the object keeps up to date (self.f)"),
        ("firm == b'IBM'", 1, 10, "unexpected \"'IBM'\" in guard; f-strings and string prefixes are not part of a "
                                  "guard: compare with a plain '...' literal, or with a field the object keeps up to "
                                  "date (self.f)"),
        ("(x > 1) & (y < 2)", 1, 9, "unexpected character '&' in guard; a guard has no bitwise operators: combine "
                                    "conditions with and / or / not"),
        ("x > 1 | y < 2", 1, 7, "unexpected character '|' in guard; a guard has no bitwise operators: combine "
                                "conditions with and / or / not"),
        ("~ok", 1, 1, "unexpected character '~' in guard; a guard has no bitwise operators: combine conditions with "
                      "and / or / not"),
        ("(x, y) == (1, 2)", 1, 3, "unexpected ',' in guard; tuples are not part of a guard: compare each element "
                                   "(x == 1 and y == 2)"),
        ("x < 1, y < 2", 1, 6, "unexpected ',' in guard; a guard is one condition: combine conditions with "
                               "and / or"),
        ("x < math.pi", 1, 5, "math.pi is not a value a guard reads (only a function after a dot: math.sqrt(...)); "
                               "a guard reads literals, event attributes and fields (self.f): write the value, or "
                               "keep it in a field"),
        ("x < Desk.CAP and y", 1, 5, "Desk.CAP is not a value a guard reads (only a function after a dot: "
                                      "math.sqrt(...)); a guard reads literals, event attributes and fields (self.f): "
                                      "write the value, or keep it in a field"),
    ],
)
def test_syntax_errors_render_position_line_and_caret(text, line, column, message):
    with pytest.raises(GuardError) as e:
        parse_guard(text)
    err = e.value
    assert (err.line, err.column) == (line, column)
    assert err.message == message
    rendered = str(err).splitlines()
    assert rendered[0] == f"<guard>:{line}:{column}: error: {message}"
    src = text.splitlines()[line - 1]
    assert rendered[1] == f"    {src}"
    assert rendered[2] == "    " + " " * (column - 1) + "^"
    assert err.render("stock.epy").startswith(f"stock.epy:{line}:{column}: error: ")


def test_empty_guard_is_an_error():
    with pytest.raises(GuardError) as e:
        parse_guard("")
    assert str(e.value).startswith("<guard>:1:1: error: the guard ends too early")


def test_guard_error_is_a_value_error_without_a_position():
    e = GuardError("plain")
    assert isinstance(e, ValueError) and str(e) == "plain"
    placed = e.at(A.Name("x", line=2, column=3))
    assert (placed.line, placed.column) == (2, 3)
    assert GuardError("m", "a", 1, 1).at(A.Name("x", line=5, column=5)).line == 1
