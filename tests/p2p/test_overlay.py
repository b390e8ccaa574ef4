"""The broker-less overlay of paper 004 (eventpy/p2p/_peer.py, _network.py), checked against the
paper and against a centralized oracle.

Written from the paper's definitions, not from the module:

- §2: Fin(s)/Fout(s) are a peer's incoming/outgoing connections, |Fout(s)| <= m(s); the delay is
  the hop count from a publisher; a subscriber wants every event from its relevant publishers
  within Δ(s), and controls the false positives it receives (a share of all events, §6).
- §4 and Algorithm 1: a subscriber connects, for each dz of its peer-level subscription, to a
  parent whose subscription covers dz and whose Δ is not looser than its own (publishers have
  Δ = 0); a parent accepts (ACK) when Δ(child) >= Δ(parent) (line 17), else answers with a hint
  (POTENTIALPARENT, lines 27-29); past m children it lets go of the most selective child, ties to
  the larger delay, with DISCONNECT and a hint (lines 19-24); on an ACK from a subscriber parent
  the other parents of that dz go (covered exactly once, line 33); an ACK from a parent of equal Δ
  and equal dz sends DETECTCYCLE down (lines 34-35), forwarded only among equal Δ and dz (40-42),
  and its return to the originator drops the new parent (36-38).
- Algorithm 2: events go down from parents to the children whose dz they match, and up from
  children (and from the publisher) to subscriber parents; the local filter delivers only what the
  user-level subscription wants.
- Algorithm 3 and §5.1: a dz without a parent for a timeout is coarsened (DZ-1) if the false
  positives it adds stay within the budget; false positives over the budget refine the
  subscription (DZ+1) and the children the new one does not cover are let go.
- §6: converged = the share of peers whose subscription is covered by parents; notified = the
  share that receive events from all relevant publishers within their Δ; massive churn.

The sans-I/O tests feed one `Peer` its messages by hand (a message is (kind, src, dst, payload);
the payload layouts are those `Peer.handle` takes). The network tests run small simulations and
check invariants after every cycle and every delivery against an oracle (the user boxes).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.p2p import _workload
from eventpy.p2p._network import Network
from eventpy.p2p._peer import ACK, CONNECT, CYCLE, DISCONNECT, HINT, Peer
from eventpy.p2p._space import Space, box_contains, covered

# A 2-d space over [1, 8] x [1, 8] (depth 6). Its dz-expressions as boxes: '0' is A1 in [1, 4],
# '00' adds A2 in [1, 4], '01' A2 in [5, 8], '0*0' is A1 in [1, 2], '000' A1 in [1, 2] and A2 in
# [1, 4]; the empty expression is the whole space.
S2 = Space.uniform(2, 1, 8)
BOX = {
    "": S2.whole,
    "0": S2.box(A1=(1, 4)),
    "1": S2.box(A1=(5, 8)),
    "00": S2.box(A1=(1, 4), A2=(1, 4)),
    "01": S2.box(A1=(1, 4), A2=(5, 8)),
    "000": S2.box(A1=(1, 2), A2=(1, 4)),
    "0*0": S2.box(A1=(1, 2)),
}


def sub(pid: int, dz: str, delay: int, *, m: int = 4, budget: float = 0.0, timeout: int = 3,
        on_event=None) -> Peer:
    """A subscriber whose user-level subscription is exactly the sub-space `dz` (so its first
    mapping is {dz})."""
    p = Peer(pid, S2, BOX[dz], delay=delay, out_degree=m, fp_budget=budget, timeout=timeout,
             rng=random.Random(pid), on_event=on_event)
    assert p.dz == [dz], p.dz  # the premise: an aligned box maps to its own sub-space
    return p


def pub(pid: int, *, m: int = 4) -> Peer:
    return Peer(pid, S2, S2.whole, delay=0, out_degree=m, publisher=True, r=1, rng=random.Random(pid))


def sent(out, kind=None, dst=None):
    return [msg for msg in out if (kind is None or msg[0] == kind) and (dst is None or msg[2] == dst)]


def connect(child: Peer, dz: str):
    return CONNECT, child.id, (dz, child.delay, child.desc())


def deliver(peers: dict[int, Peer], out: list, now: int = 1, rounds: int = 20) -> list:
    """Deliver messages among hand-made peers until none is left (a message to a peer not in
    `peers` is dropped); returns everything that was sent, in order."""
    log = []
    for _ in range(rounds):
        if not out:
            return log
        log.extend(out)
        batch, out = out, []
        for kind, src, dst, payload in batch:
            if dst in peers:
                peers[dst].handle(kind, src, payload, now, out)
    raise AssertionError(f"messages still flowing after {rounds} rounds: {out}")


def link(child: Peer, parent: Peer, dz: str, *others: Peer) -> None:
    """child asks parent for dz and the answers are delivered (among the two and `others`); the
    link must be made."""
    peers = {p.id: p for p in (child, parent, *others)}
    kind, src, payload = connect(child, dz)
    out: list = []
    parent.handle(kind, src, payload, 1, out)
    deliver(peers, out)
    assert parent.id in child.fin[dz] and dz in parent.fout.get(child.id, {}), (child.fin, parent.fout)


# --- Algorithm 1, lines 16-29: a connection request ------------------------------------------


@pytest.mark.parametrize("child_delay", [2, 3, 7])
@pytest.mark.parametrize("parent_dz,child_dz", [("0", "00"), ("0", "0"), ("", "01"), ("0", "000")])
def test_connect_accepted_when_covered_and_delay_not_tighter(parent_dz, child_dz, child_delay):
    q, p = sub(1, parent_dz, 2), sub(2, child_dz, child_delay)
    out: list = []
    q.handle(*connect(p, child_dz), 1, out)
    assert [m[0] for m in sent(out, dst=p.id)] == [ACK]
    assert q.fout == {p.id: {child_dz: child_delay}}
    deliver({1: q, 2: p}, out)
    assert p.fin[child_dz] == {q.id} and p.converged()


@pytest.mark.parametrize("child_delay", [2, 3])
def test_connect_from_a_tighter_child_is_rejected_with_a_hint(child_delay):
    """Lines 27-29: Δ(p) < Δ(q); q answers POTENTIALPARENT with the best parent it knows of in
    pView ∪ Fin(q): here its own parent a, which covers dz and is tight enough."""
    a, q, p = sub(1, "", 1), sub(2, "0", 4), sub(3, "00", child_delay)
    link(q, a, "0")
    q.view.clear()  # a is known only as q's parent (Fin(q)), not from pView
    out: list = []
    q.handle(*connect(p, "00"), 1, out)
    assert not sent(out, ACK) and p.id not in q.fout
    hints = sent(out, HINT, p.id)
    assert len(hints) == 1
    dz, hint, _sender = hints[0][3]
    assert dz == "00" and hint is not None and hint.id == a.id
    # the hint is a suitable parent for p: it covers dz and is not looser than p
    assert any(covered("00", e) for e in hint.dz) and hint.delay <= p.delay


def test_connect_rejected_hint_never_names_an_unsuitable_peer():
    """A hint from pView must cover dz and be tight enough; with none suitable, no one is named."""
    q, p = sub(2, "0", 4), sub(3, "00", 2)
    loose, narrow, ok = sub(10, "0", 3), sub(11, "01", 1), sub(12, "0", 1)
    for d in (loose, narrow):
        q.learn(d.desc())
    out: list = []
    q.handle(*connect(p, "00"), 1, out)
    assert sent(out, HINT, p.id)[0][3][1] is None
    q.learn(ok.desc())
    out = []
    q.handle(*connect(p, "00"), 1, out)
    assert sent(out, HINT, p.id)[0][3][1].id == ok.id and p.id not in q.fout


def test_connect_for_a_dz_the_parent_does_not_cover_is_rejected():
    q, p = sub(1, "00", 1), sub(2, "0", 5)
    out: list = []
    q.handle(*connect(p, "0"), 1, out)
    assert not sent(out, ACK) and sent(out, HINT, p.id) and p.id not in q.fout


DZS = ["", "0", "1", "00", "01", "000", "0*0"]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(DZS), st.integers(1, 6), st.sampled_from(DZS), st.integers(1, 6),
       st.lists(st.tuples(st.sampled_from(DZS), st.integers(1, 6), st.sampled_from([None, 0, 1, 2, 5])),
                max_size=5))
def test_connect_property(parent_dz, parent_delay, child_dz, child_delay, others):
    """A subscriber with room accepts a request exactly when its subscription covers the requested
    dz and Δ(child) >= Δ(parent) (line 17), answering ACK; otherwise it answers one hint, which
    names no one or a peer whose subscription covers dz and whose Δ is not looser than the
    child's (§4), never the child itself."""
    q, p = sub(1, parent_dz, parent_delay), sub(2, child_dz, child_delay)
    for i, (dz, delay, hops) in enumerate(others):
        other = sub(10 + i, dz, delay)
        q.learn(other.desc()._replace(depth=hops))
    q.learn(p.desc())  # the child may be in q's view: it must not be its own hint
    out: list = []
    q.handle(*connect(p, child_dz), 1, out)
    to_p = sent(out, dst=p.id)
    if covered(child_dz, parent_dz) and child_delay >= parent_delay:
        assert [m[0] for m in to_p] == [ACK] and q.fout == {p.id: {child_dz: child_delay}}
    else:
        assert [m[0] for m in to_p] == [HINT] and not q.fout
        dz, hint, _ = to_p[0][3]
        assert dz == child_dz
        if hint is not None:
            assert hint.id != p.id and not hint.publisher
            assert any(covered(child_dz, e) for e in hint.dz)
            assert hint.delay <= child_delay


