"""What a broker holds for one subscription of one neighbor: the conjunctions with their
variables (the nodes of Fig. 6, `(Φ^V, Φ, (x, v))`) and per-variable sequence numbers."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Hashable

from ...guards import TreeError, compile_predicate, reads_time
from ...guards._exprs import tree_nodes
from ...guards._hull import Ranged, implied_bounds, time_switch
from .._sub_limits import MAX_CONJUNCTIONS, MAX_EXPRESSION_NODES, MAX_VARIABLES
from ..model import EventType, Interval, SetDelta, ValueSet

# How far ahead of the last applied sequence number an UPD may be. A variable's owner numbers its
# changes one by one and restarts with each SUB (ClientCore.resync; a broker's _Sent), so a real
# UPD is ahead by the changes coalesced into it: far below 2**32 (four billion assignments while
# one UPD waits). Further ahead is a sender's bug; stored, it would make every later UPD of the
# variable look older ("stale"), freezing it for good (seq 2**64-1 did).
MAX_SEQ_STEP = 1 << 32


# A conjunction's bound from its attribute expressions: (attribute, op, the Ranged side, or the
# pair of them for `near`), or a time switch (None, op, (L, R)); see `_compiled`.
Bound = tuple[str | None, str, Any]

STALE = object()  # SubState.check: an update older than one applied, dropped


class MessageError(ValueError):
    """A message that does not fit the protocol or the broker's state; refused, never fatal."""


class SubState:
    __slots__ = ("link", "sid", "conjs", "values", "seqs", "roles", "residual", "switched_on", "timed",
                 "evolving", "moves", "bound_vars")

    def __init__(self, link: Hashable, sid: Any, etype: EventType, spec: Any, values: Any) -> None:
        if type(sid) is not int:
            raise MessageError(f"subscription id must be an int, got {type(sid).__name__}")
        if not isinstance(spec, (tuple, list)) or len(spec) > MAX_CONJUNCTIONS:
            raise MessageError("subscription spec must be a list of at most "
                               f"{MAX_CONJUNCTIONS} conjunctions")
        if not isinstance(values, (tuple, list)) or len(values) > MAX_VARIABLES:
            raise MessageError(f"subscription values must be a list of at most {MAX_VARIABLES}")
        self.link = link
        self.sid = sid
        self.values = list(values)
        self.seqs = [0] * len(self.values)
        n = len(self.values)
        self.roles: list[tuple[str, int, str | None]] = [("param", -1, None)] * n
        self.conjs: list[tuple[tuple[tuple[str, int], ...], int]] = []
        self.residual: list[tuple] = []
        self.timed = False  # a predicate reads the event's publication time (elapsed())
        # per conjunction, the bounds its attribute expressions put on one attribute, `attr op E`
        # or `abs(attr - E) < W`, E and W over parameters and the publication time (what the
        # matcher and the summaries narrow by: the conjunction's *version*, _evolving), and its
        # time switches; `moves`: whether one reads the time (the version then moves with it:
        # an evolving subscription), else it changes only with an UPD (a game's area of interest)
        self.evolving: list[tuple[Bound, ...]] = []
        self.moves: list[bool] = []
        self.bound_vars: list[tuple] = []  # per conjunction, per bound of `evolving`: the variables it reads
        nodes = 0  # of the attribute expressions so far: counted before each conjunction compiles
        for ci, conj in enumerate(spec):
            try:
                constraints, switch, trees = conj
                constraints = tuple((str(a), v) for a, v in constraints)
            except (TypeError, ValueError):
                raise MessageError(f"conjunction {ci} is malformed") from None
            for attr, var in constraints:
                t = etype.schema.get(attr)
                if t is None:
                    raise MessageError(f"conjunction {ci} constrains unknown attribute {attr!r}")
                self._claim(var, ("constraint", ci, attr))
                _check_constraint(attr, t, self.values[var])
            if switch != -1:
                self._claim(switch, ("switch", ci, None))
                if type(self.values[switch]) is not bool:
                    raise MessageError(f"switch variable {switch} must be a bool")
            try:
                trees = tuple(trees)
                nodes += sum(1 for t in trees for _ in tree_nodes(t))
                if nodes > MAX_EXPRESSION_NODES:
                    raise MessageError(f"the attribute expressions of its conjunctions 0..{ci} have more than "
                                       f"{MAX_EXPRESSION_NODES} nodes")
                preds, timed, bounds, moves, bound_vars = _compiled(repr(trees), trees, etype.attrs, n)
            except (TreeError, TypeError) as e:
                raise MessageError(f"conjunction {ci}: {e}") from None
            self.conjs.append((constraints, switch))
            self.residual.append(preds)
            self.timed = self.timed or timed
            self.evolving.append(bounds)
            self.moves.append(moves)
            self.bound_vars.append(bound_vars)
        self.switched_on = {ci for ci in range(len(self.conjs)) if self.active(ci)}

    def _claim(self, var: Any, role: tuple[str, int, str | None]) -> None:
        """Give a variable its one role: an UPD of it changes one constraint or one switch (a
        variable in two places would move one of them, and the index keep the other as it was)."""
        _check_var(var, len(self.values))
        if self.roles[var][0] != "param":
            raise MessageError(f"variable {var} is both {_role(self.roles[var])} and {_role(role)}")
        self.roles[var] = role

    def active(self, ci: int) -> bool:
        switch = self.conjs[ci][1]
        return switch < 0 or bool(self.values[switch])

    def filter(self, ci: int) -> dict:
        values = self.values
        return {a: values[v] for a, v in self.conjs[ci][0] if not values[v].is_wildcard()}

    def check(self, var: Any, value: Any, seq: Any) -> Any:
        """The value an update would store (a SetDelta applied to the set it changes), or
        `STALE` (an older sequence number than one applied); MessageError if it does not fit, or
        if its sequence number is implausibly far ahead (MAX_SEQ_STEP).
        Changes nothing: an UPD is checked whole before any of it is stored."""
        values = self.values
        if type(var) is not int or not 0 <= var < len(values):
            _check_var(var, len(values))  # raises
        if type(seq) is not int:
            raise MessageError("sequence numbers must be ints")
        last = self.seqs[var]
        if seq <= last:
            return STALE
        if seq - last > MAX_SEQ_STEP:
            raise MessageError(f"variable {var}: sequence number {seq} jumps more than {MAX_SEQ_STEP} "
                               f"ahead of the last applied, {last}; the variable keeps its value")
        what = self.roles[var][0]
        old = values[var]
        kind = type(value)
        # (`kind is Interval` first: a moved bound, the common UPD, skips the isinstance calls)
        if kind is not Interval and isinstance(value, SetDelta) and isinstance(old, ValueSet):
            value = value.apply(old)
            kind = type(value)
        if what == "constraint":
            if kind is not type(old) or (kind is not Interval and not isinstance(value, (Interval, ValueSet))):
                raise MessageError(f"variable {var} must stay a {type(old).__name__}")
        elif what == "switch" and type(value) is not bool:
            raise MessageError(f"switch variable {var} must be a bool")
        return value

    def store(self, var: int, value: Any, seq: int) -> tuple[str, int, str | None]:
        """Store a value `check` returned; the variable's role."""
        self.seqs[var] = seq
        self.values[var] = value
        return self.roles[var]

    def residual_holds(self, ci: int, event_values: tuple, time: float) -> bool:
        """The conjunction's predicates the matcher does not decide: attribute expressions, and
        evolving predicates (the matcher holds only their version over a window: _evolving),
        evaluated at the event's publication time (the evolution variable's snapshot where the
        event entered the overlay: paper 003 §V-D), so that every broker and the subscriber agree."""
        if self.timed:
            event_values = (*event_values, time)
        vs = self.values
        for p in self.residual[ci]:
            if not p(event_values, vs):
                return False
        return True


