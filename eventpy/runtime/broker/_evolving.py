"""Evolving subscriptions at the broker that holds them (paper 003 §IV, §V): the engines, and the
overestimating version each one sends upstream.

`Broker(evolving_engine=...)` chooses how the broker matches events against the evolving
conjunctions it holds; every engine checks each candidate exactly, at the event's publication time
(`SubState.residual_holds`), so all three deliver the same events:
* "ves" (§IV-A, §V-A; the default): every `horizon` seconds (the paper's minimum evolution
  interval) the broker recomputes, for each evolving subscription it holds, the values each
  evolving bound takes over the window of publication times [R - horizon, R + 2 * horizon], R being
  the time of that recomputation (one R for all, so one window for the whole broker). That
  *version* goes into its matcher, so an event finds its candidates through the index instead of
  every evolving subscription of its type being evaluated. An event published outside the window
  (a broker far behind) is matched by evaluating every evolving subscription of its type exactly,
  as LEES would. The cost grows with the subscriptions and the evolution rate (1 / horizon).
* "lees" (§IV-B, §V-B): the evolving bounds stay out of the matcher, which holds the conjunction's
  other constraints; every candidate it returns is evaluated exactly. Nothing is recomputed as
  time passes; the cost grows with the publications and their candidates.
* "clees" (§IV-C, §V-C): as LEES, with a cached version of each candidate built lazily by the
  publications and kept for `cache_ttl` seconds (_clees, which says where it differs from the
  paper and why).

What every engine sends upstream is VES's version over the window (the paper's overestimating
version for forwarding, §IV-A). 003's LEES and CLEES are per-broker designs (each PADRES broker
holds the evolving subscription itself), but EventPy's brokers upstream hold summaries of plain
intervals and cannot evaluate elapsed(): they need an interval that covers the subscription, and
the version over the window is the narrowest one recomputed once a horizon (sending the
conjunction without its evolving bounds would draw every event of a moving window's type across the
overlay, and keep an expired subscription's events coming). So the engine chooses how the broker
matches, not what crosses the overlay: the same summary traffic under all three, as 003 §VI-B
measures. The recomputation runs on the broker's timer (`tick`), and also when an event of an
evolving type arrives after the window was due to move (a broker nothing ticks, the embedded one,
stays fresh through its own traffic). A type no broker upstream reads summaries of (the single
game server of 003 §VI-C) keeps no summary until one does (NoSummary): LEES and CLEES then
maintain nothing as time passes, as the paper's do.

The previous version covers up to R + horizon, so an upstream broker holding either one admits
every event published within a horizon of its installation, as long as summaries take less than
`horizon` to cross the overlay. An event older than the window (late) travels by the summaries'
mark instead (_late).
"""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any, Callable

from ...guards._hull import hull, never_holds
from ...guards._plan import EMPTY_INTERVAL, EMPTY_SET, integral
from .._params import INT_MAX, INT_MIN
from ..model import filter_matches

DEFAULT_HORIZON = 1.0
DEFAULT_TTL = 1.0  # CLEES's time threshold TT; 003 §VI-C sets TT and VES's MEI both to 1 s
EVOLVING_ENGINES = ("ves", "lees", "clees")


def choose_engine(engine: str, cache_ttl: float, index_evolving: bool | None) -> str:
    """The engine Broker(evolving_engine=..., cache_ttl=...) asked for; `index_evolving` is the
    boolean this option replaced (True: "ves", False: "lees"), deprecated."""
    if index_evolving is not None:
        warnings.warn("Broker(index_evolving=...) is deprecated; use evolving_engine=\"ves\" (True) or "
                      "\"lees\" (False)", DeprecationWarning, stacklevel=3)
        if engine != "ves":
            raise ValueError(f"index_evolving={index_evolving!r} and evolving_engine={engine!r}: "
                             "give evolving_engine only")
        engine = "ves" if index_evolving else "lees"
    if engine not in EVOLVING_ENGINES:
        raise ValueError(f"unknown evolving_engine {engine!r}; choose ves, lees or clees")
    if isinstance(cache_ttl, bool) or not isinstance(cache_ttl, (int, float)) or not 0 < cache_ttl < math.inf:
        raise ValueError(f"cache_ttl (the seconds a CLEES version is used) must be above 0 s, not {cache_ttl!r}")
    return engine