# --- Algorithm 1, lines 19-24: the out-degree constraint ---------------------------------------


def test_out_degree_drops_the_most_selective_child_ties_to_the_larger_delay():
    q = sub(1, "", 1, m=2)
    c1, c2, p = sub(2, "00", 5), sub(3, "01", 3), sub(4, "0", 4)
    link(c1, q, "00")
    link(c2, q, "01")
    out: list = []
    q.handle(*connect(p, "0"), 1, out)
    # '00' and '01' are equally selective (a quarter of the space each); '0' is half: the tie goes
    # to the larger delay, c1
    assert set(q.fout) == {c2.id, p.id}
    assert sent(out, ACK, p.id)
    assert [(m[0], m[3][0]) for m in sent(out, dst=c1.id)] == [(DISCONNECT, "00"), (HINT, "00")]
    # line 22: the hint comes from pView ∪ Fout(q); p covers '00' and is tighter than c1
    assert sent(out, HINT, c1.id)[0][3][1].id == p.id
    assert not sent(out, dst=c2.id)
    deliver({q.id: q, c1.id: c1, c2.id: c2, p.id: p}, out)
    assert q.id not in c1.fin["00"] and p.fin["0"] == {q.id} and c2.fin["01"] == {q.id}


def test_out_degree_selectivity_before_delay():
    q = sub(1, "", 1, m=2)
    c1, c2, p = sub(2, "000", 2), sub(3, "0", 8), sub(4, "01", 8)
    link(c1, q, "000")
    link(c2, q, "0")
    out: list = []
    q.handle(*connect(p, "01"), 1, out)
    assert set(q.fout) == {c2.id, p.id} and sent(out, DISCONNECT, c1.id)


