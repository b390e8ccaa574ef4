"""A PeerSim-style cycle-driven simulation of the broker-less overlay (paper 004 §6).

Each cycle: messages sent in the previous cycle are delivered (one cycle per overlay message);
peers learn which neighbours left since the last cycle (a failure detector); every peer gets a few
fresh descriptors from the peer-sampling service and runs one iteration of its connection
management (Algorithm 1) with its timeouts (Algorithm 3); publishers publish the cycle's events,
disseminated at once along the current overlay by Algorithm 2 (hop counts are the delays); then
each peer closes its counters and refines its subscription if its false positives exceed its
bandwidth (Algorithm 3 lines 4-6).

The peer-sampling service is uniform over the online peers (the abstraction of [14], which the
paper's epidemic protocol provides); each peer keeps a partial view of `view_fraction` of them
(5% in §6).
"""

from __future__ import annotations

import math
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable

from ._checks import positive_share, whole_number
from ._peer import Peer
from ._space import Box, Space, box_contains, matches, meet


class Network:
    def __init__(self, space: Space, *, seed: int = 0, gossip: int = 8, view_fraction: float = 0.05,
                 min_view: int = 20, timeout: int = 10, window: int = 10) -> None:
        if not isinstance(space, Space):
            raise TypeError(f"a Network needs a Space (p2p.space_of or p2p.Space), not {space!r}")
        whole_number("gossip", gossip, "the peers sampled for each peer in a cycle")
        positive_share("view_fraction", view_fraction, "the share of the peers a view holds")
        whole_number("min_view", min_view, "the smallest view")
        whole_number("timeout", timeout, "the cycles an expression stays uncovered before coarsening")
        whole_number("window", window, "the cycles event rates are measured over")
        self.space = space
        self.rng = random.Random(seed)
        self.gossip_size = gossip
        self.view_fraction = view_fraction
        self.min_view = min_view
        self.timeout = timeout
        self.window = window
        self.peers: dict[int, Peer] = {}
        self.online: dict[int, Peer] = {}
        self.queue: list = []
        self.now = 0
        self._next_id = 0
        self._gone: list[int] = []
        self.sent: Counter = Counter()  # overlay messages by kind
        self.events = 0  # events published
        self.duplicates = 0  # copies of an event a peer had already received
        self.total_rate = 0.0  # events per cycle, over the last window

        self._rates: deque[int] = deque(maxlen=window)
        # events published with publish() between cycles, counted in the next cycle's rate
        self._published_between = 0
        self._callback_errors: list[Exception] = []  # see _deferring

    # --- membership ----------------------------------------------------------------------------

    def add_publisher(self, adv: Box | None = None, *, out_degree: int, r: int = 1) -> int:
        """A publisher advertising `adv` (the whole space by default)."""
        return self._add(Peer(self._new_id(), self.space, adv or self.space.box(), delay=0,
                              out_degree=out_degree, publisher=True, r=r, timeout=self.timeout,
                              view_size=self._view_size(), rng=self._rng()))

    def add_subscriber(self, box: Box, *, delay: int, out_degree: int, r: int = 4, fp_budget: float = 0.0,
                       on_event: Callable | None = None, accept: Callable | None = None) -> int:
        """A subscriber with user-level subscription `box`, delay requirement Δ (hops), out-degree
        m, a first mapping of at most r dz-expressions and a false-positive budget (a share of
        all events). `on_event` gets each wanted event as {attribute: value}; `accept(point)`,
        if given, is the rest of the local filter (an event in the box it rejects is a false
        positive)."""
        return self._add(Peer(self._new_id(), self.space, box, delay=delay, out_degree=out_degree, r=r,
                              fp_budget=fp_budget, timeout=self.timeout, view_size=self._view_size(),
                              rng=self._rng(), on_event=self._deferring(on_event), accept=accept))

    def _deferring(self, on_event: Callable | None) -> Callable | None:
        """The application's callback, its exceptions kept until the event (or the cycle) is
        done and raised then: raised from inside the dissemination they cut the event off from
        the peers below, and inside step() they lost the cycle's overlay messages (ACKs to
        children already counted in Fout), leaving links only one end believed in."""
        if on_event is None:
            return None
        errors = self._callback_errors

        def deliver(event: dict) -> None:
            try:
                on_event(event)
            except Exception as exc:  # noqa: BLE001 - raised again by publish() or step()
                errors.append(exc)
        return deliver

    def _raise_callback_error(self) -> None:
        if self._callback_errors:
            first = self._callback_errors[0]
            self._callback_errors.clear()
            raise first

    def remove(self, pid: int) -> None:
        """The peer leaves (or fails) without a word; its neighbours notice next cycle. An id
        this network never gave, or a peer that has left already, is refused (KeyError): a
        churn experiment removing a wrong id did nothing and said nothing."""
        if pid not in self.peers:
            raise KeyError(f"{pid!r} is not a peer of this network (add_publisher and "
                           "add_subscriber give the ids)")
        if self.online.pop(pid, None) is None:
            raise KeyError(f"peer {pid} has left already")
        self._gone.append(pid)

    def _add(self, peer: Peer) -> int:
        peer.now = self.now
        self.peers[peer.id] = peer
        self.online[peer.id] = peer
        return peer.id

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _rng(self) -> random.Random:
        return random.Random(self.rng.getrandbits(64))

    def _view_size(self) -> int:
        return max(self.min_view, math.ceil(self.view_fraction * max(len(self.online), 1)))

    @property
    def subscribers(self) -> list[Peer]:
        return [p for p in self.online.values() if not p.publisher]

    @property
    def publishers(self) -> list[Peer]:
        return [p for p in self.online.values() if p.publisher]

    # --- one cycle -----------------------------------------------------------------------------

    def step(self, events: Iterable[tuple[int, tuple]] = ()) -> None:
        """One cycle; `events` are (publisher id, point) to publish in it. They are checked
        before the cycle starts (a bad one raises and the cycle does not run: raised halfway, it
        lost the overlay messages the cycle had made); a publisher that has left publishes
        nothing."""
        events = [self._checked(pid, point) for pid, point in events]
        self.now += 1
        now = self.now
        peers = list(self.online.values())
        # the view is a share of the peers online now (§6: 5%): sized when a peer joined, the
        # first peers of a network built one by one kept the minimum for ever (20 of 5,000)
        view_size = self._view_size()
        for p in peers:
            p.now = now
            p.total_rate = self.total_rate
            p.view_size = view_size
        out: list = []
        queue, self.queue = self.queue, []
        for kind, src, dst, payload in queue:
            peer = self.online.get(dst)
            if peer is not None and src in self.online:
                peer.handle(kind, src, payload, now, out)
        gone, self._gone = self._gone, []
        online = self.online
        for p in peers:  # heartbeats: a neighbour that left is noticed a cycle later
            for q in [q for q in (*p.parents(), *p.fout) if q not in online]:
                p.peer_gone(q)
        for g in gone:  # a publisher that left is in everyone's list; a stale view entry of a
            if self.peers[g].publisher:  # subscriber goes when a request to it goes unanswered
                for p in peers:
                    p.peer_gone(g)
        descs = [p.desc() for p in peers]
        pubs = {p.id: [d for d, _ in p.publishers.values()] for p in peers}
        k = min(self.gossip_size, len(descs))
        for p in peers:  # Algorithm 1 lines 3, 9: the GossipList
            sample = self.rng.sample(descs, k)
            p.gossip(sample, [d for s in sample for d in pubs[s.id]])
        order = peers[:]
        self.rng.shuffle(order)
        for p in order:
            p.manage(now, out)
        # events published with publish() since the last cycle count as this cycle's: left out,
        # the rate stayed 0 for a network driven that way (as in the README), so a coarsening
        # was estimated to add no false positive and taken under any budget, even 0
        count, self._published_between = self._published_between, 0
        for pid, point in events:
            if pid in self.online:
                self.publish(pid, point, out=out)
                count += 1
        self._rates.append(count)
        self.total_rate = sum(self._rates) / len(self._rates)
        for p in peers:
            p.end_cycle(now, out, self.window)
        for msg in out:
            self.sent[msg[0]] += 1
        self.queue.extend(out)
        self._raise_callback_error()  # the cycle is complete: the first callback failure, if any

    def _checked(self, pid: int, point) -> tuple[int, tuple[float, ...]]:
        """(publisher, point) of an event to publish, with what is wrong raised here."""
        pub = self.peers.get(pid)
        if pub is None or not pub.publisher:
            raise KeyError(f"{pid!r} is not a publisher of this network (add_publisher gives the ids)")
        point = self.space.point(point)
        if not box_contains(pub.user, point):
            raise ValueError(f"publisher {pid} advertised {pub.user}, which does not contain {point}")
        return pid, point

    def run(self, cycles: int, events: Callable[[int], Iterable[tuple[int, tuple]]] | None = None,
            every: Callable[[int], None] | None = None) -> None:
        for _ in range(cycles):
            self.step(events(self.now + 1) if events else ())
            if every is not None:
                every(self.now)

    # --- Algorithm 2 ---------------------------------------------------------------------------

    def publish(self, pid: int, point, *, out: list | None = None, probe: bool = False,
                down: bool = False, within: set[int] | None = None) -> dict[int, int]:
        """Disseminate one event from publisher `pid` (a point, or {attribute: value}):
        {peer: hops} of every peer it reached. `down` (a probe only) follows the links from
        parents to children alone, as the children see them (see _notified); `within` (a probe
        only) passes through those peers alone."""
        pub = self.online.get(pid)
        if pub is None or not pub.publisher:
            raise KeyError(f"{pid!r} is not an online publisher")
        pid, point = self._checked(pid, point)  # {attribute: value} or a sequence
        code = self.space.code(point)
        sink = self.queue if out is None else out
        if not probe:
            self.events += 1
            if out is None:  # not from step(), which counts its own
                self._published_between += 1
        got: dict[int, int] = {}
        frontier = deque([(pid, pid, 0)])
        pub_dz = tuple(pub.dz)
        while frontier:
            node, src, hops = frontier.popleft()
            peer = self.online.get(node)
            if peer is None:
                continue
            if node in got:
                if not probe:
                    self.duplicates += 1
                continue
            got[node] = hops
            for nxt in peer.receive(code, point, pid, pub_dz, src, hops, sink, probe):
                if (within is None or nxt in within) and (not down or self._parent_link(node, nxt, code)):
                    frontier.append((nxt, node, hops + 1))  # Algorithm 2 line 5: hop count
        if out is None:  # called by the user, not by step(): the event has reached everyone
            self._raise_callback_error()
        return got

    def _parent_link(self, parent: int, child: int, code: str) -> bool:
        """`parent` is a parent of `child` for the child's expression that holds the event (as
        the child sees it: a link just made or just undone is in its other end's tables only)."""
        peer = self.online.get(child)
        return peer is not None and any(parent in ps and matches(code, dz) for dz, ps in peer.fin.items())

    # --- the paper's metrics (§6) ------------------------------------------------------------

    def converged(self) -> float:
        """The share of online subscribers whose peer-level subscription is covered by parents."""
        subs = self.subscribers
        return sum(p.converged() for p in subs) / len(subs) if subs else 1.0

    def notified(self, sample: int | None = None) -> float:
        """The share of online subscribers (or of a sample of them) that receive events from every
        relevant publisher within their delay requirement. Measured with probe events: for each
        expression of the subscriber and each publisher whose advertisement meets it and the
        user-level box, an event at the centre of that intersection. Every event of a sub-space
        follows the same links from parents to children (each link down to the subscriber covers
        its expression), so one stands for all along those links only. A probe that went up
        from a child (Algorithm 2 lines 6-8) stands only for the events of that child's
        sub-space, and counted peers notified that then missed the rest of their expression (one
        with no parent for it at all). So the probes go down only, along links the child holds
        too: a link the parent still lists after the child dropped it (the DISCONNECT in flight)
        carries only the events of the expression the child dropped."""
        subs = self.subscribers
        if sample is not None and len(subs) > sample:  # its own generator: measuring changes no run
            subs = random.Random(self.now).sample(subs, sample)
        if not subs:
            return 1.0
        pubs = self.publishers
        cache: dict[tuple[int, str], dict[int, int]] = {}
        ok = 0
        for p in subs:
            ok += self._notified(p, pubs, cache)
        return ok / len(subs)

    def is_notified(self, pid: int) -> bool:
        """Whether this subscriber receives events from every relevant publisher in time."""
        peer = self.online.get(pid)
        if peer is None or peer.publisher:
            raise KeyError(f"{pid} is not an online subscriber")
        return self._notified(peer, self.publishers, {})

    def _notified(self, p: Peer, pubs: list[Peer], cache) -> bool:
        for dz in p.dz:
            inter = meet(self.space.region(dz), p.user)
            if inter is None:
                continue
            for pub in pubs:
                part = meet(inter, pub.user)
                if part is None:
                    continue
                point = self._inside(part)
                if point is None:  # a cell with no integer value in it: no event can fall there
                    continue
                code = self.space.code(point)
                key = (pub.id, code)
                if key not in cache or p.id not in cache[key]:
                    # only p's ancestors can pass the probe on to p: following every link of a
                    # whole-space publisher cost the whole overlay per probe (notified() grew
                    # as n squared: 10 s at 3,000 peers). Restricted to them the probe meets
                    # them in the same order, so p's hops are the same; they and p are exact
                    reached = self.publish(pub.id, point, probe=True, down=True,
                                           within=self._ancestors(p, code))
                    cache.setdefault(key, {}).update(reached)
                hops = cache[key].get(p.id)
                if hops is None or hops > p.delay:
                    return False
        return True

    def _ancestors(self, p: Peer, code: str) -> set[int]:
        """p and the peers a down-only probe with this code can reach p through: the parents p
        lists for its expression holding the code (a probe takes no other link into p,
        _parent_link), their parents for theirs, and so on."""
        seen = {p.id}
        todo = [p]
        while todo:
            child = todo.pop()
            for dz, parents in child.fin.items():
                if parents and matches(code, dz):
                    for q in parents:
                        if q not in seen:
                            seen.add(q)
                            peer = self.online.get(q)
                            if peer is not None:
                                todo.append(peer)
        return seen

    def _inside(self, box: Box) -> tuple[float, ...] | None:
        out = []
        for (lo, hi), dim in zip(box, self.space.dims):
            if dim.integer:
                first, last = math.ceil(lo), math.ceil(hi) - 1
                if first > last:
                    return None
                v = float(min(max(math.floor((lo + hi - 1) / 2), first), last))
            else:  # a box at a real domain's top ends just above it: the centre of what is in it
                v = min((lo + hi) / 2, dim.hi)
            out.append(v)
        return tuple(out)

    def stats(self) -> dict:
        subs = self.subscribers
        n = len(subs) or 1
        received = sum(p.delivered + p.false_positives for p in subs)
        return {
            "cycle": self.now,
            "peers": len(subs),
            "publishers": len(self.publishers),
            "converged": self.converged(),
            "in_degree": sum(len(p.parents()) for p in subs) / n,
            "dz_per_peer": sum(len(p.dz) for p in subs) / n,
            "connects_per_peer": sum(p.connects for p in subs) / n,
            "max_out_degree": max((len(p.fout) for p in self.online.values()), default=0),
            "messages": dict(self.sent),
            "events": self.events,
            "received": received,
            "false_positives": sum(p.false_positives for p in subs),
            "duplicates": self.duplicates,
        }
