"""One peer of the broker-less overlay (paper 004 §4-§5): a publisher or a subscriber, sans-I/O.

A peer keeps its incoming connections per dz-expression of its peer-level subscription (`fin`:
dz -> parents) and its outgoing ones per child (`fout`: child -> {dz: the child's delay}). Every
handler appends the messages it sends to `out` as (kind, src, dst, payload) and returns nothing;
the network (`_network.Network`) delivers them one cycle later, as PeerSim's cycle-driven engine
does. What a peer knows of others is a `Desc` from the peer-sampling service or from a hint.

Delays are hop counts (§2). Δ(publisher) = 0; a subscriber's Δ >= 1.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from os.path import commonprefix

from ._accuracy import Accuracy
from ._checks import share, whole_number
from ._messages import ACK, CONNECT, CYCLE, DISCONNECT, HINT, Desc
from ._space import Box, Space, apart, box_contains, covered, matches, overlaps

# How long a parent that closed a cycle or made us late is not asked again: long enough for the
# overlay around it to change, not for ever (a peer collected permanent bans on the few peers that
# could be its parent, and waited out a coarsening instead)
BAN_CYCLES = 50


def _as_box(space: Space, user) -> Box:
    """A box given as d (lo, hi) pairs of numbers, as a tuple of float pairs."""
    try:
        box = tuple((float(lo), float(hi)) for lo, hi in user)
        ok = len(box) == space.d and not isinstance(user, str)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"a box of this space is {space.d} (lo, hi) ranges, one per dimension "
                         f"({', '.join(d.name for d in space.dims)}), not {user!r}: build it with "
                         "Space.box")
    return box


class Peer(Accuracy):
    """A subscriber (`user` is its user-level box, Δ >= 1) or a publisher (Δ = 0, `user` is its
    advertisement). `r` is the number of dz-expressions of its first, coarse mapping (§5.1, new
    subscribers); `fp_budget` the false positives it accepts, as a share of all events (§6)."""

    def __init__(self, pid: int, space: Space, user: Box, *, delay: int, out_degree: int,
                 publisher: bool = False, r: int = 4, fp_budget: float = 0.0, timeout: int = 10,
                 view_size: int = 50, rng: random.Random | None = None,
                 on_event: Callable | None = None, accept: Callable | None = None) -> None:
        if publisher and delay != 0:
            raise ValueError("a publisher's delay is 0 (it is the source)")
        if not publisher:
            whole_number("delay", delay, "a subscriber's delay requirement, in hops")
        whole_number("out_degree", out_degree, "the out-degree constraint m, the children a peer takes")
        whole_number("r", r, "the dz-expressions of the first mapping (§5.1)")
        share("fp_budget", fp_budget, "the false positives accepted, as a share of all events")
        user = _as_box(space, user)
        self.id = pid
        self.space = space
        self.user = user
        self.delay = delay
        self.m = out_degree
        self.publisher = publisher
        self.fp_budget = fp_budget
        self.timeout = timeout
        self.view_size = view_size
        self.rng = rng or random.Random(pid)
        self.on_event = on_event
        self.accept = accept  # the rest of the local filter, beyond the box (e.g. a guard)
        # a publisher's advertisement and a new subscriber's first mapping (§5.1, Algorithm 4)
        self.dz: list[str] = space.coarse(user, r)
        self.fin: dict[str, set[int]] = {dz: set() for dz in self.dz}
        self.fin_pub: set[int] = set()  # which parents are publishers
        self.fout: dict[int, dict[str, int]] = {}
        self.view: dict[int, tuple[Desc, int]] = {}  # pView: id -> (descriptor, cycle last seen)
        self._oldest = 0  # at most the oldest cycle in the view (gossip)
        self.publishers: dict[int, tuple[Desc, int]] = {}
        self.pending: dict[str, dict[int, int]] = {}  # dz -> {asked peer: cycle asked}
        self.uncovered_since: dict[str, int] = {}
        self.banned: dict[int, int] = {}  # peer -> cycle until which it is not asked again
        self.connects = 0  # CONNECT requests sent (control overhead, §6)
        self.window: list[tuple[int, int, dict[str, int]]] = []  # per cycle: (received, fp, per dz)
        self.cur = [0, 0, {}]
        self.delivered = 0
        self.false_positives = 0
        self.now = 0  # the current cycle, set by the network
        self.total_rate = 0.0  # events per cycle in the whole system (aggregated, §5.1)
        self.known: dict[int, Desc] = {}  # the latest descriptor each neighbour sent us

    # --- what others learn about us ---------------------------------------------------------

    def desc(self) -> Desc:
        return Desc(self.id, self.delay, tuple(self.dz), self.publisher, self.depth(), self.rates())

    def depth(self) -> int | None:
        """How many hops events take to reach us: 0 for a publisher; else the deepest of our
        expressions, each one more than its parent's (as the parent last told us) or 1 under
        publishers; None while an expression has no parent. A peer choosing a parent of equal
        Δ needs it (§4: equal delays may be violated), before any event has told it."""
        if self.publisher:
            return 0
        worst = 0
        for parents in self.fin.values():
            subs = [q for q in parents if q not in self.fin_pub]
            if subs:
                d = self.known.get(subs[0])
                if d is None or d.depth is None:
                    return None
                worst = max(worst, d.depth + 1)
            elif parents:
                worst = max(worst, 1)
            else:
                return None
        return worst if self.dz else None

    def rates(self) -> tuple[tuple[str, float], ...]:
        n = max(len(self.window), 1)
        per: dict[str, int] = {}
        for _, _, by in self.window:
            for dz, c in by.items():
                per[dz] = per.get(dz, 0) + c
        return tuple((dz, per.get(dz, 0) / n) for dz in self.dz) if self.window else ()

    # --- Algorithm 1: overlay maintenance -----------------------------------------------------

    def parents(self) -> set[int]:
        return set().union(*self.fin.values()) if self.fin else set()

    def is_covered(self, dz: str) -> bool:
        """Algorithm 1 line 4: covered by a subscriber parent, or by all relevant publishers.
        With no relevant publisher known, not covered (the paper's "all" would hold vacuously):
        a peer cannot tell a sub-space nobody advertises from one whose publishers it has not
        heard of yet, so it keeps looking, and may coarsen on the timeout (Algorithm 3 line 2)."""
        got = self.fin.get(dz, ())
        if any(p not in self.fin_pub for p in got):
            return True
        relevant = self.relevant_publishers(dz)
        return bool(relevant) and relevant <= set(got)

    def relevant_publishers(self, dz: str) -> set[int]:
        return {pid for pid, (d, _) in self.publishers.items() if any(overlaps(dz, a) for a in d.dz)}

    def converged(self) -> bool:
        return self.publisher or all(self.is_covered(dz) for dz in self.dz)

    def gossip(self, sample: list[Desc], publishers: Iterable[Desc] = ()) -> None:
        """Algorithm 1 lines 8-15: keep the sampled peers whose subscriptions cover ours or are
        covered by ours (publishers in their own list); age the view and drop old entries.
        Publishers are few and stay known until they are found gone (the failure detector, or a
        request they never answered): a top peer that forgot one would think itself covered
        without it."""
        # an entry's age is the cycles since it was seen (it is stored with that cycle): no
        # rewrite of every entry every cycle (a fifth of a cycle's time at 3,000 peers, views
        # being 5% of them); the entries that can be too old are looked for only when the oldest
        # may be (`_oldest`, a lower bound)
        limit = self.now - 2 * self.timeout
        if self._oldest < limit:
            for pid in [pid for pid, (_, seen) in self.view.items() if seen < limit]:
                del self.view[pid]
            self._oldest = min((seen for _, seen in self.view.values()), default=self.now)
        now = self.now
        mine = commonprefix(self.dz) if self.dz else ""
        for d in sample:
            if d.id == self.id:
                continue
            if d.id in self.known:  # a neighbour's newer descriptor (its depth, its subscription)
                self.known[d.id] = d
            if not d.dz or not self.dz or apart(mine, commonprefix(d.dz)):
                continue  # every expression of one lies outside every expression of the other
            if any(covered(a, b) or covered(b, a) for a in self.dz for b in d.dz):
                if d.publisher:
                    self.publishers[d.id] = (d, 0)
                else:
                    self.view[d.id] = (d, now)
        for d in publishers:  # the sampled peers' publisher lists, exchanged as views are
            if d.id not in self.publishers and any(overlaps(a, b) for a in self.dz for b in d.dz):
                self.publishers[d.id] = (d, 0)
        if len(self.view) > self.view_size:  # the youngest stay (seen last), ties in view order
            for pid, _ in sorted(self.view.items(), key=lambda kv: -kv[1][1])[self.view_size:]:
                del self.view[pid]

    def learn(self, d: Desc) -> None:
        """A hint (POTENTIALPARENT) or a peer that answered: into the view."""
        if d.id != self.id:
            if d.publisher:
                self.publishers[d.id] = (d, 0)
            else:  # learnt while handling messages, before this cycle's gossip: seen a cycle ago,
                # as when the view aged every entry at each gossip
                self.view[d.id] = (d, self.now - 1)
                self._oldest = min(self._oldest, self.now - 1)
            self.known[d.id] = d

    def forget(self, pid: int) -> None:
        self.view.pop(pid, None)
        self.publishers.pop(pid, None)

    def manage(self, now: int, out: list) -> None:
        """Algorithm 1 lines 1-7 (one iteration) and Algorithm 3's timeout (lines 1-3).

        Line 4 reads "if some dz_i is not covered": one request per iteration. Here every
        uncovered expression sends one per cycle, and none while a request for it is
        unanswered (3 cycles): a peer with many expressions otherwise needs as many cycles to
        ask for them all, and repeating a request in flight only doubles the answers."""
        self.now = now
        if self.publisher:
            return
        for pid, until in list(self.banned.items()):
            if until <= now:
                del self.banned[pid]
        for dz in list(self.dz):
            if dz not in self.fin:  # gone by a coarsening earlier in this loop
                continue
            asked = self.pending.get(dz, {})
            for pid, when in list(asked.items()):
                if now - when > 3:  # no answer (the peer left, or the message was lost)
                    del asked[pid]
                    self.forget(pid)
            if self.is_covered(dz):
                self.uncovered_since.pop(dz, None)
                continue
            since = self.uncovered_since.setdefault(dz, now)
            if now - since >= self.timeout and self.coarsen(dz, out):  # Algorithm 3 line 3
                continue
            if asked:
                continue
            parent = self.best_parent(dz, self.view.values())
            if parent is not None:
                self.view.pop(parent.id, None)  # line 6
                self.ask(parent.id, dz, out)
                continue
            # line 5 looks in pView only, which holds no publishers (lines 11-12); §4 (Connection
            # acknowledgement): what no parent subscriber covers is covered by connecting to all
            # the relevant publishers
            for pid in self.relevant_publishers(dz) - self.fin[dz]:
                if pid not in self.banned:
                    self.ask(pid, dz, out)

    def ask(self, pid: int, dz: str, out: list) -> None:
        self.pending.setdefault(dz, {})[pid] = self.now
        self.connects += 1
        out.append((CONNECT, self.id, pid, (dz, self.delay, self.desc())))

    def best_parent(self, dz: str, views, child_delay: int | None = None, exclude: int | None = None) -> Desc | None:
        """findBestParent: a subscriber whose subscription covers dz and whose Δ is at most the
        child's. Preferred: a strictly smaller Δ, then the largest such Δ (tight places near the
        publishers stay free for tight peers), then the most selective covering expression. An
        equal Δ is taken only if the candidate's events arrive early enough (§4, delays equal)."""
        delay = self.delay if child_delay is None else child_delay
        best, best_key = None, None
        for entry in views:
            d = entry[0] if isinstance(entry, tuple) and not isinstance(entry, Desc) else entry
            if d.publisher or d.id in (self.id, exclude) or d.id in self.banned or d.delay > delay:
                continue
            cover = [a for a in d.dz if covered(dz, a)]
            if not cover:
                continue
            if d.delay == delay and (d.depth is None or d.depth + 1 > delay):
                continue
            vol = min(self.space.volume(a) for a in cover)
            key = (d.delay == delay, -d.delay, vol, self.rng.random())
            if best_key is None or key < best_key:
                best, best_key = d, key
        return best

    # --- receiving ---------------------------------------------------------------------------

    def handle(self, kind: str, src: int, payload, now: int, out: list) -> None:
        self.now = now
        if kind == CONNECT:
            self.on_connect(src, *payload, out=out)
        elif kind == ACK:
            self.on_ack(src, *payload, out=out)
        elif kind == DISCONNECT:
            self.on_disconnect(src, *payload)
        elif kind == HINT:
            self.on_hint(*payload)
        elif kind == CYCLE:
            self.on_cycle(*payload, out=out)
        else:
            raise ValueError(f"unknown overlay message {kind!r}")

    def on_connect(self, p: int, dz: str, delay: int, pdesc: Desc, *, out: list) -> None:
        """Algorithm 1 lines 16-29."""
        self.learn(pdesc)
        mine = [a for a in self.dz if covered(dz, a)] if not self.publisher else \
            [a for a in self.dz if overlaps(dz, a)]
        if not mine:  # our subscription changed since the child heard of it
            hint = self.best_parent(dz, list(self.view.values()), delay, exclude=p)
            out.append((HINT, self.id, p, (dz, hint, self.desc())))
            return
        if delay >= self.delay:  # line 17
            self.fout.setdefault(p, {})[dz] = delay
            dropped = self.peers_to_disconnect(p) if len(self.fout) > self.m else []  # lines 19-20
            for t in dropped:  # lines 21-24
                entries = self.fout.pop(t)
                for tdz, tdelay in entries.items():
                    views = list(self.view.values()) + [self.known[c] for c in self.fout if c in self.known]
                    hint = self.best_parent(tdz, views, tdelay, exclude=t)
                    out.append((DISCONNECT, self.id, t, (tdz, "parent")))
                    out.append((HINT, self.id, t, (tdz, hint, self.desc())))
            if p not in dropped:  # lines 25-26
                out.append((ACK, self.id, p, (dz, self.desc())))
        else:  # line 27-29: p's delay is tighter than ours
            # line 28: findBestParent(pView ∪ Fin(q)): our own parents are tighter than us and
            # cover what we subscribe to, the natural hint for a tighter child (pView alone
            # often has none)
            views = list(self.view.values()) + [self.known[a] for a in self.parents() if a in self.known]
            hint = self.best_parent(dz, views, delay, exclude=p)
            out.append((HINT, self.id, p, (dz, hint, self.desc())))

    def peers_to_disconnect(self, new: int) -> list[int]:
        """Algorithm 1 line 20: the child with the most selective subscription, ties to the one
        with the largest delay (§4). Selectivity is the size of what the child subscribes to here
        (the volumes of its expressions with us, summed): by its largest expression alone, a
        child holding four eighths of the space weighed as one holding one eighth.
        On a full tie the newcomer `new` goes: letting an equal incumbent go gains nothing and
        moves its subtree, and peers equal for fewer places then push each other out for ever,
        none uncovered long enough to coarsen (Algorithm 3 line 1)."""
        def key(c: int):
            entries = self.fout[c]
            return (sum(self.space.volume(dz) for dz in entries), -max(entries.values()), c != new)
        return [min(self.fout, key=key)]

    def on_ack(self, q: int, dz: str, qdesc: Desc, *, out: list) -> None:
        """Algorithm 1 lines 30-35. Links are per expression (a child asks for each of its
        expressions, line 7), so "covered exactly once" (line 33) is per expression: a new
        subscriber parent replaces the other parents of that expression. It replaces publisher
        parents too, and an ACK from a publisher where a subscriber covers already is undone:
        line 32 lists subscriber parents only, but §4 has publishers cover only what no
        subscriber parent can, and each extra parent is a duplicate of every event."""
        self.learn(qdesc)
        self.pending.get(dz, {}).pop(q, None)
        if dz not in self.fin:  # we no longer subscribe to it
            out.append((DISCONNECT, self.id, q, (dz, "child")))
            return
        if qdesc.publisher:
            self.fin_pub.add(q)
            if any(p not in self.fin_pub for p in self.fin[dz]):  # a subscriber covers it already
                out.append((DISCONNECT, self.id, q, (dz, "child")))
                return
            self.fin[dz].add(q)
        else:
            for other in list(self.fin[dz]):  # line 33: covered exactly once
                if other != q:
                    self.drop_parent(other, dz, out)
            self.fin[dz].add(q)  # line 31
            if qdesc.delay == self.delay and dz in qdesc.dz:  # lines 34-35: a cycle is possible
                for child, entries in self.fout.items():
                    if entries.get(dz) == self.delay:
                        out.append((CYCLE, self.id, child, (self.id, q, dz, self.delay)))

    def drop_parent(self, q: int, dz: str, out: list) -> None:
        self.fin.get(dz, set()).discard(q)
        out.append((DISCONNECT, self.id, q, (dz, "child")))
        if not any(q in s for s in self.fin.values()):
            self.fin_pub.discard(q)

    def on_cycle(self, originator: int, via: int, dz: str, delay: int, *, out: list) -> None:
        """Algorithm 1 lines 36-42."""
        if originator == self.id:  # line 37-38: the new parent `via` closed a cycle
            if via in self.fin.get(dz, ()):
                self.drop_parent(via, dz, out)
                self.banned[via] = self.now + BAN_CYCLES
            return
        if delay == self.delay and dz in self.dz:  # lines 40-42
            for child, entries in self.fout.items():
                if entries.get(dz) == self.delay:
                    out.append((CYCLE, self.id, child, (originator, via, dz, delay)))

    def on_disconnect(self, src: int, dz: str, role: str) -> None:
        if role == "parent":  # our parent dropped us: for dz, and for the parts of dz we have
            for d, parents in self.fin.items():  # refined and asked it for (remap)
                if src in parents and covered(d, dz):
                    parents.discard(src)
            if not any(src in s for s in self.fin.values()):
                self.fin_pub.discard(src)
            self.banned[src] = self.now + 3  # it let us go: ask its hint (or others) first
        else:  # a child left us
            entries = self.fout.get(src)
            if entries is not None:
                entries.pop(dz, None)
                if not entries:
                    del self.fout[src]

    def on_hint(self, dz: str, hint: Desc | None, sender: Desc) -> None:
        self.pending.get(dz, {}).pop(sender.id, None)
        if sender.id in self.fin.get(dz, ()):  # a parent of the whole refused a part (remap)
            self.fin[dz].discard(sender.id)
            if not any(sender.id in s for s in self.fin.values()):
                self.fin_pub.discard(sender.id)
        if not sender.publisher:
            self.view.pop(sender.id, None)
        if hint is not None:
            self.learn(hint)

    def peer_gone(self, pid: int) -> None:
        """The failure detector says pid is offline: drop it everywhere."""
        for parents in self.fin.values():
            parents.discard(pid)
        self.fin_pub.discard(pid)
        self.fout.pop(pid, None)
        self.forget(pid)
        for asked in self.pending.values():
            asked.pop(pid, None)

    # --- Algorithm 2: event dissemination ----------------------------------------------------

    def receive(self, code: str, point, publisher: int, pub_dz: tuple[str, ...], src: int,
                hops: int, out: list, probe: bool = False) -> list[int]:
        """Algorithm 2 for the first copy of one event (full-depth code `code`) arriving from
        `src` after `hops` hops: the neighbours it goes to next (the network drops later copies).
        A probe (measuring who would get an event) changes nothing."""
        from_child = src in self.fout
        # Algorithm 2 line 9 asks whether the sender is a parent when the event arrives: the local
        # filter below may drop a late parent of equal Δ (§4), and this event must still go down
        # to the children, whose looser Δ it may well meet
        from_parent = src in self.parents()
        if not probe:
            if publisher not in self.publishers and publisher != self.id:  # an event names its source
                self.publishers[publisher] = (Desc(publisher, 0, pub_dz, True, 0, ()), 0)
            # lines 2-4: "dz(publisher) not covered by the parents' dz" is read as §4 explains it,
            # "p is the top most peer": no subscriber parent at all. A peer under a subscriber
            # parent gets the publisher's events through it once the top is placed; where it has
            # only publisher parents, the publisher learnt here makes that expression uncovered
            # (Algorithm 1 line 4) and it asks it from `manage` too. One CONNECT per expression
            # that meets the advertisement, since links are per expression.
            if from_child and not self.publisher:
                mine = [p for p in self.parents() if p not in self.fin_pub]
                if not mine and publisher not in self.parents() and publisher not in self.banned:
                    for dz in self.dz:
                        if any(overlaps(dz, a) for a in pub_dz) and publisher not in self.pending.get(dz, {}):
                            self.ask(publisher, dz, out)
            if not self.publisher:
                self.account(code, point, src, hops, out)
        nxt: list[int] = []
        # lines 6-8: up to subscriber parents that want it. Line 7 sends to every subscriber
        # parent whose subscription holds the event; here only to the parents of our expression
        # that holds it. Up-links matter only while a publisher is placed below the top (§4,
        # Event dissemination): a parent serving another expression of ours gets the event from
        # its own parents once the top peer is under the publisher (lines 2-4), and until then
        # misses it. In a settled overlay the two agree (tests/p2p/test_properties.py), and this
        # way a parent serving another expression gets no copy it then gets again from above.
        if from_child or src == publisher:
            for dz, parents in self.fin.items():
                if matches(code, dz):
                    nxt.extend(a for a in parents if a not in self.fin_pub and a != src)
        if from_child or src == publisher or from_parent or src == self.id:  # lines 9-11
            for child, entries in self.fout.items():
                if child != src and any(matches(code, dz) for dz in entries):
                    nxt.append(child)
        return nxt

    def account(self, code: str, point, src: int, hops: int, out: list) -> None:
        """A received event: the local filter delivers it if the user-level subscription wants
        it, else counts a false positive; a parent of equal Δ that made us late is left (§4)."""
        wanted = box_contains(self.user, point) and (self.accept is None or self.accept(point))
        by = self.cur[2]
        self.cur[0] += 1
        dz = next((d for d in self.dz if matches(code, d)), None)
        if dz is not None:
            by[dz] = by.get(dz, 0) + 1
        if wanted:
            self.delivered += 1
            if self.on_event is not None:  # the event as its attributes
                self.on_event({d.name: (int(v) if d.integer else v) for d, v in zip(self.space.dims, point)})
        else:
            self.cur[1] += 1
            self.false_positives += 1
            if dz is not None:
                by["fp:" + dz] = by.get("fp:" + dz, 0) + 1
        if hops > self.delay and dz is not None and src in self.fin.get(dz, ()) and src not in self.fin_pub:
            d = self.known.get(src)
            if d is None or d.delay >= self.delay:
                self.drop_parent(src, dz, out)
                self.banned[src] = self.now + BAN_CYCLES
