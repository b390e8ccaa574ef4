"""The restricted trees that brokers evaluate (attribute expressions, generated variables): known
nodes only, depth limits, never evaluated as Python."""

from __future__ import annotations

import builtins
import math
import re

import pytest

from eventpy.guards import (
    TreeError,
    compile_conjunctions,
    compile_guard,
    compile_predicate,
    compile_tree,
    conjunctions_hold,
)

from ._schema import P, Q, ev


# -- restricted trees ----------------------------------------------------------------------------
def test_compile_tree_evaluates_known_nodes():
    f = compile_tree(("+", ("a", 0), ("*", ("v", 0), ("c", 2))), 1, 1)
    assert f((1,), (3,)) == 7
    assert compile_tree(("neg", ("a", 0)))((4,), ()) == -4
    assert compile_tree(("f", "max", ("a", 0), ("c", 2), ("c", 9)))((4,), ()) == 9
    assert compile_tree(("f", "math.hypot", ("c", 3), ("c", 4)))((), ()) == 5.0
    assert compile_tree(("set", ("c", "a"), ("a", 0)))(("b",), ()) == frozenset({"a", "b"})
    assert compile_tree(("/", ("c", 1), ("c", 4)))((), ()) == 0.25
    # msgpack turns tuples into lists: lists are accepted
    assert compile_predicate(["<", ["a", 0], ["c", 3]], 1, 0)((2,), ())
    assert compile_predicate(("not in", ("a", 0), ("set", ("c", "x"))), 1, 0)(("y",), ())
    assert compile_predicate(("in", ("a", 0), ("v", 0)), 1, 1)(("y",), (frozenset({"y"}),))


def test_compile_predicate_is_false_when_evaluation_fails():
    assert compile_predicate((">", ("/", ("a", 0), ("c", 0)), ("c", 1)))((1,), ()) is False
    assert compile_predicate(("<=", ("/", ("a", 0), ("c", 0)), ("c", 1)))((1,), ()) is False
    assert compile_predicate((">", ("f", "math.sqrt", ("a", 0)), ("c", 1)))((-1,), ()) is False
    assert compile_predicate(("<", ("+", ("a", 0), ("c", 1)), ("c", 1)))(("s",), ()) is False
    assert compile_predicate(("<", ("f", "math.floor", ("a", 0)), ("c", 1)))((math.inf,), ()) is False


def _deep(n: int):
    t = ("a", 0)
    for _ in range(n):
        t = ("neg", t)
    return ("<", t, ("c", 0))