class EvolvingHulls:
    def __init__(self, horizon: float, overlay_clock: Callable[[], float]) -> None:
        if isinstance(horizon, bool) or not isinstance(horizon, (int, float)) or not horizon > 0:
            raise ValueError(f"the evolution horizon must be above 0 s, not {horizon!r}")
        self.horizon = horizon
        self.overlay_clock = overlay_clock  # the clock of publication times (Pub.time)
        self.anchor: float | None = None  # R: when the versions were last recomputed
        # event type -> (link, sid) -> SubState, for the types with evolving subscriptions
        self.members: dict[str, dict[Any, Any]] = {}

    def window(self) -> tuple[float, float]:
        r = self.anchor if self.anchor is not None else self.overlay_clock()
        return r - self.horizon, r + 2 * self.horizon

    def covers(self, t: float) -> bool:
        """Whether the current versions hold every value an event published at t can match."""
        lo, hi = self.window()
        return lo <= t <= hi

    def track(self, etype: str, key: Any, state: Any) -> None:
        if self.anchor is None:
            self.anchor = self.overlay_clock()
        self.members.setdefault(etype, {})[key] = state

    def forget(self, etype: str, key: Any) -> None:
        members = self.members.get(etype)
        if members is not None and members.pop(key, None) is not None:
            if not members:
                del self.members[etype]
                if not self.members:
                    self.anchor = None

    def next_due(self) -> float | None:
        """When the versions are next recomputed, on the overlay clock."""
        return None if self.anchor is None else self.anchor + self.horizon

    def stale(self) -> bool:
        return self.anchor is not None and self.overlay_clock() >= self.anchor + self.horizon

    def advance(self) -> None:
        """Move the window to now (the versions are then recomputed by the broker)."""
        self.anchor = self.overlay_clock()


def version_filter(state: Any, ci: int, schema: dict[str, type], window: tuple[float, float]) -> dict:
    """The conjunction's version over the window: its constraints, each evolving bound narrowed to
    the values it takes over the window (a bound that cannot be bounded stays open)."""
    flt = state.filter(ci)
    for attr, op, tree in state.evolving[ci]:
        if attr is None:  # a time switch: off over the whole window, the version admits nothing
            if never_holds(op, tree[0], tree[1], state.values, *window):
                # by an empty first attribute, the other constraints kept: VES's index updates a
                # version in place, attribute by attribute (_revise), and a version of the first
                # attribute only had left the switch, once on, with no constraint at all (it
                # matched every event, `s == f` or not)
                first = next(iter(schema))
                flt[first] = EMPTY_INTERVAL if schema[first] in (int, float) else EMPTY_SET
                return flt
            continue
        iv = _bound_hull(state, op, tree, schema[attr], window)
        if iv is None:
            continue
        cur = flt.get(attr)
        flt[attr] = iv if cur is None else cur.intersect(iv)
    return flt


def _bound_hull(state: Any, op: str, tree: Any, kind: type, window: tuple[float, float]) -> Any:
    """The values one bound admits over the window, as the attribute's summaries carry them
    (None: it cannot be bounded)."""
    iv = hull(op, tree, state.values, *window)
    if iv is None:
        return None
    return integral(iv) if kind is int else outward_floats(iv)


def version_of(state: Any, ci: int, schema: dict[str, type], window: tuple[float, float], attr: str) -> Any:
    """One attribute of the conjunction's version (`version_filter`, for a conjunction without
    time switches): its constraint narrowed by the bounds on that attribute; None if it has none."""
    cur = state.filter(ci).get(attr)
    for a, op, tree in state.evolving[ci]:
        if a != attr:
            continue
        iv = _bound_hull(state, op, tree, schema[attr], window)
        if iv is not None:
            cur = iv if cur is None else cur.intersect(iv)
    return cur


def outward_floats(iv: Any) -> Any:
    """A float attribute's hull with every int end beyond the wire's 64 bits (a parameter near
    2**64 plus elapsed()) as a float rounded outwards: the version still covers the exact bound,
    and the summary that carries it can be sent (integral() does this for int attributes)."""
    lo, hi = iv.lo, iv.hi
    if type(lo) is float and type(hi) is float:
        return iv  # the common case, and namedtuple._replace costs more than the rest of a bound
    if isinstance(lo, int) and not INT_MIN <= lo <= INT_MAX:
        lo = _float_outward(lo, -math.inf)
    if isinstance(hi, int) and not INT_MIN <= hi <= INT_MAX:
        hi = _float_outward(hi, math.inf)
    return iv._replace(lo=lo, hi=hi)


def _float_outward(v: int, towards: float) -> float:
    """A float past the int `v` in the direction `towards`. An int past the floats (math.floor
    of 1e308, times 10) does not convert: float() raised OverflowError out of the broker's SUB
    and timer, refusing the subscription and stopping a TCP broker's timers."""
    try:
        return math.nextafter(float(v), towards)
    except OverflowError:  # beyond the largest float: the float nearest it on that side
        return towards if (v > 0) == (towards > 0) else math.copysign(sys.float_info.max, v)