def test_out_degree_newcomer_most_selective_gets_a_hint_not_an_ack():
    q = sub(1, "", 1, m=2)
    c1, c2, p = sub(2, "0", 3), sub(3, "1", 3), sub(4, "000", 4)
    link(c1, q, "0")
    link(c2, q, "1")
    out: list = []
    q.handle(*connect(p, "000"), 1, out)
    assert set(q.fout) == {c1.id, c2.id}
    assert not sent(out, ACK) and sent(out, HINT, p.id)
    assert not sent(out, dst=c1.id) and not sent(out, dst=c2.id)
    hint = sent(out, HINT, p.id)[0][3][1]
    assert hint is not None and hint.id == c1.id  # c1 covers '000' and is not looser than p


def test_out_degree_selectivity_is_the_size_of_the_childs_subscription():
    """'Highly selective' is about the subscription: c1 holds A1 in [3, 6] as two quarters of the
    space ('0*1' and '1*0', half of it in all), c2 one quarter ('00'). c2 is the more selective,
    whatever the delays (c1's larger delay only breaks ties)."""
    q = pub(100, m=2)
    c1 = Peer(1, S2, S2.box(A1=(3, 6)), delay=6, out_degree=4, rng=random.Random(1))
    assert c1.dz == ["0*1", "1*0"]
    c2, p = sub(2, "00", 3), sub(3, "", 2)
    link(c1, q, "0*1")
    link(c1, q, "1*0")
    link(c2, q, "00")
    out: list = []
    q.handle(*connect(p, ""), 1, out)
    assert set(q.fout) == {c1.id, p.id} and sent(out, DISCONNECT, c2.id)


def test_out_degree_full_tie_keeps_the_incumbents():
    """Equally selective and equally tight: the paper orders no further. Letting an incumbent go
    for a newcomer that is no better gains nothing and moves the incumbent's whole subtree (and
    three such peers for two places then push each other out for ever, each covered too briefly
    to reach the timeout that would coarsen it, Algorithm 3 line 1); so the newcomer is the one
    turned away, with a hint."""
    q = pub(100, m=2)
    c1, c2, p = sub(1, "00", 4), sub(2, "01", 4), sub(3, "0*0", 4)
    assert S2.volume("0*0") == S2.volume("00") == S2.volume("01")
    link(c1, q, "00")
    link(c2, q, "01")
    out: list = []
    q.handle(*connect(p, "0*0"), 1, out)
    assert set(q.fout) == {c1.id, c2.id}
    assert not sent(out, ACK) and sent(out, HINT, p.id)
    assert not sent(out, dst=c1.id) and not sent(out, dst=c2.id)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(DZS), st.integers(1, 6)), min_size=2, max_size=6))
