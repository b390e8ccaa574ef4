"""The client algorithm (000 Fig. 5) without any transport: coalescing of pending UPDs, the
resub baseline, and the local filter."""

from __future__ import annotations

import logging
import time

from eventpy.guards import compile_guard
from eventpy.runtime.client import ClientCore
from eventpy.runtime.messages import Adv, Pub, Sub, Unsub, Upd
from eventpy.runtime.model import EventType

Q = EventType("Quote", firm=str, price=float)


def subscribe(core, guard="firm == f and price < limit", **params):
    params = params or {"f": "IBM", "limit": 10.0}
    plan = compile_guard(guard, Q, {k: type(v) for k, v in params.items()})
    return core.subscribe(Q, plan, params, on_event=None)


def test_subscribe_tells_the_schema_then_subscribes_with_current_values():
    core = ClientCore("c")
    subscribe(core)
    adv, sub = core.take()
    assert adv == Adv("Quote", Q.to_wire(), publishes=False)  # a subscriber is no publisher
    assert isinstance(sub, Sub) and sub.values[1].hi == 10.0


def test_a_subscriber_that_publishes_then_advertises_and_resyncs_as_a_publisher():
    core = ClientCore("c")
    subscribe(core)
    core.take()
    core.publish(Q, ("IBM", 1.0))
    assert core.take()[0] == Adv("Quote", Q.to_wire())  # now one of the type's publishers
    core.unadvertise("Quote")
    core.take()
    core.resync()  # a new broker: told the schema again for the subscription, not as a publisher
    assert [m for m in core.take() if isinstance(m, Adv)] == [Adv("Quote", Q.to_wire(), publishes=False)]


def test_pending_upd_absorbs_later_changes_of_the_same_variable():
    core = ClientCore("c")
    state = subscribe(core)
    core.take()
    for limit in (11.0, 12.0, 13.0):
        core.update(state, {"limit": limit})
    msgs = core.take()
    assert len(msgs) == 1 and isinstance(msgs[0], Upd)
    ((var, (value, seq)),) = msgs[0].changes.items()
    assert value.hi == 13.0 and seq == 3  # the newest value, with the newest sequence number
    assert core.stats["upd_coalesced"] == 2 and core.stats["upd_sent"] == 1
    core.update(state, {"limit": 14.0})  # once taken, a new UPD is queued
    assert [type(m) for m in core.take()] == [Upd]


def test_only_variables_depending_on_the_changed_parameter_are_sent():
    core = ClientCore("c")
    state = subscribe(core, "price >= x - r and firm == f", x=5.0, r=1.0, f="IBM")
    core.take()
    core.update(state, {"f": "ORCL"})
    (upd,) = core.take()
    assert len(upd.changes) == 1  # the firm set, not the price interval
    assert core.update(state, {"f": "ORCL"}) == 0 and core.take() == []  # no change, no message


def test_resub_mode_sends_sub_then_unsub_and_accepts_both_ids():
    core = ClientCore("c", mode="resub")
    state = subscribe(core)
    core.take()
    old = state.sid
    core.update(state, {"limit": 20.0})
    sub, unsub = core.take()
    assert isinstance(sub, Sub) and isinstance(unsub, Unsub) and unsub.sid == old and sub.sid != old
    # an event matched under the old id, still in flight, is delivered once
    out = core.receive(Pub("Quote", ("IBM", 15.0), "p", 1, 0.0, (old, sub.sid)))
    assert len(out) == 1 and core.deliver(*out[0])



def test_resub_mode_an_event_under_any_older_sid_goes_through_the_local_filter():
    # A saturated edge broker can still be matching against a sid many resubscriptions old; the
    # event must neither vanish (missed if the guard holds now) nor escape the spurious count.
    core = ClientCore("c", mode="resub")
    state = subscribe(core)
    first = state.sid
    for i in range(500):
        core.update(state, {"limit": 20.0 + i})
    assert len(core.take()) == 1 + 1 + 2 * 500 and state.sid != first  # ADV, SUB, 500 x (SUB, UNSUB)
    ((s, ev),) = core.receive(Pub("Quote", ("IBM", 15.0), "p", 1, 0.0, (first,)))
    assert core.deliver(s, ev) is True  # 15 < 519 now: useful, delivered
    ((s, ev),) = core.receive(Pub("Quote", ("IBM", 600.0), "p", 2, 0.0, (first,)))
    assert core.deliver(s, ev) is False and core.stats["spurious"] == 1
    core.unsubscribe(state)
    assert core.receive(Pub("Quote", ("IBM", 15.0), "p", 3, 0.0, (first, state.sid))) == []

def test_local_filter_counts_spurious_events():
    core = ClientCore("c")
    state = subscribe(core)
    core.take()
    core.update(state, {"limit": 5.0})  # the broker may still use 10
    ((s, ev),) = core.receive(Pub("Quote", ("IBM", 7.0), "p", 1, 0.0, (state.sid,)))
    assert core.deliver(s, ev) is False
    assert core.stats["spurious"] == 1 and core.stats["delivered"] == 0


def test_closed_subscription_receives_nothing():
    core = ClientCore("c")
    state = subscribe(core)
    core.unsubscribe(state)
    assert core.receive(Pub("Quote", ("IBM", 1.0), "p", 1, 0.0, (state.sid,))) == []


