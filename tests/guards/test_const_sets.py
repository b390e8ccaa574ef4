"""A set literal of constants is lexed as one token (grammar CONST_SET): the AST, every member's
line and column, and every error must be what the rule-by-rule parse gives for the same text;
the one-token path is only faster (eventpyc took ~5-7 s on a 20,000-member watch list)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark

from eventpy.guards import GuardError, compile_guard, parse_guard
from eventpy.guards._parse import _parser, _ToAst, grammar_text
from eventpy.runtime.model import EventType

Q = EventType("consts.Q", firm=str, price=float, vol=int, live=bool)


def _rule_by_rule() -> Lark:
    """The guard parser without the one-token alternative: sets parsed member by member."""
    grammar, n = re.subn(r"\n\s*\| CONST_SET\s+-> const_set", "", grammar_text())
    assert n == 1, "the CONST_SET alternative of `atom` moved: update this test"
    return Lark(grammar, start="guard", parser="lalr", propagate_positions=True, maybe_placeholders=True)


SLOW = _rule_by_rule()


def slow_parse(text: str):
    return _ToAst().transform(SLOW.parse(text))


def lexed_whole(text: str) -> bool:
    return any(t.type == "CONST_SET" for t in _parser().lex(text))


strings = st.text(alphabet=st.sampled_from("ab Z_é'\"\\\t,}{#"), max_size=6).map(repr)
numbers = st.one_of(
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr).filter(lambda s: "inf" not in s),
    st.integers(0, 4096).map(hex), st.integers(0, 99).map(oct), st.integers(0, 99).map(bin),
    st.sampled_from(["1_000", "1e3", "2.5E-3", ".5", "5.", "-0x1F"]),
)
constants = st.one_of(strings, numbers, st.sampled_from(["True", "False"]))
blanks = st.sampled_from(["", " ", "  ", "\n", "\n    ", "\t", " \n\n "])


@settings(max_examples=400, deadline=None)
@given(members=st.lists(st.tuples(blanks, constants, blanks), min_size=1, max_size=8),
       trailing=st.booleans(), lead=blanks)
def test_a_set_of_constants_parses_as_member_by_member(members, trailing, lead):
    body = ",".join(f"{a}{m}{b}" for a, m, b in members) + ("," if trailing else "")
    text = f"price in{lead}{{{body}}}"
    assert lexed_whole(text)
    assert parse_guard(text) == slow_parse(text)  # the dataclasses compare lines and columns too


@pytest.mark.parametrize("body", [
    "'a', x",               # a name
    "'a', 1 + 2",           # an expression
    "- 1, 2",               # a sign apart from its number
    "'a', # a comment\n 'b'",
    "'a', \\\n 'b'",        # a line continuation between members
    "'a', Truex",
    "1, self.limit",
])
def test_a_set_with_anything_but_constants_takes_the_member_by_member_path(body):
    text = f"price in {{{body}}}"
    assert not lexed_whole(text)
    assert parse_guard(text) == slow_parse(text)


@pytest.mark.parametrize("text", [
    "firm in {'IBM',\n         'ORCL',\n         5}",
    "live in {True, 'x'}",
    "firm in {'a', 'b'} and vol in {'a'}",
    "vol in {1,\n  2,\n  2**3}",
])
def test_errors_say_and_point_where_the_member_by_member_parse_does(text, monkeypatch):
    def error(parser):
        monkeypatch.setattr("eventpy.guards._parse._parser", lambda: parser)
        with pytest.raises(GuardError) as e:
            compile_guard(text, Q)
        return str(e.value), e.value.line, e.value.column

    assert error(_parser()) == error(SLOW)


def test_a_watch_list_of_twenty_thousand_names_compiles_and_matches():
    names = [f"S{i}" for i in range(20_000)]
    text = "firm in {" + ",\n  ".join(repr(n) for n in names) + "} and price < 10.0"
    assert lexed_whole(text)
    plan = compile_guard(text, Q)
    values = [v.fn({}) for v in plan.vars]
    assert plan.holds(("S19999", 1.0, 0, True), values) and not plan.holds(("T1", 1.0, 0, True), values)
    last = parse_guard(text).items[0].right.items[-1]
    assert (last.line, last.column, last.value) == (20_000, 3, "S19999")
