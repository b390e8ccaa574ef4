"""A network driven as the README drives it: Network.publish between cycles instead of events
given to step(). The overlay must see the same event rate, and so keep the same budgets."""

from __future__ import annotations

import random

from eventpy.p2p import Network, Space

S = Space.uniform(2, 1, 16)


def run(between_cycles: bool):
    rng = random.Random(1)
    net = Network(S, seed=1, timeout=3, window=4)
    pub = net.add_publisher(out_degree=1)
    # three subscribers of Δ = 1 with disjoint boxes and no false positive allowed: one place
    # under the publisher, so two stay uncovered and time out (Algorithm 3 line 1)
    subs = [net.add_subscriber(S.box(A1=(lo, lo + 3), A2=(1, 4)), delay=1, out_degree=2, fp_budget=0.0)
            for lo in (1, 6, 11)]
    for _ in range(60):
        events = [(pub, (float(rng.randint(1, 16)), float(rng.randint(1, 16)))) for _ in range(10)]
        if between_cycles:
            net.step()
            for pid, point in events:
                net.publish(pid, point)
        else:
            net.step(events)
    return net, [net.peers[s] for s in subs]


def test_events_published_between_cycles_count_in_the_event_rate():
    # they did not: the rate stayed 0, every coarsening was estimated to add no false positive,
    # and subscribers allowed none coarsened to the whole space (51 to 66 false positives each)
    net, subs = run(between_cycles=True)
    assert net.total_rate == 10.0
    assert [p.false_positives for p in subs] == [0, 0, 0]
    ref, ref_subs = run(between_cycles=False)
    assert [p.dz for p in subs] == [p.dz for p in ref_subs]
