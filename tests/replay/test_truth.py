"""The ground truth on hand-made traces whose answers are worked out by hand, and against the
simulator when nothing is updated (both modes must then deliver exactly the truth)."""

from __future__ import annotations

import pytest

from eventpy.replay.simulate import run_trace
from eventpy.replay.trace import Constraint, Subscription, Trace
from eventpy.replay.truth import ground_truth
from eventpy.replay.workloads import generate
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line

Q = EventType("t.Q", firm=str, price=float)


def hand_trace() -> Trace:
    below = Subscription(0, "s0", Q.name, (Constraint("firm", "==", const="A"), Constraint("price", "<", "limit")),
                         {"limit": 10.0})
    window = Subscription(1, "s1", Q.name, (Constraint("price", ">=", "lo"), Constraint("price", "<=", "hi")),
                          {"lo": 5.0, "hi": 6.0})
    events = [
        (0.10, 0, "p", Q.name, ("A", 9.0)),   # s0 (9 < 10); not s1
        (0.20, 1, "p", Q.name, ("B", 5.5)),   # s1 only (firm B)
        (0.30, 2, "p", Q.name, ("A", 11.0)),  # nobody: the limit rises to 12 only at 0.35
        (0.40, 3, "p", Q.name, ("A", 11.0)),  # s0 (11 < 12)
        (0.50, 4, "p", Q.name, ("A", 6.0)),   # s0; s1 has moved to [7, 8] at 0.45
        (0.60, 5, "p", Q.name, ("A", 7.0)),   # s0 and s1; at exactly the bound (>=)
        (0.70, 6, "p", Q.name, ("A", 8.0)),   # s0 and s1 (<= 8)
    ]
    updates = [(0.35, 0, {"limit": 12.0}), (0.45, 1, {"lo": 7.0, "hi": 8.0})]
    return Trace("hand", 0, line(2), {Q.name: Q}, {"p": "b0", "s0": "b1", "s1": "b1"}, {"p": (Q.name,)},
                 [below, window], events, updates, 1.0)


def test_hand_made_trace_has_the_answer_worked_out_by_hand():
    assert ground_truth(hand_trace()) == {(0, 0), (1, 1), (3, 0), (4, 0), (5, 0), (5, 1), (6, 0), (6, 1)}


def test_an_update_at_the_same_instant_as_a_publication_is_in_force():
    trace = hand_trace()
    trace.updates = [(0.30, 0, {"limit": 12.0})]
    assert (2, 0) in ground_truth(trace)


def test_a_constant_operand_and_every_operator():
    sub = Subscription(0, "s0", Q.name, (Constraint("price", "!=", const=3.0), Constraint("price", ">", const=1.0)), {})
    events = [(0.1 * i, i, "p", Q.name, ("A", float(i))) for i in range(6)]
    trace = Trace("ops", 0, line(1), {Q.name: Q}, {"p": "b0", "s0": "b0"}, {"p": (Q.name,)}, [sub], events, [], 1.0)
    assert ground_truth(trace) == {(2, 0), (4, 0), (5, 0)}


def test_the_simulator_agrees_on_the_hand_made_trace_when_updates_arrive_in_time():
    trace = hand_trace()
    trace.updates = []  # without updates nothing can be in flight
    truth = ground_truth(trace)
    for mode in ("parametric", "resub"):
        got = run_trace(trace, mode, memory=False).deliveries
        assert {(e, s) for e, s, _ in got} == truth
        assert len(got) == len(truth)


@pytest.mark.parametrize("workload,settings", [
    ("micro", {"coverage": 0.33, "duration": 0.5, "types": 20}),
    ("overlay-micro", {"types_per_subscriber": 5, "subscribers": 40, "duration": 0.5}),
    ("htm", {"subscribers": 200, "duration": 0.5}),
    ("at", {"subscribers": 30, "duration": 0.5}),
])
@pytest.mark.parametrize("mode", ["parametric", "resub"])
def test_without_updates_both_modes_deliver_exactly_the_ground_truth(workload, settings, mode):
    trace = generate(workload, 3, {**settings, "update_rate": 0})
    assert not trace.updates
    truth = ground_truth(trace)
    assert truth, "a workload whose subscribers want nothing checks nothing"
    result = run_trace(trace, mode, memory=False)
    got = [(e, s) for e, s, _ in result.deliveries]
    assert len(got) == len(set(got)), "duplicates"
    assert set(got) == truth  # 0 missed, 0 false positives
    assert result.metrics["spurious"] == 0
    # the replayed phase had no updates: the setup's SUBs are not counted in it
    assert result.metrics["sub_sent"] == result.metrics["unsub_sent"] == result.metrics["upd_sent"] == 0


def test_the_share_of_broker_time_spent_on_subscription_changes():
    # With the fixed cost model the split is exact: none without updates; with updates a
    # resubscription (SUB + UNSUB) takes more of the brokers' time than a UPD does.
    share = {}
    for rate in (0, 50):
        trace = generate("at", 3, {"subscribers": 30, "duration": 0.5, "update_rate": rate})
        for mode in ("parametric", "resub"):
            result = run_trace(trace, mode, memory=False, service="model")
            assert all(0.0 <= b["sub_share"] <= 1.0 for b in result.brokers)
            share[rate, mode] = result.metrics["sub_share"]
    assert share[0, "parametric"] == share[0, "resub"] == 0.0
    assert 0.0 < share[50, "parametric"] < share[50, "resub"]


def test_the_span_of_a_run_is_at_least_the_trace_even_when_deliveries_stop_early():
    # the last event s0 wants is published at 0.7 s of a 1 s trace: its throughput is over 1 s, not 0.7
    trace = hand_trace()
    trace.updates = []
    result = run_trace(trace, "parametric", memory=False, link_delay=0.001)
    assert result.metrics["span_s"] == pytest.approx(trace.duration)
    nothing = hand_trace()
    nothing.events = []
    assert run_trace(nothing, "parametric", memory=False).metrics["span_s"] == pytest.approx(nothing.duration)
