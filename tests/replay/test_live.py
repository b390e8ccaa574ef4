"""Live engines on a hand-made trace: each adapter delivers exactly the ground truth without
updates, an update takes effect, and no server process is left afterwards; the driver's metrics on
one tiny run. Engines whose server is not installed are skipped (`make live-deps` installs them)."""

from __future__ import annotations

import pytest

from eventpy.replay.live import ENGINES, make_engine, run_live, unavailable
from eventpy.replay.live.activemq import literal, selector
from eventpy.replay.live.engine import running
from eventpy.replay.trace import Constraint, Subscription, Trace
from eventpy.replay.truth import ground_truth
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line

Q = EventType("t.Q", firm=str, price=float, grade=int)


def hand_trace(updates: bool) -> Trace:
    """Two subscribers on the far broker of a line of two; s0 raises its limit at 0.35 s, s1
    moves its window at 0.45 s (only when `updates`)."""
    below = Subscription(0, "s0", Q.name, (Constraint("firm", "==", const="A"), Constraint("price", "<", "limit")),
                         {"limit": 10.0})
    window = Subscription(1, "s1", Q.name, (Constraint("price", ">=", "lo"), Constraint("price", "<=", "hi"),
                                            Constraint("grade", "!=", const=3)), {"lo": 5.0, "hi": 6.0})
    rows = [(0.10, "A", 9.0, 1), (0.15, "B", 5.5, 2), (0.20, "A", 11.0, 1), (0.25, "B", 5.5, 3),
            (0.30, "A", 6.0, 0), (0.40, "A", 7.0, 1), (0.50, "A", -1.5, 2),
            (0.80, "A", 11.5, 1),  # wanted by s0 only under its new limit
            (0.90, "B", 7.5, 1)]  # wanted by s1 only in its new window
    events = [(t, i, "p", Q.name, vals) for i, (t, *vals) in enumerate(rows)]
    ups = [(0.35, 0, {"limit": 12.0}), (0.45, 1, {"lo": 7.0, "hi": 8.0})] if updates else []
    return Trace("hand", 0, line(2), {Q.name: Q}, {"p": "b0", "s0": "b1", "s1": "b1"}, {"p": (Q.name,)},
                 [below, window], [(t, i, p, e, tuple(v)) for t, i, p, e, v in events], ups, 1.0)


def test_guards_as_jms_selectors_use_float_literals():
    sub = Subscription(0, "s", Q.name, (Constraint("firm", "==", const="O'Neil"), Constraint("price", "<=", "x"),
                                        Constraint("grade", "!=", const=3)), {"x": 101})
    assert selector(sub, {"x": 101}) == "firm = 'O''Neil' AND price <= 101.0 AND grade <> 3.0"
    assert literal(-0.0) == "0.0"


@pytest.mark.parametrize("name", ENGINES)
def test_engine_delivers_the_ground_truth_and_leaves_no_process(name):
    why = unavailable(name)
    if why:
        pytest.skip(why)
    for updates in (False, True):
        trace = hand_trace(updates)
        engine = make_engine(name)
        result = run_live(trace, engine, quiet=0.3, timeout=30.0)
        got = [(e, s) for e, s, _ in result.deliveries]
        truth = ground_truth(trace)
        pids = engine.server_pids()
        assert pids and not [p for p in pids if running(p)], f"{name} left processes behind"
        assert len(got) == len(set(got)), "duplicates"
        m = result.metrics
        if not updates:
            assert set(got) == truth
            assert m["missed"] == m["false_positives"] == 0
            # redis sends every event to both subscribers, which filter them; the others filter upstream
            assert m["spurious"] == (2 * len(trace.events) - len(truth) if name == "redis" else 0)
        else:
            # the updates took effect: events only the new parameters admit were delivered (they
            # are published 0.35 s or more after the updates)
            assert {(7, 0), (8, 1)} <= set(got) <= truth


def test_driver_metrics_on_a_tiny_run():
    why = unavailable("redis")
    if why:
        pytest.skip(why)
    trace = hand_trace(True)
    result = run_live(trace, make_engine("redis"), quiet=0.3, timeout=30.0)
    m = result.metrics
    assert m["published"] == len(trace.events) and m["updates"] == 2
    assert m["wanted"] == len(ground_truth(trace))
    assert m["arrivals"] == 2 * len(trace.events)  # redis filters nothing at the server: every event to both
    assert m["delay_samples"] == 2 and m["delay_ms"] > 0
    assert m["bytes_to_subscribers"] > 0 and m["sub_messages"] == 0
    assert m["throughput"] > 0


def test_live_latency_percentiles_are_nearest_rank():
    from eventpy.replay.live.driver import _pct
    ms = [x / 1000 for x in range(1, 101)]  # 1..100 ms
    assert (_pct(ms, 0.5), _pct(ms, 0.99)) == (50.0, 99.0)


def test_throughput_is_over_the_trace_not_up_to_the_last_delivery():
    """One useful event early in a 1 s trace is 0.5 events/s for each of two subscribers; the
    span used to end at the last delivery (0.11 s), which made it 4.5 (the simulator's grid had
    the same defect, fixed before)."""
    from eventpy.replay.live.driver import _measure

    trace = hand_trace(False)
    t0 = 100.0
    published = {eid: t0 + t for t, eid, *_ in trace.events}
    arrivals = [(0, 0, t0 + 0.11)]  # s0 gets event 0 (firm A at 9.0 < 10.0), nothing else arrives
    m = _measure(trace, "hand", 1.0, arrivals, published, {}, t0, t0 + 0.9, 0.0, 0.0, 0.0, [0, 0], {}).metrics
    assert m["useful"] == 1 and m["span_s"] == pytest.approx(1.0)
    assert m["throughput"] == pytest.approx(1 / 1.0 / 2)
    # a delivery that lags past the trace's end stretches the phase, as in the simulator
    late = [(0, 0, t0 + 1.5)]
    m = _measure(trace, "hand", 1.0, late, published, {}, t0, t0 + 0.9, 0.0, 0.0, 0.0, [0, 0], {}).metrics
    assert m["span_s"] == pytest.approx(1.5)
    # at twice the speed the trace lasts half as long on the wall clock
    m = _measure(trace, "hand", 2.0, arrivals, published, {}, t0, t0 + 0.45, 0.0, 0.0, 0.0, [0, 0], {}).metrics
    assert m["span_s"] == pytest.approx(0.5)