def test_out_degree_property(children):
    """However the children come, the parent never keeps more than m, and each time it has to let
    one go, it is one of the most selective (smallest sub-space), the larger delay among those,
    the newcomer if it is one of them."""
    m = len(children) - 1
    q = pub(100, m=m)
    peers = [sub(i, dz, d) for i, (dz, d) in enumerate(children)]
    for p in peers[:-1]:
        link(p, q, p.dz[0])
    new = peers[-1]
    out: list = []
    q.handle(*connect(new, new.dz[0]), 1, out)
    assert len(q.fout) == m
    dropped = [p for p in peers if p.id not in q.fout]
    assert len(dropped) == 1
    d = dropped[0]
    vol = S2.volume
    assert vol(d.dz[0]) == min(vol(p.dz[0]) for p in peers)
    assert d.delay == max(p.delay for p in peers if vol(p.dz[0]) == vol(d.dz[0]))
    if (vol(new.dz[0]), new.delay) == (vol(d.dz[0]), d.delay):
        assert d is new
    assert bool(sent(out, ACK, new.id)) == (d is not new)
    assert sent(out, HINT, d.id)


# --- Algorithm 1, lines 30-35: an acknowledgement -----------------------------------------------


def test_ack_from_a_subscriber_parent_disconnects_the_other_parents_of_that_dz():
    P, q1, q2 = pub(50), sub(1, "", 1), sub(2, "0", 2)
    p = Peer(9, S2, S2.box(A1=(3, 6)), delay=5, out_degree=4, rng=random.Random(9))
    assert p.dz == ["0*1", "1*0"]  # A1 in [3, 4] and A1 in [5, 6]
    p.gossip([P.desc()])
    link(p, P, "0*1")
    link(p, P, "1*0")
    link(p, q1, "0*1", P)
    # covered exactly once: the publisher went for '0*1', not for '1*0'
    assert p.fin == {"0*1": {q1.id}, "1*0": {P.id}}
    assert p.id in P.fout and set(P.fout[p.id]) == {"1*0"}
    link(p, q2, "0*1", q1)
    assert p.fin == {"0*1": {q2.id}, "1*0": {P.id}}
    assert p.id not in q1.fout


def test_ack_from_a_publisher_when_a_subscriber_already_covers_is_undone():
    P, q = pub(50), sub(1, "0", 1)
    p = sub(2, "00", 3)
    p.gossip([P.desc()])
    link(p, q, "00")
    out: list = []
    P.handle(*connect(p, "00"), 1, out)
    deliver({P.id: P, p.id: p}, out)
    assert p.fin["00"] == {q.id} and p.id not in P.fout


# --- Algorithm 1, lines 34-42: cycles ------------------------------------------------------------


def test_detectcycle_returning_to_its_originator_drops_the_parent():
    a, b = sub(1, "0", 3), sub(2, "0", 3)
    link(a, b, "0")
    out: list = []
    a.handle(CYCLE, 7, (a.id, b.id, "0", 3), 1, out)
    assert b.id not in a.fin["0"]
    assert sent(out, DISCONNECT, b.id) and sent(out, DISCONNECT, b.id)[0][3][0] == "0"


def test_a_cycle_of_equal_peers_is_found_and_broken():
    """a <- b <- c (b is a's child, c is b's child), all with the same Δ and dz; a then takes c as
    its parent: DETECTCYCLE goes a -> b -> c -> a and a drops c."""
    a, b, c = sub(1, "0", 3), sub(2, "0", 3), sub(3, "0", 3)
    peers = {1: a, 2: b, 3: c}
    link(b, a, "0")
    link(c, b, "0")
    out: list = []
    c.handle(*connect(a, "0"), 1, out)
    log = deliver(peers, out)
    assert [m[2] for m in log if m[0] == CYCLE] == [b.id, c.id, a.id]
    assert c.id not in a.fin["0"] and a.id not in c.fout
    assert b.fin["0"] == {a.id} and c.fin["0"] == {b.id}


def test_detectcycle_is_not_forwarded_past_a_different_delay():
    a, b, c = sub(1, "0", 3), sub(2, "0", 4), sub(3, "0", 4)
    link(c, b, "0")
    out: list = []
    b.handle(CYCLE, a.id, (a.id, 99, "0", 3), 1, out)
    assert not sent(out, CYCLE)


# --- Algorithm 2 and §4: dissemination at one peer --------------------------------------------