def test_set_parameters_travel_as_removed_and_added_values():
    from eventpy.runtime.model import SetDelta, ValueSet

    core = ClientCore("c")
    watch = frozenset(f"F{i}" for i in range(10))
    state = subscribe(core, "firm in watch", watch=watch)
    core.take()
    core.update(state, {"watch": watch - {"F0"} | {"NEW"}})
    (upd,) = core.take()
    ((var, (value, seq)),) = upd.changes.items()
    assert value == SetDelta(frozenset({"F0"}), frozenset({"NEW"}))
    assert value.apply(ValueSet(watch)) == state.values[var]
    core.update(state, {"watch": frozenset({"X"})})  # smaller as a whole: sent whole
    (upd,) = core.take()
    assert list(upd.changes.values())[0][0] == ValueSet(frozenset({"X"}))


def test_an_update_replaces_the_variables_so_a_delivery_thread_never_sees_half_of_it():
    # the local filter runs on delivery threads without the node lock (passes)
    from eventpy.runtime.client import passes
    core = ClientCore("c")
    state = subscribe(core, "price > lo and price < hi", lo=1.0, hi=2.0)
    before = state.values
    snapshot = list(before)
    core.update(state, {"lo": 5.0, "hi": 6.0})
    assert before == snapshot and state.values is not before  # the old list was not mutated
    ev = Q(firm="IBM", price=5.5)
    assert passes(state, ev) is True and state.plan.holds(ev.values, before) is False
    core.unsubscribe(state)
    assert passes(state, ev) is None


def test_a_delivery_thread_never_sees_half_an_update():
    # Two variables (the firm set and the price interval) change in one update, between
    # (A, [0, 1]) and (B, [10, 11]). Half of an update would be (B, [0, 1]) or (A, [10, 11]), which
    # would let (B, 0.5) or (A, 10.5) through, events neither whole state admits. `passes` reads
    # the variables without the node lock, so this must hold with the updater running alongside.
    import sys
    import threading

    from eventpy.runtime.client import passes
    core = ClientCore("c")
    state = subscribe(core, "firm == f and price >= lo and price <= hi", f="A", lo=0.0, hi=1.0)
    neither = [Q(firm="B", price=0.5), Q(firm="A", price=10.5)]
    stop = threading.Event()
    seen = []

    def updater():
        states = [{"f": "B", "lo": 10.0, "hi": 11.0}, {"f": "A", "lo": 0.0, "hi": 1.0}]
        k = 0
        while not stop.is_set():
            core.update(state, states[k % 2])
            core.take()
            k += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        t = threading.Thread(target=updater)
        t.start()
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline and not seen:
            for ev in neither:
                if passes(state, ev):
                    seen.append(ev)
        stop.set()
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert not seen, f"half an update let {seen} through"


def test_receive_one_sid_fast_path_agrees_with_the_general_path():
    """ClientCore.receive has a near-copy for the common one-sid PUB; for every kind of sid (a live
    subscription, an old resub generation of it, a closed one, an unknown one) it returns what the
    general path returns for the same sid given twice (which it must deliver once)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    core = ClientCore("c", mode="resub")
    live, closed = subscribe(core), subscribe(core)
    core.update(live, {"limit": 11.0})  # a new generation: live.sid is no longer its first sid
    core.unsubscribe(closed)
    first = live.sid & ((1 << 32) - 1)
    candidates = [live.sid, first, first + (1 << 32), closed.sid, closed.sid & ((1 << 32) - 1), 999]

    def seen(out):
        return [(state.sid, ev.values, ev._meta) for state, ev in out]

    @settings(max_examples=60, deadline=None)
    @given(st.sampled_from(candidates), st.floats(0, 20))
    def check(sid, price):
        one = core.receive(Pub("Quote", ("IBM", price), "p", 1, 0.5, (sid,)))
        twice = core.receive(Pub("Quote", ("IBM", price), "p", 1, 0.5, (sid, sid)))
        assert seen(one) == seen(twice)
        assert [s for s, _ in one] == ([live] if sid & ((1 << 32) - 1) == first else [])

    check()


def test_two_nodes_of_one_name_make_different_barrier_tokens():
    # a broker refuses a second node of a name attached to it, not one on another broker: their
    # drains' flushes must not look like one flush seen twice (reported as a cycle, drain lost)
    a, b = ClientCore("alice"), ClientCore("alice")
    assert a.flush() != b.flush() and a.request_ack(1.0) != b.request_ack(1.0)
    assert a.flush()[0] == "alice"  # the name stays first: logs and errors show whose it is


def test_an_event_not_of_the_subscriptions_type_is_refused_counted_and_logged_once(caplog):
    core = ClientCore("c")
    state = subscribe(core, "True")
    bad = [Pub("Other", ("IBM", 1.0), "p", 1, 0.0, (state.sid,)),  # another type
           Pub("Quote", ("IBM",), "p", 2, 0.0, (state.sid,)),  # another arity
           Pub("Quote", ("IBM", "cheap"), "p", 3, 0.0, (state.sid, 99))]  # a str for a float
    with caplog.at_level(logging.WARNING, logger="eventpy.client"):
        assert [core.receive(m) for m in bad] == [[], [], []]
    assert core.stats["refused"] == 3 and len(caplog.records) == 1
    ((s, ev),) = core.receive(Pub("Quote", ("IBM", 1), "p", 4, 0.0, (state.sid,)))  # an int for a float is one
    assert core.deliver(s, ev) and ev.price == 1
