"""What a broker holds, read table by table, for the convergence and leak tests.

`leftovers(broker)` names every table that still holds something once no client is left (the
broker links of the topology are all that may remain); `check_converged(brokers, clients)` checks,
after quiescence, that each broker's state is what one built from scratch from the live
subscriptions would hold: the summary each neighbour got, the subscriptions (`lookup`) and their
values (broker variables), and the matcher's answers.
"""

from __future__ import annotations

import random
from typing import Any, Iterable

from eventpy.runtime.broker import Broker
from eventpy.runtime.matching._poset import order_key as _order
from eventpy.runtime.matching import AdaptiveMatcher, FastIntMatcher, NaiveMatcher, PosetMatcher
from eventpy.runtime.model import EventType, filter_lub


# -- leaks ----------------------------------------------------------------------------------------------
def _matcher_tables(m: Any) -> dict[str, int]:
    """Sizes of a matcher's internal tables (what an empty one has: zeros)."""
    if isinstance(m, AdaptiveMatcher):
        return _matcher_tables(m.inner)
    out = {"entries": len(m)}
    if isinstance(m, FastIntMatcher):
        out["partitions"] = len(m._parts)
        out["rest_slots"] = len(m._rest.slot)
        for engine in (m._rest, *m._parts.values()):
            for attr, ix in engine.index.items():
                out[f"constrained[{attr}]"] = out.get(f"constrained[{attr}]", 0) + ix.constrained
                if hasattr(ix, "incl"):
                    out[f"incl[{attr}]"] = out.get(f"incl[{attr}]", 0) + len(ix.incl) + len(ix.excl) + len(ix.sets)
    elif isinstance(m, PosetMatcher):
        out["nodes"] = len(m._node_of) + len(m._by_canon) + len(m._roots)
    elif isinstance(m, NaiveMatcher):
        out["filters"] = len(m._filters) + len(m._compiled)
    return out


def _summary_tables(s: Any) -> dict[str, int]:
    if s.name == "none":  # NoSummary: no broker upstream reads one, none is kept
        return {}
    if s.name == "poset":
        return {"poset": len(s.poset), **{f"poset.{k}": v for k, v in _matcher_tables(s.poset).items()}}
    out = {"entries": len(s.entries), "aggs": len(s.aggs), "cache": len(s._cache),
           "dirty": len(s._dirty), "added": len(s._added),
           "wild": sum(map(len, s.wild.values())), "inc": sum(map(len, s.inc.values())),
           "exc": sum(map(len, s.exc.values()))}
    for a, heap in (*s.lo.items(), *s.hi.items()):
        out["heap_items"] = out.get("heap_items", 0) + len(heap.heap) + len(heap.of)
    return out


def leftovers(b: Broker, links: Iterable = ()) -> dict[str, Any]:
    """Every table of `b` holding something beyond its `links` (the live neighbours), by name."""
    links = set(links)
    found: dict[str, Any] = {}

    def note(name: str, value: Any) -> None:
        if value:
            found[name] = value

    note("links", sorted(map(str, set(b.links) - links)))
    note("broker_links", sorted(map(str, b.broker_links - links)))
    note("types", sorted(b.types))
    for name, ts in b.types.items():  # (what a type still there holds)
        note(f"{name}.subs", sorted(map(str, ts.subs)))
        note(f"{name}.pubs", ts.pubs)
        note(f"{name}.sent", ts.sent)
        note(f"{name}.seen", ts.seen)
        note(f"{name}.adv_sent", ts.adv_sent)
        note(f"{name}.moving", ts.moving)
        note(f"{name}.late_links", ts.late_links)
        note(f"{name}.matcher", {k: v for k, v in _matcher_tables(ts.matcher).items() if v})
        note(f"{name}.summary", {k: v for k, v in _summary_tables(ts.summary).items() if v})
        if ts.cache is not None:
            note(f"{name}.cache", len(ts.cache.slots))
    note("evolving.members", b.evolving.members)
    note("acks.forwarded", {k: v for k, v in b.acks.forwarded.items() if k not in links or v - links})
    note("acks.waits", b.acks.waits)
    note("flushes.waits", b.flushes.waits)
    note("flushes.reached", {k: v for k, v in b.flushes.reached.items() if k not in links or v - links})
    note("unknown_pub_notes", {p for p in b._unknown_pubs if p[0] not in links})
    return found


