"""The Siena-style poset of conjunctions ordered by covering (000 §3.4, Fig. 2).

Each node holds one distinct filter and every key indexed under it (subs[τ][Φ] in Fig. 2). An
edge parent -> child means the parent covers the child (`filter_covers`). Two invariants make
matching and summaries correct: every edge satisfies covering, and every node is reachable from a
root.
Completeness of the edges is *not* relied on: a covering pair without a path between them only
leaves more roots, i.e. a larger (still covering) summary.

Matching evaluates the poset from the roots and skips everything below a node that fails (its
descendants are covered by it, so they fail too). The summary is the disjunction of the roots
(the predicates not covered by another), the LUB of 000 §3.4.

Filters with an empty constraint never match anything and are covered by every node; keeping
them out of the graph spares attaching them below every leaf. Their nodes are not `live`.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..model import Constraint, Filter, ValueSet, filter_covers, set_constraint
from ._base import Key, Matcher


def order_key(flt: Filter) -> tuple:
    """A canonical order of filters (their attributes, then their constraints' text), so that a
    summary's disjuncts keep their places from one summary to the next whatever the poset's order."""
    return (tuple(sorted(flt)), repr(sorted(flt.items())))


class _Node:
    __slots__ = ("flt", "canon", "preds", "keys", "parents", "children", "live", "order")

    def __init__(self, flt: dict[str, Constraint], index: dict[str, int]) -> None:
        self.keys: dict[Key, None] = {}
        # dicts used as insertion-ordered sets, so traversal order is deterministic
        self.parents: dict[_Node, None] = {}
        self.children: dict[_Node, None] = {}
        self.live = False  # True while the node is in the graph (not an empty filter)
        self.set_filter(flt, index)

    def set_filter(self, flt: dict[str, Constraint], index: dict[str, int]) -> None:
        self.flt = flt
        self.order: tuple | None = None  # order_key(flt), computed when a summary is sorted
        self.canon = frozenset(flt.items())
        self.preds = tuple((index[a], c) for a, c in flt.items())


def _never_matches(flt: Filter) -> bool:
    return any(c.is_empty() for c in flt.values())


def _disjoint(a: Filter, b: Filter) -> bool:
    """No event matches both (sound, attribute by attribute)."""
    for attr, ca in a.items():
        cb = b.get(attr)
        if cb is not None and ca.intersect(cb).is_empty():  # type: ignore[arg-type]
            return True
    return False


MAX_INDEXED_VALUES = 256  # a root with a larger set on the indexed attribute is not indexed by it


class _Roots(dict):
    """The roots (an insertion-ordered set), plus an index of them by the values admitted on one
    enumerated attribute. A root that admits none of a filter's values there is disjoint from it,
    so it can neither cover it nor be covered by it: insertion only tests the rest (as Siena's
    forwarding tables index constraints by attribute), not every root."""

    def __init__(self, attr: str | None) -> None:
        super().__init__()
        self.attr = attr
        self.by_value: dict[object, dict[_Node, None]] = {}
        self.open: dict[_Node, None] = {}  # roots not restricted to a value set on `attr`

    def _values(self, n: _Node):
        return self._indexed(n.flt)

    def _indexed(self, flt: Filter):
        """The values a filter is indexed under; None for an open one. A large set counts as
        open: indexing it (and looking its values up) was a pass over every member at each
        insertion or update, 0.5 s a UPD of one member of a 50,000-member set."""
        c = flt.get(self.attr) if self.attr is not None else None
        if isinstance(c, ValueSet) and not c.exclude and len(c.values) <= MAX_INDEXED_VALUES:
            return c.values
        return None

    def add(self, n: _Node) -> None:
        if n in self:
            return
        self[n] = None
        values = self._values(n)
        if values is None:
            self.open[n] = None
        else:
            for v in values:
                self.by_value.setdefault(v, {})[n] = None

    def discard(self, n: _Node) -> None:
        if n not in self:
            return
        del self[n]
        values = self._values(n)
        if values is None:
            del self.open[n]
        else:
            for v in values:
                bucket = self.by_value[v]
                del bucket[n]
                if not bucket:
                    del self.by_value[v]

    def overlapping(self, flt: Filter) -> Iterable[_Node]:
        """Roots that may share an event with `flt` (a superset of them)."""
        values = self._indexed(flt)
        if values is None:
            return list(self)
        out: dict[_Node, None] = dict(self.open)
        for v in values:
            out.update(self.by_value.get(v, ()))
        return list(out)


class PosetMatcher(Matcher):
    name = "poset"

    def __init__(self, etype) -> None:
        super().__init__(etype)
        self._node_of: dict[Key, _Node] = {}
        self._by_canon: dict[frozenset, _Node] = {}  # equal filters share one node
        enums = [a for a, t in etype.schema.items() if t in (str, bool)]
        self._roots = _Roots(enums[0] if enums else None)

    # ---- graph surgery -------------------------------------------------------------------

    def _attach(self, x: _Node) -> None:
        """Siena insert: link x below the lowest nodes covering it, above the highest it covers."""
        if _never_matches(x.flt):
            return
        x.live = True
        f = x.flt
        # Nodes covering x. Covering is transitive, so every ancestor of a covering node covers
        # x too: descending from the roots only through covering nodes finds them all (as far
        # as the edges are complete; a miss only makes x a root, which stays correct).
        cov: dict[_Node, None] = {}
        tested: set[_Node] = set()
        stack = []
        candidates = self._roots.overlapping(f)
        for r in candidates:
            tested.add(r)
            if filter_covers(r.flt, f):
                stack.append(r)
        while stack:
            n = stack.pop()
            cov[n] = None
            for c in n.children:
                if c not in tested:
                    tested.add(c)
                    if filter_covers(c.flt, f):
                        stack.append(c)
        parents = [p for p in cov if not any(c in cov for c in p.children)]
        # Nodes x strictly covers, highest first. In a complete diagram they lie below x's
        # parents (or anywhere, if x is a root). Strictness (x covers n, n does not cover x)
        # keeps the graph acyclic when two structurally different filters are equivalent
        # ({} and {a: EVERYTHING}); `n not in cov` already implies it when `cov` is complete.
        start = ({c: None for p in parents for c in p.children} if parents
                 else dict.fromkeys(candidates))
        found: dict[_Node, None] = {}
        seen = set(start)
        stack = list(start)
        while stack:
            n = stack.pop()
            if n not in cov and filter_covers(f, n.flt) and not filter_covers(n.flt, f):
                found[n] = None
                continue
            if _disjoint(f, n.flt):
                continue  # whatever n covers is disjoint from x too, hence not covered by x
            for c in n.children:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        # cheap transitive reduction: a candidate under another candidate is reached via it
        children = [c for c in found if not any(q in found for q in c.parents)]
        for p in parents:
            p.children[x] = None
            x.parents[p] = None
        if not parents:
            self._roots.add(x)
        for c in children:
            # edges from x's ancestors straight to c are now implied by ancestor -> x -> c
            for q in [q for q in c.parents if q in cov]:
                del q.children[c]
                del c.parents[q]
            c.parents[x] = None
            x.children[c] = None
            self._roots.discard(c)

    def _detach(self, x: _Node) -> None:
        """Siena delete: unlink x, handing its children to its parents so none gets lost."""
        if not x.live:
            return
        x.live = False
        parents, children = list(x.parents), list(x.children)
        for p in parents:
            del p.children[x]
        for c in children:
            del c.parents[x]
        self._roots.discard(x)
        x.parents.clear()
        x.children.clear()
        for c in children:
            if not c.parents:
                # p covers x covers c: the edge is sound; with no parents left c must be linked
                for p in parents:
                    p.children[c] = None
                    c.parents[p] = None
                if not parents:
                    self._roots.add(c)
                continue
            # c is still reachable; re-add p -> c only where no remaining parent of c lies
            # (by covering) under p, to keep the graph roughly transitively reduced
            for p in parents:
                if p not in c.parents and not any(filter_covers(p.flt, q.flt) for q in c.parents):
                    p.children[c] = None
                    c.parents[p] = None

    def _insert(self, key: Key, flt: dict[str, Constraint]) -> None:
        canon = frozenset(flt.items())
        node = self._by_canon.get(canon)
        if node is None:
            node = _Node(flt, self.etype.index)
            self._by_canon[canon] = node
            self._attach(node)
        node.keys[key] = None
        self._node_of[key] = node

    def _drop(self, node: _Node) -> None:
        self._detach(node)
        del self._by_canon[node.canon]

    # ---- the Matcher interface -----------------------------------------------------------

    def add(self, key: Key, flt: Filter) -> None:
        if key in self._node_of:
            raise KeyError(f"entry {key!r} is already indexed")
        self._insert(key, dict(flt))

    def remove(self, key: Key) -> None:
        node = self._node_of.pop(key)
        del node.keys[key]
        if not node.keys:
            self._drop(node)

    def update(self, key: Key, attr: str, constraint: Constraint | None) -> None:
        """update(P[τ], node, x, v) of 000 Fig. 6 line 36: re-substitute, re-order if needed."""
        node = self._node_of[key]
        flt = dict(node.flt)
        set_constraint(flt, attr, constraint)
        canon = frozenset(flt.items())
        if canon == node.canon:
            return
        if len(node.keys) > 1 or canon in self._by_canon:
            # the key leaves a shared node, or joins an existing equal filter
            self.remove(key)
            self._insert(key, flt)
            return
        del self._by_canon[node.canon]
        self._by_canon[canon] = node
        if (
            node.live
            and not _never_matches(flt)
            and all(filter_covers(p.flt, flt) for p in node.parents)
            and all(filter_covers(flt, c.flt) for c in node.children)
        ):
            # the cheap path: the node's place in the order still holds, O(degree) tests
            root = node in self._roots
            if root:
                self._roots.discard(node)  # re-indexed under its new values
            node.set_filter(flt, self.etype.index)
            if root:
                self._roots.add(node)
            return
        self._detach(node)
        node.set_filter(flt, self.etype.index)
        self._attach(node)

    def match(self, values: tuple) -> list[Key]:
        out: list[Key] = []
        seen: set[_Node] = set()
        stack = list(self._roots)
        while stack:
            n = stack.pop()
            if n in seen:  # reachable along several paths: evaluate it once
                continue
            seen.add(n)
            for i, c in n.preds:
                if not c.contains(values[i]):
                    break  # its descendants are covered by it and cannot match either
            else:
                out.extend(n.keys)
                stack.extend(n.children)
        return out

    def filter_of(self, key: Key) -> Filter:
        # a copy: equal filters under different keys share the node's dict
        return dict(self._node_of[key].flt)

    def keys(self) -> Iterable[Key]:
        return self._node_of.keys()

    def __len__(self) -> int:
        return len(self._node_of)

    def summary(self, skip: Callable[[Key], bool] | None = None, ordered: bool = False) -> list[dict[str, Constraint]]:
        """The disjunction of the roots (000 §3.4). Nodes whose keys are all skipped give way to
        their children: on each path the first kept node is sent, unless a kept node above it on
        another path covers it already (an ancestor covers its descendants). `ordered`: in
        `order_key` order, each node's key computed once while its filter stays (a broker sorts
        the summary it sends at every change: the keys' text was most of a moving fleet's cost)."""
        out: dict[frozenset, _Node] = {}
        kept: dict[_Node, bool] = {}

        def is_kept(n: _Node) -> bool:
            v = kept.get(n)
            if v is None:
                v = skip is None
                if not v:
                    for k in n.keys:
                        if not skip(k):
                            v = True
                            break
                kept[n] = v
            return v

        clear: set[_Node] = set()  # nodes known to have no kept ancestor
        seen: set[_Node] = set()
        stack = list(self._roots)
        stack.reverse()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if not is_kept(n):
                stack.extend(reversed(n.children))
            elif n.canon not in out and not (n.parents and _under_kept(n, is_kept, clear)):
                out[n.canon] = n
        nodes = list(out.values())
        if ordered and len(nodes) > 1:
            for n in nodes:
                if n.order is None:
                    n.order = order_key(n.flt)
            nodes.sort(key=_order_of)
        return [dict(n.flt) for n in nodes]

    # ---- inspection ----------------------------------------------------------------------

    def roots(self) -> list[Filter]:
        """The filters not covered by another (as far as the edges know): the LUB's disjuncts."""
        return [dict(n.flt) for n in self._roots]

    def check(self) -> None:
        """Assert the invariants (for tests): edges cover, nodes reachable, bookkeeping agrees."""
        live = {n for n in self._by_canon.values() if n.live}
        for n in self._by_canon.values():
            assert n.keys and all(self._node_of[k] is n for k in n.keys)
            assert n.live != _never_matches(n.flt) and n.canon == frozenset(n.flt.items())
            assert (n in self._roots) == (n.live and not n.parents)
            for c in n.children:
                assert n in c.parents and c.live and filter_covers(n.flt, c.flt)
            for p in n.parents:
                assert n in p.children
        # Kahn's order from the roots reaches every live node iff all are reachable and acyclic
        indeg = {n: len(n.parents) for n in live}
        order = [n for n in live if not indeg[n]]
        for n in order:
            for c in n.children:
                indeg[c] -= 1
                if not indeg[c]:
                    order.append(c)
        assert len(order) == len(live)
        assert sum(len(n.keys) for n in self._by_canon.values()) == len(self._node_of)


def _order_of(n: _Node) -> tuple:
    return n.order  # type: ignore[return-value]


def _under_kept(n: _Node, is_kept: Callable[[_Node], bool], clear: set[_Node]) -> bool:
    """Has `n` a kept ancestor (reached below skipped nodes, it may lie under a kept one too)?
    The ancestors found without one are added to `clear`, so that siblings do not walk them again."""
    todo = [p for p in n.parents if p not in clear]
    walked: set[_Node] = set()
    while todo:
        p = todo.pop()
        if p in walked:
            continue
        walked.add(p)
        if is_kept(p):
            return True
        todo.extend(q for q in p.parents if q not in clear)
    clear.update(walked)
    return False