def test_event_goes_down_from_parents_and_up_from_children_that_want_it():
    P, a, p, c = pub(50), sub(1, "", 1), sub(2, "0", 3), sub(3, "00", 6)
    link(p, a, "0")
    link(c, p, "00")
    inside, outside = (2.0, 3.0), (2.0, 7.0)  # in '00'; in '01' (still in '0')
    assert sorted(p.receive(S2.code(inside), inside, P.id, ("",), a.id, 2, [])) == [c.id]
    assert p.receive(S2.code(outside), outside, P.id, ("",), a.id, 2, []) == []  # c does not want it
    # from a child (lines 6-8): up to the subscriber parents whose dz holds it
    assert sorted(p.receive(S2.code(inside), inside, P.id, ("",), c.id, 2, [])) == [a.id]


def test_a_late_parent_of_equal_delay_is_dropped_and_the_event_still_goes_down():
    """§4: with equal Δ an event may come too late; p drops that parent. The event came from a
    parent all the same (Algorithm 2 line 9): p's child, of looser Δ, still gets it."""
    q, p, c = sub(1, "0", 3), sub(2, "0", 3), sub(3, "00", 6)
    link(p, q, "0")
    link(c, p, "00")
    point = (2.0, 3.0)
    out: list = []
    nxt = p.receive(S2.code(point), point, 50, ("",), q.id, 4, out)  # 4 hops > Δ(p) = 3
    assert q.id not in p.fin["0"] and sent(out, DISCONNECT, q.id)
    assert nxt == [c.id]


# --- Algorithm 3: coarsening on a timeout, refining on false positives ------------------------


def run_manage(p: Peer, cycles: range, rate: float) -> list:
    out: list = []
    for now in cycles:
        p.now = now
        p.total_rate = rate
        p.manage(now, out)
    return out


def test_uncovered_for_the_timeout_coarsens_when_the_budget_allows():
    """'00' is a quarter of the space, its DZ-1 '0' a half: with uniform events (no measured rate
    yet, so the estimate is by volume) coarsening adds a quarter of all events as false
    positives, which a budget of 0.3 allows."""
    p = sub(1, "00", 5, budget=0.3, timeout=4)
    run_manage(p, range(1, 4), rate=10.0)
    assert p.dz == ["00"]  # not before the timeout
    run_manage(p, range(4, 7), rate=10.0)
    assert p.dz == ["0"]
    assert set(p.fin) == {"0"}


def test_uncovered_for_the_timeout_does_not_coarsen_beyond_the_budget():
    p = sub(1, "00", 5, budget=0.2, timeout=4)
    run_manage(p, range(1, 30), rate=10.0)
    assert p.dz == ["00"]


def test_a_covered_peer_does_not_coarsen():
    q, p = sub(1, "0", 1), sub(2, "00", 5, budget=1.0, timeout=3)
    link(p, q, "00")
    run_manage(p, range(1, 30), rate=10.0)
    assert p.dz == ["00"] and p.fin["00"] == {q.id}


def feed(p: Peer, points, src: int, publisher: int = 50, hops: int = 2) -> list:
    out: list = []
    for point in points:
        p.receive(S2.code(point), point, publisher, ("",), src, hops, out)
    return out


def test_false_positives_over_the_budget_refine_and_let_go_of_uncovered_children():
    """p wants '00' but holds '0' (it coarsened on a timeout). Events then fall half in '01'
    (5 of 10 per cycle), twice what the estimate said: the budget (0.3 x 10) is exceeded, p
    refines back to '00' and lets go of its child for '01' (Algorithm 3 line 6), keeping the one
    for '00'."""
    got = []
    p = sub(1, "00", 2, budget=0.3, timeout=2, on_event=got.append)
    run_manage(p, range(1, 4), rate=10.0)
    assert p.dz == ["0"]
    c1, c2 = sub(2, "00", 4), sub(3, "01", 4)
    link(c1, p, "00")
    link(c2, p, "01")
    wanted = [(2.0, 3.0)] * 5
    unwanted = [(3.0, 6.0)] * 5
    window = 5
    out: list = []
    for now in range(4, 4 + window):
        p.now = now
        out += feed(p, wanted + unwanted, src=50)
        p.end_cycle(now, out, window)
    assert p.dz == ["00"]
    assert set(p.fout) == {c1.id}
    assert [(m[0], m[3]) for m in sent(out, dst=c2.id)] == [(DISCONNECT, ("01", "parent"))]
    assert not sent(out, DISCONNECT, c1.id)
    # the local filter: only the wanted events reach the application
    assert got == [{"A1": 2, "A2": 3}] * (5 * window)
    deliver({1: p, 2: c1, 3: c2}, out)
    assert c2.fin["01"] == set() and c1.fin["00"] == {p.id}


def test_false_positives_within_the_budget_do_not_refine():
    p = sub(1, "00", 2, budget=0.6, timeout=2)
    run_manage(p, range(1, 4), rate=10.0)
    assert p.dz == ["0"]
    out: list = []
    for now in range(4, 20):
        p.now = now
        out += feed(p, [(2.0, 3.0)] * 5 + [(3.0, 6.0)] * 5, src=50)
        p.end_cycle(now, out, 5)
    assert p.dz == ["0"]