@pytest.mark.parametrize(
    "tree, match",
    [
        (("eval", ("c", "1")), "unknown expression node 'eval'"),
        (("getattr", ("a", 0), ("c", "__class__")), "unknown expression node"),
        (("**", ("c", 2), ("c", 3)), "unknown expression node"),
        (("<", ("lambda", ("c", 1)), ("c", 2)), "unknown expression node 'lambda'"),
        (("<", ("c",), ("c", 2)), "takes 1 operand"),
        (("<", ("c", 1, 2), ("c", 2)), "takes 1 operand"),
        (("<", ("+", ("c", 1)), ("c", 2)), "takes 2 operand"),
        (("<", ("neg",), ("c", 2)), "takes 1 operand"),
        (("<", ("c", 1)), "takes 2 operand"),
        (("<", ("c", 1), ("c", 1), ("c", 1)), "takes 2 operand"),
        (("<", ("a",), ("c", 2)), "takes 1 operand"),
        (("<", ("f", "eval", ("c", "1")), ("c", 2)), "function 'eval' is not allowed"),
        (("<", ("f", "open", ("c", "/etc/passwd")), ("c", 2)), "function 'open' is not allowed"),
        (("<", ("f", "math.pow", ("c", 2), ("c", 2)), ("c", 2)), "function 'math.pow' is not allowed"),
        (("<", ("f", "__import__", ("c", "os")), ("c", 2)), "not allowed"),
        (("<", ("f",), ("c", 2)), "not allowed"),
        (("<", ("f", "abs"), ("c", 2)), "abs takes 1..1 arguments"),
        (("<", ("f", "min", ("c", 1)), ("c", 2)), "min takes 2..16 arguments"),
        (("<", ("a", 4), ("c", 2)), "attribute index 4 out of range"),
        (("<", ("a", -1), ("c", 2)), "attribute index -1 out of range"),
        (("<", ("a", True), ("c", 2)), "attribute index True out of range"),
        (("<", ("a", 1.0), ("c", 2)), "attribute index 1.0 out of range"),
        (("<", ("a", "0"), ("c", 2)), "out of range"),
        (("<", ("v", 2), ("c", 2)), "variable index 2 out of range"),
        (("<", ("c", [1]), ("c", 2)), "constant of type list not allowed"),
        (("<", ("c", None), ("c", 2)), "constant of type NoneType not allowed"),
        (("<", ("c", b"x"), ("c", 2)), "constant of type bytes not allowed"),
        (("<", ("c", 1j), ("c", 2)), "constant of type complex not allowed"),
        (("<", 3, ("c", 2)), "malformed expression node"),
        (("<", "c", ("c", 2)), "malformed expression node"),
        (("<", (), ("c", 2)), "malformed expression node"),
        (("<", (1, 2), ("c", 2)), "malformed expression node"),
        (("<", None, ("c", 2)), "malformed expression node"),
        (_deep(40), "expression too large"),
        (("in", ("a", 0), ("set", *[("c", i) for i in range(300)])), "expression too large"),
    ],
)
def test_malformed_trees_are_refused(tree, match):
    with pytest.raises(TreeError, match=re.escape(match)):
        compile_tree(tree, 4, 2)
    with pytest.raises(TreeError):
        compile_predicate(tree, 4, 2)


def test_depth_limit_allows_reasonable_trees():
    assert compile_predicate(_deep(30), 1, 0)((-1,), ()) is True  # an even count of minus signs
    assert compile_predicate(_deep(31), 1, 0)((1,), ()) is True  # the deepest leaf at depth 32


@pytest.mark.parametrize("tree", [("c", True), ("+", ("c", 1), ("c", 2)), ("a", 0), (), None, "<", 5,
                                  [], ("set", ("c", 1))])
def test_compile_predicate_needs_a_comparison_at_the_root(tree):
    with pytest.raises(TreeError):
        compile_predicate(tree, 4, 2)


def test_trees_are_never_evaluated_as_python(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec/compile called")

    for name in ("eval", "exec", "compile", "__import__"):
        monkeypatch.setattr(builtins, name, forbidden)
    evil = "__import__('os').system('echo pwned')"
    pred = compile_predicate(("==", ("a", 0), ("c", evil)), 1, 0)
    assert pred((evil,), ()) is True and pred(("x",), ()) is False
    with pytest.raises(TreeError):
        compile_predicate(("==", ("f", "eval", ("c", evil)), ("c", 1)), 1, 0)
    # the spec of a compiled guard round-trips through compile_conjunctions the same way
    monkeypatch.undo()
    plan = compile_guard("price * vol > limit and firm == 'IBM' or active", Q, P)
    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, forbidden)
    conjs = compile_conjunctions(plan.spec, Q, len(plan.vars))
    values = plan.evaluate({"limit": 10.0, "active": False})
    assert conjunctions_hold(conjs, ev(firm="IBM", price=5.0, vol=3), values)
    assert not conjunctions_hold(conjs, ev(firm="HP", price=5.0, vol=3), values)


def test_compile_conjunctions_rejects_a_tampered_spec():
    plan = compile_guard("price * vol > limit", Q, P)
    [(cons, switch, (tree,))] = plan.spec
    bad = ((cons, switch, ((">", ("a", 9), tree[2]),)),)
    with pytest.raises(TreeError, match="attribute index 9 out of range"):
        compile_conjunctions(bad, Q, len(plan.vars))
    bad = ((cons, switch, ((">", ("a", 1), ("v", 5)),)),)
    with pytest.raises(TreeError, match="variable index 5 out of range"):
        compile_conjunctions(bad, Q, len(plan.vars))