@lru_cache(maxsize=4096)
def _compiled(text: str, trees: tuple, attrs: tuple, n_vars: int) -> tuple[tuple, bool, tuple[Bound, ...], bool,
                                                                         tuple]:
    """A conjunction's attribute expressions, compiled: the exact predicates, whether one reads
    the publication time, its bounds for versions (attr, op, E) and time switches (None, op, (L,
    R)), what a version narrows or turns off while the switch cannot hold (an expired
    subscription), each side compiled once for the hulls taken of it, and whether one of them
    reads the time (the version moves). Shared by the subscriptions that send the same trees (the
    objects of one class: a game's players), as the closures keep no state of their own.
    `text` (the trees' repr) is the key: trees that compare equal may differ (1 and 1.0, 0.0 and
    -0.0), and an int attribute times 1 is exact where times 1.0 rounds."""
    preds = tuple(compile_predicate(t, len(attrs), n_vars) for t in trees)
    found = [(t, b) for t in trees for b in implied_bounds(t, attrs)]
    bounds: list[Bound] = [(a, op, (Ranged(e[0]), Ranged(e[1])) if op.startswith("near") else Ranged(e))
                           for _, (a, op, e) in found]
    switches: list[Bound] = [(None, sw[0], (Ranged(sw[1]), Ranged(sw[2])))
                             for sw in (time_switch(t) for t in trees) if sw]
    moves = bool(switches) or any(reads_time(t) for t, _ in found)
    bound_vars = tuple(_vars_in(e) for _, (_, _, e) in found) + tuple(
        _vars_in(sw[1:]) for sw in (time_switch(t) for t in trees) if sw)
    return preds, any(reads_time(t) for t in trees), tuple(bounds + switches), moves, bound_vars


def _vars_in(tree: Any) -> frozenset:
    """The variables (("v", i) nodes) a tree, or a tuple of trees, reads."""
    found, stack = set(), [tree]
    while stack:
        t = stack.pop()
        if type(t) is tuple and t:
            if len(t) == 2 and t[0] == "v" and type(t[1]) is int:
                found.add(t[1])
            else:
                stack.extend(x for x in t if type(x) is tuple)
    return frozenset(found)


def _role(role: tuple[str, int, str | None]) -> str:
    what, ci, attr = role
    return f"the switch of conjunction {ci}" if what == "switch" else f"the constraint on {attr!r} in conjunction {ci}"


def _check_var(var: Any, n: int) -> None:
    if type(var) is not int or not 0 <= var < n:
        raise MessageError(f"variable {var!r} out of range 0..{n - 1}")


def _check_constraint(attr: str, t: type, value: Any) -> None:
    want = Interval if t in (int, float) else ValueSet
    if not isinstance(value, want):
        raise MessageError(f"attribute {attr!r} of type {t.__name__} needs a {want.__name__} "
                           f"constraint, got {type(value).__name__}")
