"""Many FLUSHes of one link held by a peer that reads but never answers (a hand-made client
flooding 20-byte FLUSHes): each new FLUSH looked through every pending one for the links that
its origin is still owed, so 20,000 of them took the broker 16 s, growing as the square of their
number. What an origin is owed is counted per link; the answers are as before."""

from __future__ import annotations

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Flush, FlushAck, Pub, Sub
from eventpy.runtime.model import EventType

T = EventType("flood.Trade", n=int)


class CountingDict(dict):
    """A dict that counts the items its values() hands out."""

    seen = 0

    def values(self):
        for v in super().values():
            CountingDict.seen += 1
            yield v


def _broker() -> Broker:
    b = Broker("b")
    for link in ("p", "silent", "other"):
        b.connect(link, "client")
    b.handle("p", Adv(T.name, T.to_wire()))
    plan = compile_guard("True", T, {})
    b.handle("silent", Sub(T.name, 1, plan.spec, plan.evaluate({})))
    b.handle("p", Pub(T.name, (1,), "p", 1, 0.0))  # reaches the silent peer
    return b


def test_pending_flushes_of_one_link_cost_each_new_one_no_pass_over_them():
    b = _broker()
    b.flushes.waits = CountingDict(b.flushes.waits)
    CountingDict.seen = 0
    n = 3_000
    for k in range(n):
        sends = b.handle("p", Flush(("p", k)))
        assert [(link, type(m).__name__) for link, m in sends] == [("silent", "Flush")]  # each asks it again
    assert CountingDict.seen < n, f"{CountingDict.seen} pending FLUSHes looked at for {n} FLUSHes"


def test_the_silent_peer_answering_in_order_releases_every_flush_and_the_others_are_not_held():
    b = _broker()
    for k in range(100):
        b.handle("p", Flush(("p", k)))
    assert b.handle("other", Flush(("other", 0))) == [("other", FlushAck(("other", 0)))]
    answered = []
    for k in range(100):
        answered += b.handle("silent", FlushAck(("p", k)))
    assert answered == [("p", FlushAck(("p", k))) for k in range(100)]
    assert b.flushes.waits == {} and b.flushes.owed == {}
    # nothing is owed any more: the next FLUSH of p is answered at once
    assert b.handle("p", Flush(("p", 100))) == [("p", FlushAck(("p", 100)))]


def test_a_flush_still_asks_what_an_older_pending_one_awaits_until_it_is_answered():
    b = _broker()
    b.handle("p", Flush(("p", 0)))  # awaits the silent peer
    assert [link for link, _ in b.handle("p", Flush(("p", 1)))] == ["silent"]  # no new message: asked as owed
    b.handle("silent", FlushAck(("p", 0)))
    assert [link for link, _ in b.handle("p", Flush(("p", 2)))] == ["silent"]  # ("p", 1) still awaits it
    b.handle("silent", FlushAck(("p", 1)))
    b.handle("silent", FlushAck(("p", 2)))
    assert b.handle("p", Flush(("p", 3))) == [("p", FlushAck(("p", 3)))]


def test_a_silent_peer_that_leaves_releases_the_flushes_waiting_for_it():
    b = _broker()
    for k in range(5):
        b.handle("p", Flush(("p", k)))
    out = b.disconnect("silent")
    assert sorted(m.token for link, m in out if link == "p") == [("p", k) for k in range(5)]
    assert b.flushes.owed == {}
