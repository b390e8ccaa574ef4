"""Network.notified() and is_notified(): probes restricted to a subscriber's ancestors give the
hops a probe through the whole overlay gives, at every stage of a run (forming, churn, scarce
out-degrees), and cost in proportion to the ancestors, not to the overlay."""

from __future__ import annotations

import random

import pytest

from eventpy.p2p import _workload
from eventpy.p2p._network import Network
from eventpy.p2p._peer import Peer
from eventpy.p2p._space import Space, box_contains, meet


def full_probe_notified(net: Network, p: Peer) -> bool:
    """The definition (Network.notified's docstring): for each expression of p and each publisher
    whose advertisement meets it and p's box, an event at the centre of that intersection, sent
    down every link of the overlay, reaches p within its delay."""
    for dz in p.dz:
        inter = meet(net.space.region(dz), p.user)
        if inter is None:
            continue
        for pub in net.publishers:
            part = meet(inter, pub.user)
            point = None if part is None else net._inside(part)
            if point is None:
                continue
            hops = net.publish(pub.id, point, probe=True, down=True).get(p.id)
            if hops is None or hops > p.delay:
                return False
    return True


def random_net(seed: int, n: int, m: int, d: int = 2):
    rng = random.Random(seed)
    space = Space.uniform(d, 1, 32)
    net = Network(space, seed=seed, min_view=5, timeout=4, window=4)
    advs = [None, _workload.subscription(space, rng, width=(0.4, 1.0))]
    pubs = [net.add_publisher(a, out_degree=m) for a in advs]

    def add() -> None:
        net.add_subscriber(_workload.subscription(space, rng, width=(0.05, 0.6)), delay=rng.randint(1, 5),
                           out_degree=m, r=rng.randint(1, 4), fp_budget=rng.choice([0.0, 0.2, 1.0]))
    for _ in range(n):
        add()
    return net, rng, space, pubs, add


@pytest.mark.parametrize("seed, m", [(1, 2), (2, 4), (3, 8), (4, 16)])
def test_restricted_probes_agree_with_probes_through_the_whole_overlay(seed, m):
    net, rng, space, pubs, add = random_net(seed, 40, m)
    compared = disagreements = 0
    for cycle in range(60):
        if cycle in (20, 40):  # churn: subscribers leave without a word, others join
            for s in rng.sample(net.subscribers, 8):
                net.remove(s.id)
            for _ in range(8):
                add()
        live = [p for p in pubs if p in net.online]
        events = [(P, _workload.event(space, rng)) for P in live for _ in range(3)]
        net.step([(P, x) for P, x in events if box_contains(net.online[P].user, x)])
        if cycle % 3 == 0:
            cache: dict = {}
            for p in net.subscribers:
                compared += 1
                disagreements += net._notified(p, net.publishers, cache) != full_probe_notified(net, p)
    assert compared > 500 and disagreements == 0


def test_notified_visits_only_ancestors():
    # every probe went through the whole overlay below a whole-space publisher: notified() on
    # these 300 subscribers ran Peer.receive 25,411 times for 1,004 probes; through the
    # ancestors, 1,168
    net, rng, space, pubs, add = random_net(7, 300, 9, d=3)
    for _ in range(40):
        net.step()
    calls = 0
    real = Peer.receive

    def counting(self, *a, **kw):
        nonlocal calls
        calls += 1
        return real(self, *a, **kw)

    Peer.receive = counting
    try:
        share = net.notified()
    finally:
        Peer.receive = real
    probes = sum(len(p.dz) * len(net.publishers) for p in net.subscribers)
    assert 0 < share <= 1
    assert calls <= 3 * probes, (calls, probes)
