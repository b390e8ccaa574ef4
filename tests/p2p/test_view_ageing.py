"""pView's ageing (Algorithm 1 line 15): an entry lives 2 timeouts after it was last seen, by
gossip or by a hint, and the cap keeps the youngest. (The view no longer rewrites every entry
every cycle; these pin down what the rewrite did.)"""

from __future__ import annotations

import random

from eventpy.p2p._peer import Peer
from eventpy.p2p._space import Space

S = Space.uniform(1, 1, 8)


def peer(pid: int, lo: int, hi: int, timeout: int = 3, view_size: int = 50) -> Peer:
    return Peer(pid, S, S.box(A1=(lo, hi)), delay=3, out_degree=4, timeout=timeout, view_size=view_size,
                rng=random.Random(pid))


def cycle(p: Peer, now: int, sample=(), hint=None) -> None:
    """What Network.step does to one peer: messages (a hint) first, then gossip."""
    p.now = now
    if hint is not None:
        p.learn(hint.desc())
    p.gossip([q.desc() for q in sample])


def test_an_entry_lives_two_timeouts_after_it_was_last_seen():
    p, a, b = peer(0, 1, 2), peer(1, 1, 4), peer(2, 1, 8)  # a and b cover p
    cycle(p, 1, sample=[a])          # seen by gossip in cycle 1
    cycle(p, 2, hint=b)              # learnt from a hint in cycle 2, before that cycle's gossip
    alive = {}
    for now in range(3, 12):
        cycle(p, now, sample=[a] if now == 4 else [])  # a seen again in cycle 4
        alive[now] = sorted(p.view)
    timeout = 3
    # b: learnt in cycle 2 counts as seen in cycle 1 (one gossip older than a sampled entry)
    assert [n for n, v in alive.items() if 2 in v] == list(range(3, 1 + 2 * timeout + 1))
    assert [n for n, v in alive.items() if 1 in v] == list(range(3, 4 + 2 * timeout + 1))


def test_the_cap_keeps_the_youngest_and_the_first_seen_among_equals():
    p = peer(0, 1, 1, view_size=2)
    others = [peer(i, 1, 8) for i in range(1, 5)]
    cycle(p, 1, sample=[others[0]])
    cycle(p, 2, sample=[others[1], others[2], others[3]])  # three of age 0, one of age 1: cap 2
    assert sorted(p.view) == [2, 3]