# --- the whole network: invariants after every cycle -----------------------------------------

S4 = Space.uniform(4)  # the paper's evaluation space (§6): integer attributes over [1, 128]
EVENTS = 20  # events per cycle


def build(seed: int, n: int, *, pubs: int = 3, m: int = 8, delays=(3, 8), budget: float = 1.0,
          record: bool = False, width=(0.05, 0.5)):
    """A network of `pubs` publishers (advertising the whole space) and n W1 subscribers with Δ
    uniform in `delays`, out-degree m, first mappings of r = 4 and false-positive budget
    `budget`, box sides a share `width` of each domain. With `record`, each subscriber's
    deliveries are kept: got[id] = [event, ...]."""
    rng = random.Random(seed)
    net = Network(S4, seed=seed)
    pub_ids = [net.add_publisher(out_degree=m) for _ in range(pubs)]
    got: dict[int, list] = defaultdict(list)

    def add() -> int:
        box = _workload.subscription(S4, rng, width=width)
        delay = rng.randint(*delays)
        if not record:
            return net.add_subscriber(box, delay=delay, out_degree=m, r=4, fp_budget=budget)
        pid = net._next_id  # the id add_subscriber is about to give
        sid = net.add_subscriber(box, delay=delay, out_degree=m, r=4, fp_budget=budget,
                                 on_event=got[pid].append)
        assert sid == pid
        return sid

    for _ in range(n):
        add()

    def events(k: int = EVENTS):
        return [(rng.choice(pub_ids), _workload.event(S4, rng)) for _ in range(k)]

    return net, pub_ids, rng, add, events, got


def in_flight(net: Network) -> set:
    """The ACKs, DISCONNECTs and CONNECTs sent in the last cycle, delivered at the start of the
    next."""
    out = set()
    for kind, src, dst, payload in net.queue:
        if kind in (ACK, CONNECT):
            out.add((kind, src, dst, payload[0]))
        if kind == ACK:
            out.add((ACK, src, dst, payload[0]))
        elif kind == DISCONNECT:
            out.add((DISCONNECT, src, dst, payload[0], payload[1]))
    return out


def violations(net: Network) -> list[str]:
    """The invariants of §2 and Algorithms 1 and 3 that hold after every cycle, messages in flight
    taken into account. Each end of a link keeps its own table and changes it when it acts: q
    puts p in Fout(q) when it accepts (line 18), p puts q in Fin(p) when the ACK arrives (line
    31); q lets p go at once (lines 21-23, Algorithm 3 line 6) and p hears of it with the
    DISCONNECT. A message is delivered one cycle after it is sent, so the two tables may disagree
    for one cycle, exactly while that ACK or DISCONNECT is in flight: a disagreement with no such
    message is a violation (that is "one cycle of lag, and no more")."""
    on = net.online
    msgs = in_flight(net)
    bad = []
    for p in on.values():
        # §2: |Fout(p)| <= m(p); a parent over m lets a child go at once (lines 19-24)
        if len(p.fout) > p.m:
            bad.append(f"{p.id} has {len(p.fout)} children, m = {p.m}")
        for dz, parents in p.fin.items():
            assert dz in p.dz, (p.id, dz, p.dz)
            # §4, line 33: covered exactly once by a subscriber parent (no duplicate events),
            # publishers (all the relevant ones) only where no subscriber covers dz
            subs = [q for q in parents if q in on and not on[q].publisher]
            if subs and len(parents) > 1:
                bad.append(f"{p.id} has parents {sorted(parents)} for {dz}")
            for q in parents:
                # a peer that left is noticed at the start of the next cycle (failure detector)
                if q not in on:
                    bad.append(f"{p.id} keeps {q}, gone, as a parent for {dz}")
                    continue
                # (a DISCONNECT of an expression p has refined since also ends the parts)
                told = any(m[:3] == (DISCONNECT, q, p.id) and m[4] == "parent" and covered(dz, m[3])
                           for m in msgs)
                Q = on[q]
                # §4: a subscriber parent's subscription covers dz; when the parent refines it
                # lets the child go (Algorithm 3 line 6), which the child hears next cycle
                if not Q.publisher and not any(covered(dz, e) for e in Q.dz) and not told:
                    bad.append(f"{p.id}'s parent {q} for {dz} holds {Q.dz}, and said nothing")
                # Fin/Fout: q is p's parent for dz => p is q's child for dz, unless q has just
                # let p go (its DISCONNECT in flight), or p has just refined an expression q
                # serves and asks q for this part (its CONNECT in flight: Algorithm 3's remap)
                asking = (CONNECT, p.id, q, dz) in msgs
                if dz not in Q.fout.get(p.id, {}) and not told and not asking:
                    bad.append(f"{p.id} lists {q} as parent for {dz}; {q} does not list it")
        for c, entries in p.fout.items():
            if c not in on:
                bad.append(f"{p.id} keeps {c}, gone, as a child")
                continue
            for dz in entries:
                # p accepted c: c hears it next cycle (ACK in flight), or c has just dropped p
                if p.id not in on[c].fin.get(dz, ()) and (ACK, p.id, c, dz) not in msgs \
                        and (DISCONNECT, c, p.id, dz, "child") not in msgs:
                    bad.append(f"{p.id} lists {c} as child for {dz}; {c} does not list it")
    return bad