# -- convergence ----------------------------------------------------------------------------------------
def expected_summary(b: Broker, etype: str, neighbor: Any) -> list[dict]:
    """What a broker built from scratch from the same live subscriptions sends `neighbor`: the
    LUB (attribute summary) or the covering roots (poset summary) of every active conjunction
    held from another link, computed here without the broker's incremental structures."""
    ts = b.types[etype]
    flts = [(link, b._version(ts, state, ci)) for (link, _), state in ts.subs.items()
            for ci in state.switched_on if link != neighbor]
    if b.summary_name == "poset":
        poset = PosetMatcher(ts.etype)
        for i, (_, f) in enumerate(flts):
            poset.add(i, dict(f))
        new = poset.summary()
    else:
        acc = None
        for _, f in flts:
            if any(c.is_empty() for c in f.values()):
                continue
            acc = dict(f) if acc is None else filter_lub(acc, f)
        new = [] if acc is None else [acc]
    new.sort(key=_order)
    return new


def check_converged(brokers: dict[str, Broker], clients: dict[str, Any], rng: random.Random,
                    probes: int = 40) -> None:
    """After quiescence: every summary sent is the one built from scratch and is what the
    neighbour holds (its lookup entry and broker variables); every client's open subscription is
    held at its broker with the client's current values, and nothing else is; every matcher
    answers as a naive matcher built from the live subscriptions' filters."""
    for name, b in brokers.items():
        for etype, ts in b.types.items():
            for link in b.broker_links:
                want = expected_summary(b, etype, link) if link in ts.upstream else []
                sent = ts.sent.get(link)
                got = [] if sent is None else sent.filters
                assert got == want, (name, etype, link, got, want)
                peer = brokers[link].types.get(etype)
                held = {sid: st for (lk, sid), st in (peer.subs.items() if peer else ()) if lk == name}
                if sent is None:
                    assert not held, (name, link, etype, "holds subscriptions nobody sent", held)
                else:
                    assert list(held) == [sent.sid], (name, link, etype, list(held), sent.sid)
                    flat = [f[a] for f in sent.filters for a in sorted(f)]
                    assert held[sent.sid].values == flat, (name, link, etype)
            _check_matcher(name, b, ts, rng, probes)
    for cname, c in clients.items():
        core, home = c.core, brokers[c.broker]
        held = {(etype, sid) for etype, ts in home.types.items() for (lk, sid) in ts.subs if lk == cname}
        want = {(st.etype.name, sid) for sid, st in core.subs.items()}
        assert held == want, (cname, held, want)
        for sid, st in core.subs.items():
            assert home.types[st.etype.name].subs[(cname, sid)].values == list(st.values), (cname, sid)


def _check_matcher(name: str, b: Broker, ts: Any, rng: random.Random, probes: int) -> None:
    naive = NaiveMatcher(ts.etype)
    for (link, sid), state in ts.subs.items():
        for ci in state.switched_on:
            naive.add((link, sid, ci), dict(b._indexed(state, ci, b._version(ts, state, ci))))
    assert set(ts.matcher.keys()) == set(naive.keys()), (name, ts.etype.name)
    for _ in range(probes):
        values = random_event(ts.etype, rng)
        assert sorted(map(repr, ts.matcher.match(values))) == sorted(map(repr, naive.match(values))), (
            name, ts.etype.name, values)


_DOMAIN = {int: [-3, -1, 0, 1, 2, 5, 9], float: [-2.0, -0.5, 0.0, 0.5, 1.0, 2.5, 3.0, 7.0],
           str: ["IBM", "HP", "ORCL", "SUN"], bool: [True, False]}


def random_event(etype: EventType, rng: random.Random) -> tuple:
    return tuple(rng.choice(_DOMAIN[t]) for t in etype.schema.values())