class Evolving:
    """The evolving engines of a broker, for Broker (a mixin reading its state: `types`,
    `evolving`, `evolving_engine`, `_stats`, `_propagate`)."""

    def _version(self, ts: Any, state: Any, ci: int) -> dict:
        """What the summaries get of a conjunction: its filter, or its version."""
        if not state.evolving[ci]:
            return state.filter(ci)
        return version_filter(state, ci, ts.etype.schema, self.evolving.window())

    def _indexed(self, state: Any, ci: int, version: dict) -> dict:
        """What the matcher gets: VES's version; under LEES and CLEES the conjunction without its
        evolving bounds (003 §V-B, §V-C: the non-evolving predicates stay in the matcher)."""
        return version if self.evolving_engine == "ves" or not state.moves[ci] else state.filter(ci)

    def _revise(self, ts: Any, state: Any, ci: int, attrs: Any = ()) -> None:
        """Recompute a conjunction's version after the window moved or a value it reads changed,
        `attrs` being the constraints that changed: in the index (VES: its evolving attributes and
        `attrs`; LEES and CLEES: `attrs` only) and, if a broker upstream reads them, in the
        summaries."""
        key = (state.link, state.sid, ci)
        flt = None
        moves = state.moves[ci]
        if self.evolving_engine == "ves" or not moves:  # (a version that does not move is indexed by every engine)
            flt = self._version(ts, state, ci)
            touched = {a if a is not None else next(iter(ts.etype.schema)) for a, _, _ in state.evolving[ci]}
            for attr in touched.union(attrs):  # a time switch turns the version off on the first attribute
                ts.matcher.update(key, attr, flt.get(attr))
        elif attrs:
            static = state.filter(ci)
            for attr in attrs:
                ts.matcher.update(key, attr, static.get(attr))
        if ts.upstream or not moves:  # (no reader: NoSummary; Upstream._summarize rebuilds it when one comes)
            ts.summary.set_entry(state.link, key, flt if flt is not None else self._version(ts, state, ci))
        elif flt is None:
            return  # nothing was recomputed
        self._stats["versions_recomputed"] += 1

    def _revise_bounds(self, ts: Any, state: Any, ci: int, var: int) -> bool:
        """A parameter of a version that does not move (an area of interest) changed: only the
        attributes whose bounds read it are recomputed, each moved in the index and the summary
        alone (a player's move is one bound of two: recomputing the whole version cost the
        broker twice the hulls and index moves, and a pass over the summary's attributes).
        False if no bound reads it."""
        attrs = {a for (a, _, _), reads in zip(state.evolving[ci], state.bound_vars[ci]) if var in reads}
        if not attrs:
            return False
        key = (state.link, state.sid, ci)
        window = self.evolving.window()
        schema = ts.etype.schema
        for attr in attrs:
            c = version_of(state, ci, schema, window, attr)
            ts.matcher.update(key, attr, c)
            ts.summary.update_entry(state.link, key, attr, c)
        self._stats["versions_recomputed"] += 1
        return True

    def _refresh_versions(self, out: list) -> None:
        """The window moves to now: every version someone reads is recomputed (VES's matcher;
        the summaries of the types a broker upstream reads)."""
        evolving = self.evolving
        evolving.advance()
        ves = self.evolving_engine == "ves"
        for etype, members in evolving.members.items():
            ts = self.types[etype]
            if not ts.upstream and not ves:
                continue  # nothing to recompute: LEES and CLEES evaluate on demand
            for state in members.values():
                for ci in state.switched_on:
                    if state.moves[ci]:
                        self._revise(ts, state, ci)
            if ts.upstream:
                self._propagate(ts, out)

    def _evolving_keys(self, ts: Any, values: tuple, time: float) -> list:
        """The candidates for an event of a type with evolving subscriptions (each is then checked
        exactly): the matcher's (LEES); those of them their cached versions admit (CLEES); the
        matcher's (VES), and for an event published outside the versions' window also every
        evolving conjunction whose own constraints hold."""
        engine = self.evolving_engine
        if engine != "ves":
            keys = ts.matcher.match(values)
            return ts.cache.filter(keys, values, time) if engine == "clees" and keys else keys
        keys = ts.matcher.match(values)
        if self.evolving.covers(time):
            return keys
        self._stats["evolving_outside_window"] += 1
        keys = list(keys)  # extended below: not a list a matcher might keep
        seen = set(keys)
        index = ts.etype.index
        for (link, sid), state in self.evolving.members.get(ts.etype.name, {}).items():
            for ci in state.switched_on:
                key = (link, sid, ci)
                if state.moves[ci] and key not in seen and filter_matches(state.filter(ci), index, values):
                    keys.append(key)
                    seen.add(key)
        return keys
