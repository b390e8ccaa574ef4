"""The runtime update monitor (000 §6, Fig. 10 and Fig. 11), checked from its definition: the
interval the broker is told covers the exact one after every change (so no wanted event can be
missed because of the monitor), and above `freq_approx` it sends fewer subscription messages than
exact updates would."""

from __future__ import annotations

import math
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.guards import compile_guard
from eventpy.runtime.client import ClientCore
from eventpy.runtime.client._monitor import UpdateMonitor, approximate
from eventpy.runtime.messages import Sub, Unsub, Upd
from eventpy.runtime.model import INF, EventType, Interval

Q = EventType("Quote", firm=str, price=float, volume=int)
GUARDS = {
    "below": ("price < x", {"x": 100.0}),
    "below_eq": ("price <= x", {"x": 100.0}),
    "above": ("price > x", {"x": 100.0}),
    "equal": ("price == x", {"x": 100.0}),
    "window": ("price >= x - w and price <= x + w", {"x": 100.0, "w": 2.0}),  # generated variables
    "int_equal": ("volume == n", {"n": 100}),
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def series(pattern: str, n: int, rate: float, step: float, seed: int) -> list[tuple[float, float]]:
    """(time, value) pairs: a trace of one parameter at `rate` changes per second."""
    import random
    rng = random.Random(seed)
    t, v, out = 0.0, 100.0, []
    period = rng.uniform(0.5, 2.0)
    for i in range(n):
        t += rng.uniform(0.5, 1.5) / rate
        if pattern == "rising":
            v += step * rng.uniform(0.2, 2.0)
        elif pattern == "falling":
            v -= step * rng.uniform(0.2, 2.0)
        elif pattern == "oscillating":
            v = 100.0 + 10 * step * math.sin(2 * math.pi * t / period) + rng.uniform(-step, step)
        else:  # a random walk that changes direction at random
            v += step * rng.uniform(-2.0, 2.0)
        out.append((t, v))
    return out


def run(guard: str, params: dict, trace, mode: str = "parametric", rum: UpdateMonitor | None = None):
    clock = Clock()
    core = ClientCore("c", mode=mode, clock=clock)
    plan = compile_guard(guard, Q, {k: type(v) for k, v in params.items()})
    state = core.subscribe(Q, plan, dict(params), on_event=None, rum=rum)
    core.take()
    name = "n" if "n" in params else "x"
    messages = 0
    for t, v in trace:
        clock.now = t
        core.update(state, {name: int(round(v)) if name == "n" else v})
        for var, exact in enumerate(state.values):
            told = state.wire[var]
            if isinstance(exact, Interval):
                assert told.covers(exact), (t, var, exact, told)
            else:
                assert told == exact
        messages += sum(1 for m in core.take() if type(m) in (Sub, Unsub, Upd))
    return messages, core, state


@settings(max_examples=60, deadline=None)
@given(pattern=st.sampled_from(["rising", "falling", "oscillating", "walk"]),
       guard=st.sampled_from(sorted(GUARDS)),
       rate=st.floats(0.5, 40.0), step=st.floats(0.01, 5.0), seed=st.integers(0, 10_000),
       mode=st.sampled_from(["parametric", "resub"]))
def test_the_broker_is_told_an_interval_that_covers_the_exact_one_after_every_change(pattern, guard, rate, step,
                                                                                     seed, mode):
    text, params = GUARDS[guard]
    run(text, params, series(pattern, 60, rate, step, seed), mode, UpdateMonitor())


@pytest.mark.parametrize("pattern", ["rising", "falling", "oscillating"])
@pytest.mark.parametrize("guard", sorted(GUARDS))
@pytest.mark.parametrize("rate", [6.0, 20.0, 50.0])
@pytest.mark.parametrize("mode", ["parametric", "resub"])
def test_above_freq_approx_the_monitor_sends_fewer_subscription_messages(pattern, guard, rate, mode):
    text, params = GUARDS[guard]
    trace = series(pattern, 200, rate, 0.5, seed=zlib.crc32(f"{pattern} {guard}".encode()) % 1000)  # reproducible
    exact, _, _ = run(text, params, trace, mode)
    approx, core, _ = run(text, params, trace, mode, UpdateMonitor())
    assert approx < exact, (approx, exact)
    assert core.stats["rum_approximated"] > 0


@pytest.mark.parametrize("seed", [106, 235])
def test_a_noisy_steady_rise_is_not_taken_for_an_oscillation(seed):
    # 50 changes a second, each a random step up: the interpolating spline wiggles between the
    # points (9 turns in the window) and its last piece, extrapolated a window ahead, fell to
    # -67,356. Both made every approximation the exact value, so every change went out.
    trace = series("rising", 200, 50.0, 0.5, seed=seed)
    exact, _, _ = run("price < x", {"x": 100.0}, trace)
    approx, core, state = run("price < x", {"x": 100.0}, trace, rum=UpdateMonitor())
    assert approx < exact / 4, (approx, exact)
    last_second = [v for t, v in trace if t >= trace[-1][0] - 1.0]
    rise = last_second[-1] - last_second[0]  # about what the trend adds in a window
    assert state.values[0].hi <= state.wire[0].hi <= state.values[0].hi + 3 * rise  # ahead, not run off


def test_below_freq_approx_every_change_goes_out_exactly():
    trace = series("rising", 30, 1.0, 0.5, seed=1)  # never 4 changes within a second
    exact, _, _ = run("price < x", {"x": 100.0}, trace)
    monitored, core, state = run("price < x", {"x": 100.0}, trace, rum=UpdateMonitor())
    assert monitored == exact == 30
    assert core.stats["rum_approximated"] == 0 and state.wire == state.values


def test_after_a_burst_the_exact_subscription_is_reinstated():
    trace = series("oscillating", 40, 20.0, 0.5, seed=3)
    _, core, state = run("price == x", {"x": 100.0}, trace, rum=UpdateMonitor(window=1.0))
    assert state.wire != state.values  # widened to an interval while oscillating
    lo, hi = state.wire[0].lo, state.wire[0].hi
    assert lo < state.values[0].lo and hi >= state.values[0].hi
    core.clock.now = trace[-1][0] + 1.0  # a window later with no change
    assert core.settle(state)
    (upd,) = core.take()
    assert state.wire == state.values  # one UPD puts the equality back (Fig. 10 lines 38-40)
    assert list(upd.changes.values())[0][0] == state.values[0]
    assert not core.settle(state)


def test_prediction_follows_the_paper_cases():
    t = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    rising = [Interval(-INF, True, 10.0 + i, False) for i in range(6)]  # price < x, x rising 10/s
    a = approximate(t, rising, 0.5, 1.0)
    assert a.hi == pytest.approx(25.0, abs=0.5) and a.lo == -INF  # extrapolated a window ahead
    falling = [Interval(20.0 - i, True, INF, True) for i in range(6)]  # price >= x, x falling
    b = approximate(t, falling, 0.5, 1.0)
    assert b.lo == pytest.approx(5.0, abs=0.5)
    assert approximate(t, falling[::-1], 0.5, 1.0) == falling[0]  # rising lower bound: stays put
    wave = [Interval(v, True, v, True) for v in (10.0, 14.0, 10.0, 6.0, 10.0, 14.0)]  # == x, oscillating
    c = approximate(t, wave, 0.5, 1.0)
    assert c.lo <= 6.0 and c.hi >= 14.0 and c.covers(wave[-1])


def test_bad_monitor_settings_are_refused():
    with pytest.raises(ValueError, match="window"):
        UpdateMonitor(window=0)
    with pytest.raises(ValueError, match="4 points"):
        UpdateMonitor(min_history=2)
    with pytest.raises(TypeError, match="rum="):
        UpdateMonitor.of("yes")
    assert UpdateMonitor.of(True) == UpdateMonitor() and UpdateMonitor.of(None) is None
    assert UpdateMonitor.of({"freq_approx": 8}).freq_approx == 8
