"""Overlay topologies: brokers and the links between them. Overlays are acyclic (000 §3.2); a
configuration with a cycle is refused with a message that names the cycle."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from ._boundary import callers_mistake


class TopologyError(ValueError):
    """An overlay configuration that cannot be used (a cycle, an unknown broker, a self-link)."""


@dataclass(frozen=True)
class Topology:
    brokers: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    name: str = "custom"
    _adj: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        try:
            self._check()
        except TopologyError as e:  # the caller's configuration: said at their line
            callers_mistake(e)
            raise

    def _check(self) -> None:
        if isinstance(self.brokers, str) or not all(isinstance(b, str) and b for b in self.brokers):
            raise TopologyError(f"brokers is a sequence of broker names, such as (\"b0\", \"b1\"), "
                                f"not {self.brokers!r}")
        if not self.brokers:
            raise TopologyError("an overlay needs at least one broker")
        for link in self.links:
            if isinstance(link, str) or len(link) != 2:
                raise TopologyError(f"a link names two brokers, such as (\"b0\", \"b1\"), not {link!r}")
        # lists given for tuples: kept as tuples, so that the topology is hashable as it says
        object.__setattr__(self, "brokers", tuple(self.brokers))
        object.__setattr__(self, "links", tuple(tuple(link) for link in self.links))
        known = set(self.brokers)
        if len(known) != len(self.brokers):
            raise TopologyError("broker names must be unique")
        adj: dict[str, list[str]] = {b: [] for b in self.brokers}
        parent = {b: b for b in self.brokers}

        def root(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in self.links:
            for x in (a, b):
                if x not in known:
                    raise TopologyError(f"link {a} - {b} names unknown broker {x!r}")
            if a == b:
                raise TopologyError(f"broker {a!r} is linked to itself")
            if root(a) == root(b):
                path = _path(adj, b, a)
                cycle = " - ".join(path + [b])
                raise TopologyError(f"the overlay has a cycle: {cycle}; brokers must form a tree "
                                    "(paper 000 §3.2); remove one of these links")
            parent[root(a)] = root(b)
            adj[a].append(b)
            adj[b].append(a)
        object.__setattr__(self, "_adj", adj)

    def neighbors(self, broker: str) -> list[str]:
        return list(self._adj[broker])

    def edge_brokers(self) -> list[str]:
        """Brokers with at most one broker neighbor (the leaves), or the only broker."""
        if len(self.brokers) == 1:
            return list(self.brokers)
        return [b for b in self.brokers if len(self._adj[b]) <= 1]

    def distance(self, a: str, b: str) -> int:
        return len(_path(self._adj, a, b)) - 1

    def connected(self) -> bool:
        return len(self.brokers) <= 1 or len(_reach(self._adj, self.brokers[0])) == len(self.brokers)

    def apart(self) -> list[str]:
        """The brokers no chain of links reaches from the first (in order; none when connected)."""
        if not self.brokers:
            return []
        seen = _reach(self._adj, self.brokers[0])
        return [b for b in self.brokers if b not in seen]


def _reach(adj: dict, start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for n in adj[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _path(adj: dict, a: str, b: str) -> list[str]:
    prev: dict[str, str | None] = {a: None}
    todo = [a]
    while todo:
        x = todo.pop(0)
        if x == b:
            break
        for n in adj[x]:
            if n not in prev:
                prev[n] = x
                todo.append(n)
    if b not in prev:
        return []
    out, x = [], b
    while x is not None:
        out.append(x)
        x = prev[x]
    return out[::-1]


def _said_at_the_call(make: Callable[..., Topology]) -> Callable[..., Topology]:
    """A TopologyError of a topology maker is the caller's mistake: raised from their line."""
    @functools.wraps(make)
    def call(*args: Any, **kwargs: Any) -> Topology:
        try:
            return make(*args, **kwargs)
        except TopologyError as e:
            callers_mistake(e)
            raise
    return call


def _names(n: int) -> tuple[str, ...]:
    if n < 1:
        raise TopologyError("an overlay needs at least one broker")
    return tuple(f"b{i}" for i in range(n))


@_said_at_the_call
def line(n: int) -> Topology:
    b = _names(n)
    return Topology(b, tuple(zip(b, b[1:])), "line")


@_said_at_the_call
def star(n: int) -> Topology:
    b = _names(n)
    return Topology(b, tuple((b[0], x) for x in b[1:]), "star")


@_said_at_the_call
def tree(n: int, fanout: int = 2) -> Topology:
    if isinstance(fanout, bool) or not isinstance(fanout, int) or fanout < 1:
        raise TopologyError(f"a tree's fanout is the number of children of a broker, at least 1, not {fanout!r}")
    b = _names(n)
    return Topology(b, tuple((b[(i - 1) // fanout], b[i]) for i in range(1, n)), "tree")


@_said_at_the_call
def random_tree(n: int, seed: int = 0) -> Topology:
    """A random acyclic, non-hierarchical overlay: each broker links to a random earlier one."""
    rng = random.Random(seed)
    b = _names(n)
    return Topology(b, tuple((b[rng.randrange(i)], b[i]) for i in range(1, n)), "random")


TOPOLOGIES = {"line": line, "star": star, "tree": tree, "random": random_tree}


@_said_at_the_call
def make_topology(kind: str, n: int, seed: int = 0) -> Topology:
    if kind == "random":
        return random_tree(n, seed)
    try:
        return TOPOLOGIES[kind](n)
    except KeyError:
        raise TopologyError(f"unknown topology {kind!r}; choose {', '.join(TOPOLOGIES)}") from None
