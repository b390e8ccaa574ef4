"""The drain barrier at the sans-I/O broker: a FLUSH goes where the messages of the link that sent
it went (not to every link), so a peer that never answers holds only the drains of those whose
messages reached it; and it has a budget, so that the broker next to a silent peer answers in time,
naming it (as confirm's acknowledgements name a silent broker)."""

from __future__ import annotations

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Adv, Flush, FlushAck, Pub, Sub
from eventpy.runtime.model import EventType

Q = EventType("Quote", firm=str, price=float)
T = EventType("Trade", n=int)


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def sub(etype: EventType, guard: str = "True", sid: int = 1) -> Sub:
    plan = compile_guard(guard, etype, {})
    return Sub(etype.name, sid, plan.spec, plan.evaluate({}))


def edge(clock=None) -> Broker:
    """Client p publishes Quote, s subscribes to it, h (silent) subscribes to Trade only."""
    b = Broker("edge", clock=clock or Clock())
    for link in ("p", "s", "h", "t"):
        b.connect(link, "client")
    b.handle("p", Adv(Q.name, Q.to_wire()))
    b.handle("t", Adv(T.name, T.to_wire()))
    b.handle("s", sub(Q))
    b.handle("h", sub(T))
    return b


def targets(out) -> list:
    return sorted(link for link, m in out if type(m) is Flush)


def test_a_flush_goes_only_where_the_senders_messages_went():
    b = edge()
    b.handle("p", Pub(Q.name, ("IBM", 1.0), "p", 1, 0.0))
    out = b.handle("p", Flush(("p", 1), 5.0))
    assert targets(out) == ["s"]  # not h, which none of p's messages reached
    assert b.handle("s", FlushAck(("p", 1))) == [("p", FlushAck(("p", 1)))]


def test_a_flush_of_a_link_that_sent_nothing_since_its_last_one_is_answered_at_once():
    b = edge()
    b.handle("p", Pub(Q.name, ("IBM", 1.0), "p", 1, 0.0))
    assert targets(b.handle("p", Flush(("p", 1), 5.0))) == ["s"]
    b.handle("s", FlushAck(("p", 1)))
    assert b.handle("p", Flush(("p", 2), 5.0)) == [("p", FlushAck(("p", 2)))]


def test_a_later_flush_still_waits_for_a_link_an_earlier_one_awaits():
    b = edge()
    b.handle("p", Pub(Q.name, ("IBM", 1.0), "p", 1, 0.0))
    b.handle("p", Flush(("p", 1), 5.0))
    assert targets(b.handle("p", Flush(("p", 2), 5.0))) == ["s"]  # the event to s is not known done


def test_a_silent_client_is_named_when_the_budget_runs_out():
    clock = Clock()
    b = edge(clock)
    b.handle("t", Pub(T.name, (1,), "t", 1, 0.0))  # reaches h, which never answers
    assert targets(b.handle("t", Flush(("t", 1), 2.0))) == ["h"]
    assert b.tick(clock.now + 1.0) == []
    assert b.tick(clock.now + 2.0) == [("t", FlushAck(("t", 1), "client h at broker edge"))]
    # h still owes an answer for what t sent it: the next flush of t asks it again
    assert targets(b.handle("t", Flush(("t", 2), 2.0))) == ["h"]


def test_the_broker_next_to_a_silent_client_answers_first_and_its_answer_names_it():
    clock = Clock()
    b0, b1 = Broker("b0", clock=clock), Broker("b1", clock=clock)
    b0.connect("b1", "broker")
    b1.connect("b0", "broker")
    b0.connect("p", "client")
    b1.connect("h", "client")
    for msg in b0.handle("p", Adv(Q.name, Q.to_wire())):
        assert msg[0] == "b1"
        b1.handle("b0", msg[1])
    for link, msg in b1.handle("h", sub(Q)):
        b0.handle("b1", msg)
    (fwd,) = b0.handle("p", Pub(Q.name, ("IBM", 1.0), "p", 1, 0.0))
    assert [link for link, _ in b1.handle("b0", fwd[1])] == ["h"]  # the event reaches h
    (to_b1,) = b0.handle("p", Flush(("p", 1), 5.0))
    assert to_b1[0] == "b1" and to_b1[1].budget < 5.0  # a share of the budget: b1 gives up first
    assert targets(b1.handle("b0", to_b1[1])) == ["h"]
    clock.now += to_b1[1].budget
    (answer,) = b1.tick()
    assert answer == ("b0", FlushAck(("p", 1), "client h at broker b1"))
    assert b0.handle("b1", answer[1]) == [("p", FlushAck(("p", 1), "client h at broker b1"))]
