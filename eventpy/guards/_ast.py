"""Typed AST of guards. Every node keeps the line and column where it starts (1-based)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Node:
    line: int = field(default=0, compare=False, kw_only=True)
    column: int = field(default=0, compare=False, kw_only=True)


# -- expressions -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Const(Node):
    value: Any


@dataclass(frozen=True)
class Name(Node):
    """A bare name before resolution: an event attribute or a parameter."""

    name: str


@dataclass(frozen=True)
class SelfField(Node):
    """`self.f`: a field of the subscriber object (a parameter, 000 §4.2)."""

    name: str


@dataclass(frozen=True)
class Attr(Node):
    """A resolved event attribute."""

    name: str


@dataclass(frozen=True)
class Param(Node):
    """A resolved subscription parameter."""

    name: str


@dataclass(frozen=True)
class BinOp(Node):
    op: str  # + - * /
    left: Node
    right: Node


@dataclass(frozen=True)
class Neg(Node):
    operand: Node


@dataclass(frozen=True)
class Call(Node):
    func: str  # dotted name, e.g. "math.sqrt"
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Elapsed(Node):
    """`elapsed()`: the seconds from the subscription's issue to the event's publication (paper
    003 §III-B, time as the evolution variable; its §V-D snapshot at the entry point)."""


@dataclass(frozen=True)
class SetLit(Node):
    items: tuple[Node, ...]


# -- predicates --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Compare(Node):
    op: str  # < <= == != > >= in "not in"
    left: Node
    right: Node


@dataclass(frozen=True)
class And(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Or(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Not(Node):
    item: Node


@dataclass(frozen=True)
class Truth(Node):
    """A bare operand used as a predicate (`self.active`, a bool attribute)."""

    expr: Node


@dataclass(frozen=True)
class Defined(Node):
    """Holds when `expr` (attribute-free) can be evaluated: made by the compiler, never parsed.
    A numeric `in` is split into one equality per element, but Python computes the whole set
    before testing membership, so each equality also needs every element computable."""

    expr: Node