def cycles_of(net: Network) -> set[frozenset]:
    """Cycles of the parent relation on (peer, dz) pairs: (p, dz) -> (q, e) when q is a
    subscriber parent of p for dz and e is q's expression covering dz. A cycle can only join
    equal expressions of equal Δ (covering and Δ are both monotone along it), so this is the
    parent relation restricted to one dz."""
    on = net.online

    def succ(node):
        pid, dz = node
        for q in on[pid].fin.get(dz, ()):
            Q = on.get(q)
            if Q is not None and not Q.publisher:
                for e in Q.dz:
                    if covered(dz, e):
                        yield (q, e)

    found: set[frozenset] = set()
    state: dict = {}
    for p in on.values():
        for dz in p.dz:
            root = (p.id, dz)
            if root in state:
                continue
            state[root] = 1
            stack = [(root, iter(list(succ(root))))]
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(nxt) == 1:
                    path = [n for n, _ in stack]
                    found.add(frozenset(path[path.index(nxt):]))
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(list(succ(nxt)))))
    return found


@pytest.mark.parametrize("seed,n,pubs,budget", [(1, 80, 3, 1.0), (2, 120, 2, 1.0), (3, 100, 3, 0.1)])
def test_invariants_after_every_cycle(seed, n, pubs, budget):
    """Through construction, a tight budget (refinements letting children go) and a massive churn
    (a quarter of the subscribers leave at once, as many join): the invariants hold after every
    cycle; a cycle of equal peers is broken as DETECTCYCLE goes round it (one hop a cycle)."""
    net, _pubs, rng, add, events, _ = build(seed, n, pubs=pubs, budget=budget)
    alive: dict[frozenset, int] = {}
    seen = set()
    for cycle in range(1, 131):
        if cycle == 70:
            for p in rng.sample(net.subscribers, n // 4):
                net.remove(p.id)
            for _ in range(n // 4):
                add()
        net.step(events())
        bad = violations(net)
        assert not bad, (cycle, bad[:5])
        found = cycles_of(net)
        alive = {c: alive.get(c, 0) + 1 for c in found}
        seen |= found
        for c, age in alive.items():
            # DETECTCYCLE needs one cycle per hop to come back to its originator
            assert age <= len(c) + 2, (cycle, sorted(c), age)
    print(f"cycles formed and broken: {len(seen)}")


# --- delivery against a centralized oracle ---------------------------------------------------


def overlay_state(net: Network):
    """What event routes depend on: every peer's subscription, parents and children."""
    return tuple((p.id, tuple(p.dz), tuple(sorted((dz, tuple(sorted(v))) for dz, v in p.fin.items())),
                  tuple(sorted(p.fin_pub)), tuple(sorted((c, tuple(sorted(e))) for c, e in p.fout.items())))
                 for p in net.online.values())


def as_event(point) -> dict:
    return {d.name: int(v) for d, v in zip(S4.dims, point)}


# (4, 0.2) meets a late parent of equal Δ dropped while its children were notified; (5, 0.05) a
# peer whose probe came up from a child (or down a link it had just dropped). Measured, seeds 1-8:
# (event, notified subscriber that wants it) pairs ~3700-4300 at budget 1.0, ~200-600 at 0.2,
# ~10-45 at 0.05 (few peers are notified on a budget that tight, §6 Figure 6)
@pytest.mark.parametrize("seed,budget,pairs", [(1, 1.0, 2000), (4, 0.2, 300), (5, 0.05, 20)])
def test_delivery_matches_the_oracle(seed, budget, pairs):
    """Every event published (by `step`, as the simulation publishes) is checked against the user
    boxes: a subscriber whose box contains the point and which `Network.notified` counts as
    notified at that moment gets it exactly once through on_event; no subscriber gets an event
    outside its box (the local filter); the others get a wanted event at most once. Starts
    before the overlay has settled, so that its changes (refinements, late parents dropped)
    happen between and during the checks. Wide boxes, so that many events are wanted."""
    net, _pubs, _rng, _add, events, got = build(seed, 80, budget=budget, record=True, width=(0.3, 0.9))
    for _ in range(30):
        net.step(events())
    real = net.publish
    memo = {"state": None, "notified": set()}
    tally = Counter()

    def publish(pid, point, *, out=None, probe=False, **kw):
        if probe:  # Network.notified's probes
            return real(pid, point, out=out, probe=True, **kw)
        state = overlay_state(net)
        if state != memo["state"]:
            cache: dict = {}
            memo["notified"] = {p.id for p in net.subscribers if net._notified(p, net.publishers, cache)}
            memo["state"] = state
        before = {p.id: len(got[p.id]) for p in net.subscribers}
        reached = real(pid, point, out=out)
        want = as_event(point)
        for p in net.subscribers:
            new = got[p.id][before[p.id]:]
            if not box_contains(p.user, point):
                assert new == [], (p.id, p.user, point)
                tally["outside"] += 1
            elif p.id in memo["notified"]:
                assert new == [want], (net.now, p.id, p.delay, point, new, reached.get(p.id))
                assert reached[p.id] <= p.delay, (net.now, p.id, p.delay, point, reached[p.id])
                tally["notified"] += 1
            else:
                assert len(new) <= 1 and all(e == want for e in new), (p.id, new)
                tally["other"] += 1 if new else 0
        return reached

    net.publish = publish
    for _ in range(40):
        net.step(events())
    # not vacuous: many (event, notified subscriber that wants it) pairs were checked
    assert tally["notified"] >= pairs, tally


# --- convergence and massive churn (§6) -----------------------------------------------------

LEVEL = 0.95


def cycles_to(net: Network, events, level: float, limit: int, every: int = 5) -> int | None:
    """Cycles until both converged and notified are at least `level` (looked at every `every`
    cycles), or None within `limit`."""
    for cycle in range(1, limit + 1):
        net.step(events())
        if cycle % every == 0 and net.converged() >= level and net.notified() >= level:
            return cycle
    return None


# Measured over seeds 1-20 (100 subscribers, 3 publishers, m = 8, Δ in 3..8, budget 1.0, 20 events
# a cycle): both at 0.95 after 40-75 cycles; later changes at the top can still dip notified for a
# while (seed 14: 0.74 from cycle 105 to 145, a displaced top peer whose hinted parent was its own
# descendant, then a timeout to coarsen), and at cycle 160 all 20 were at 0.99 or more; after a
# quarter leave and as many join, back at 0.95 within 20-75 cycles. Before the fix of equal
# children at a publisher, seed 2 never settled (notified swinging between 0.44 and 0.99).
@pytest.mark.parametrize("seed", [2, 3])
def test_converges_then_recovers_from_massive_churn(seed):
    n = 100
    net, _pubs, rng, add, events, _ = build(seed, n, budget=1.0)
    took = cycles_to(net, events, LEVEL, 120)
    assert took is not None, (net.converged(), net.notified())
    for _ in range(160 - took):
        net.step(events())
    assert net.converged() >= LEVEL and net.notified() >= LEVEL, (net.converged(), net.notified())
    for p in rng.sample(net.subscribers, n // 4):
        net.remove(p.id)
    for _ in range(n // 4):
        add()
    net.step(events())
    assert net.notified() < LEVEL  # the churn hurt (else the recovery below proves nothing)
    took = cycles_to(net, events, LEVEL, 120)
    assert took is not None, (net.converged(), net.notified())


# --- bandwidth (§2 objective 2, Algorithm 3 lines 4-6) -----------------------------------------


# Measured over seeds 1-6 with budget 0.1 (2 false positives a cycle of 20 events), after 80
# cycles, over the next 40: 92-97% of subscribers within the budget, all within 1.7 times it (the
# largest 3.28), 0.32-0.68 a cycle on average. With refinement switched off: 61-71% within, the
# largest ~20 (everything), 1.9-2.4 on average.
@pytest.mark.parametrize("seed", [1, 2])
def test_false_positives_stay_within_the_budget(seed):
    budget, n, window = 0.1, 100, 40
    net, _pubs, _rng, _add, events, _ = build(seed, n, budget=budget)
    for _ in range(80):
        net.step(events())
    before = {p.id: p.false_positives for p in net.subscribers}
    for _ in range(window):
        net.step(events())
    limit = budget * EVENTS
    rates = sorted((p.false_positives - before[p.id]) / window for p in net.subscribers)
    within = sum(r <= limit for r in rates) / len(rates)
    assert within >= 0.85, (within, rates[-10:])
    assert rates[-1] <= 2 * limit, rates[-10:]
    assert sum(rates) / len(rates) <= limit / 2, sum(rates) / len(rates)
