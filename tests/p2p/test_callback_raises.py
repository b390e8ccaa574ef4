"""A subscriber's callback that raises inside step() or publish(): the exception reaches the
caller once the event (the cycle) is done, and the overlay stays as it would have been (the
cycle's messages are sent, its counters closed, the event reaches the peers below)."""

from __future__ import annotations

import random

import pytest

from eventpy.p2p import Network, Space, _workload

S = Space.uniform(2, 1, 16)


class Boom(Exception):
    pass


def run(raise_at: int | None):
    rng = random.Random(4)
    net = Network(S, seed=4, min_view=5)
    pub = net.add_publisher(out_degree=3)
    calls = [0]

    def callback(event):
        calls[0] += 1
        if calls[0] == raise_at:
            raise Boom("the researcher's callback failed")

    for i in range(12):
        net.add_subscriber(_workload.subscription(S, rng, width=(0.3, 0.9)), delay=rng.randint(1, 4),
                           out_degree=3, fp_budget=0.1, on_event=callback if i == 0 else None)
    raised = 0
    for _ in range(40):
        try:
            net.step([(pub, _workload.event(S, rng)) for _ in range(4)])
        except Boom:
            raised += 1
    links = {p.id: ({dz: sorted(ps) for dz, ps in p.fin.items()}, {c: dict(e) for c, e in p.fout.items()})
             for p in net.online.values()}
    return raised, calls[0], links, dict(net.sent), net.total_rate


def test_a_callback_that_raises_in_step_leaves_the_overlay_as_it_was():
    # the exception aborted the cycle after the overlay's work: its messages (ACKs to children
    # already entered in Fout, DISCONNECTs) were lost, leaving links one end believed in
    _, calls, links, sent, rate = run(None)
    assert calls > 5
    for k in (1, 3, 5):
        raised, _, got_links, got_sent, got_rate = run(k)
        assert raised == 1
        assert got_links == links and got_sent == sent and got_rate == rate


def test_a_callback_that_raises_in_publish_does_not_cut_the_event_off():
    # the exception left publish() from inside the dissemination: the peers below the failing
    # subscriber never got the event
    space = Space.uniform(1, 1, 8)
    net = Network(space, seed=1)
    pub = net.add_publisher(out_degree=1)  # one place: the others must hang below the first
    got = []

    def failing(event):
        raise Boom("first")

    first = net.add_subscriber(space.box(A1=(1, 8)), delay=1, out_degree=4, on_event=failing)
    below = [net.add_subscriber(space.box(A1=(1, 4)), delay=3, out_degree=4, on_event=got.append)
             for _ in range(3)]
    net.run(40)
    assert net.online[first].parents() == {pub} and net.notified() == 1.0
    with pytest.raises(Boom, match="first"):
        net.publish(pub, {"A1": 2})
    assert got == [{"A1": 2}] * 3 and all(b in net.online for b in below)
    net.step()  # the failure was raised once, not kept for the next call
