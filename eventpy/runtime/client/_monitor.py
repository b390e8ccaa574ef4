"""The runtime update monitor (RUM) of a subscriber: 000 §6, Fig. 10 and Fig. 11.

The monitor sits between a subscription's exact variables (what the local filter uses) and what its
edge broker is told. It watches each numeric constraint variable, an Interval whose ends are bound
to parameters or generated variables (001 §5.2: `price < limit` is price in (-inf, limit), and
`price == p` is [p, p]), so it works on the values the broker sees and on both ends of an interval
(issue 6, scope 3).

Per variable it keeps the change times and values over the window δ (Fig. 10 lines 21-22, 26-27).
While fewer than `freq_approx` changes per second arrive, every change goes out exactly (line 43).
Above it, with at least `min_history` points (line 28), the monitor fits a cubic spline to each
finite end over the window (Fig. 11 line 47, scipy's CubicSpline) and sends an over-approximation:
- oscillating (the spline turns at least twice in the window and the values themselves change
  direction at least twice, line 48): the upper end widens to the highest value v1 and the lower
  end to the lowest v2 (lines 49-64; `==` becomes [v2, v1]);
- monotone (lines 65-87): the end the trend approaches moves to the value extrapolated δ ahead,
  the other end stays where it is (`<` rising moves up, `>` falling moves down, `==` becomes the
  interval from the last value to the predicted one). The extrapolation is kept to the window's
  straight-line trend (`_extrapolate`): the spline's last piece can run off a window ahead.
The approximation is then widened to include the exact value, so it covers the exact subscription
when it is sent. Later changes that stay inside it send nothing; a change that leaves it, or one
arriving δ after it was made (line 33), makes a new one at once. So the broker's interval covers
the exact one at every instant, except for the propagation delay every update has; the local
filter keeps delivery strict. When the rate falls below the threshold the exact value goes out
again (lines 37-45). In this model an equality widened to an interval is still the same
variable, so reinstating it is one UPD, not the SUB and UNSUB of lines 38-40.

Choices where this differs from the pseudo-code:
- freq[x] (line 26) counts changes of x within the window, the current one included; the prose
  of §6.2 counts UPDs issued, which the approximation itself would lower, so the monitor would
  leave approximation mode because it works. A count over a sliding window flaps at rates near
  freq_approx (a Poisson stream at 5/s has fewer than 4 changes in a second about a quarter of the
  time); each flap costs at most the reinstating UPD and one approximation, as line 37 implies.
- hist[x] (lines 27, 45) keeps the new values v' of the last δ, not the old ones v up to a count:
  §6.3 fits "the values observed over [t-δ, t]", and the fit then includes the current value.
- Φorig, Φprev (lines 18-19, 30-31, 34) are not kept: each approximation is computed from the
  history and widened to include the exact value (`SubscriptionState.values`), which is Φorig.
- vars[x] (lines 24, 40, 50, 56-57, 69-79): no fresh variables. A constraint variable is an
  interval, so widening `==` (lines 49-53, 78-87) or moving both ends (lines 54-57) is one UPD of
  that variable.
- line 33: within δ of the last approximation the paper sends nothing; here a change the
  approximation does not cover makes a new one at once (else the broker would miss events).
- lines 37-44 run at a change only; a parameter that stops changing would keep its approximation
  for ever. `settle` (a timer at `due`) also ends it, at the moment the rate over the window falls
  below freq_approx, and only then: an approximation older than δ whose rate is still high stays.
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from dataclasses import dataclass
from typing import Any

from typing import TYPE_CHECKING

import numpy as np

from ..model import Interval

if TYPE_CHECKING:
    from scipy.interpolate import CubicSpline


@dataclass(frozen=True)
class UpdateMonitor:
    """The paper's knobs: the window δ (seconds), the threshold `freq_approx` (changes per
    second; 4 in 000 §8.12) and the minimum history for a spline fit."""

    window: float = 1.0
    freq_approx: float = 4.0
    min_history: int = 4

    def __post_init__(self) -> None:
        # Checked whole here: a knob the monitor cannot use raised out of a later `update` (an
        # infinite window: OverflowError; min_history 4.5: an index error) after the exact value
        # was stored locally and before it was sent, so the broker kept the old one for good.
        for knob in ("window", "freq_approx"):
            value = getattr(self, knob)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"the monitor's {knob} is a number, not {type(value).__name__} {value!r}")
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"the monitor's {knob} must be positive and finite, not {value}")
        if not math.isfinite(self.window * self.freq_approx):
            raise ValueError(f"the monitor's window ({self.window}) times freq_approx ({self.freq_approx}) "
                             "must be finite: it is the number of changes that make a rate high")
        history = self.min_history
        if isinstance(history, bool) or not isinstance(history, numbers.Integral):
            raise TypeError(f"the monitor's min_history is a whole number of changes, not "
                            f"{type(history).__name__} {history!r}")
        if history < 4:
            raise ValueError(f"a cubic spline needs at least 4 points: min_history >= 4, not {history}")

    @classmethod
    def of(cls, spec: Any) -> "UpdateMonitor | None":
        """`rum=` as the API takes it: None/False (off), True (defaults), a mapping of knobs, or
        an UpdateMonitor."""
        if spec is None or spec is False:
            return None
        if spec is True:
            return cls()
        if isinstance(spec, UpdateMonitor):
            return spec
        if isinstance(spec, dict):
            unknown = sorted(map(str, set(spec) - {"window", "freq_approx", "min_history"}))
            if unknown:
                raise TypeError(f"rum= knows window, freq_approx and min_history, not {', '.join(unknown)}")
            return cls(**spec)
        raise TypeError(f"rum= takes True, a dict of window/freq_approx/min_history, or an UpdateMonitor, "
                        f"not {type(spec).__name__}")


class _Track:
    """History and current approximation of one variable."""

    __slots__ = ("times", "values", "approx", "since", "is_int")

    def __init__(self, is_int: bool) -> None:
        self.times: deque[float] = deque()
        self.values: deque[Interval] = deque()
        self.approx: Interval | None = None  # what the broker holds while approximating
        self.since = 0.0  # when `approx` was made (last[x] of Fig. 10)
        self.is_int = is_int


class SubscriptionMonitor:
    """The monitor of one subscription: `on_change` says what to send for a variable's new exact
    value, or None to send nothing."""

    def __init__(self, config: UpdateMonitor, numeric_vars: dict[int, bool]) -> None:
        self.config = config
        self.tracks = {var: _Track(is_int) for var, is_int in numeric_vars.items()}

    def on_change(self, var: int, exact: Any, now: float) -> Any:
        track = self.tracks.get(var)
        if track is None or not isinstance(exact, Interval):
            return exact
        cfg = self.config
        track.times.append(now)
        track.values.append(exact)
        if not self._high(track, now):  # Fig. 10 lines 26 and 28
            track.approx = None  # back to exact updates (Fig. 10 lines 37-44)
            return exact
        if track.approx is not None and now - track.since < cfg.window and track.approx.covers(exact):
            return None
        track.approx = approximate(list(track.times), list(track.values), now, cfg.window, track.is_int)
        track.since = now
        return track.approx

    def _high(self, track: _Track, now: float) -> bool:
        """freq[x] >= freq_approx with a history long enough to fit (Fig. 10 lines 26, 28): the
        changes within the window δ before `now`, counted (the older ones are dropped, line 45)."""
        cfg = self.config
        while track.times and track.times[0] < now - cfg.window:
            track.times.popleft()
            track.values.popleft()
        return len(track.times) >= self._enough

    @property
    def _enough(self) -> int:
        """The fewest changes within a window that make the rate high enough to approximate."""
        cfg = self.config
        n = max(cfg.min_history, math.ceil(cfg.freq_approx * cfg.window))
        while n > cfg.min_history and (n - 1) / cfg.window >= cfg.freq_approx:
            n -= 1  # (the float product may round up past the exact count)
        while n / cfg.window < cfg.freq_approx:
            n += 1
        return n

    def settle(self, now: float) -> list[int]:
        """The variables whose approximation ends at `now` because their rate has fallen below
        freq_approx (Fig. 10 line 37, asked by a timer as well as by a change): the paper only
        reinstates on the next change, so a parameter that stops changing would keep its
        over-approximation for ever. A stale approximation (older than δ) whose rate is still high
        stays: it covers every change so far, and the next change replaces it (line 33); ending
        it then would send the exact value and an approximation again at the next change."""
        ended = []
        for var, track in self.tracks.items():
            if track.approx is not None and not self._high(track, now):
                track.approx = None
                ended.append(var)
        return ended

    def due(self) -> float | None:
        """When, without another change, the first approximation in force can end (`settle`):
        the moment enough of its changes have left the window; None if none is in force."""
        window, enough, due = self.config.window, self._enough, None
        for track in self.tracks.values():
            if track.approx is None:
                continue
            if len(track.times) < enough:
                return -math.inf  # already due
            oldest = track.times[len(track.times) - enough]  # leaving the window drops the rate
            t = oldest + window
            while not oldest < t - window:  # the eviction test of `_high`, in floats
                t = math.nextafter(t, math.inf)
            due = t if due is None else min(due, t)
        return due

    def approximating(self) -> bool:
        return any(track.approx is not None for track in self.tracks.values())

    def reset(self) -> None:
        for track in self.tracks.values():
            track.approx = None


def approximate(times: list[float], values: list[Interval], now: float, window: float,
                is_int: bool = False) -> Interval:
    """Fig. 11: an interval that covers the last exact value and, by the spline's reading of the
    history, the values to come within `window`."""
    # scipy is imported here, on the first approximation: at `import eventpy` it took 0.3 s and a
    # fifth of the heap that every full garbage collection of an application walks
    from scipy.interpolate import CubicSpline

    # Near the float limits (1e300) the fit's arithmetic overflows to inf or nan, which the checks
    # below turn into "no prediction"; numpy's warnings would reach the program's stderr, or raise
    # out of `update` where warnings are errors.
    with np.errstate(all="ignore"):
        return _approximate(CubicSpline, times, values, now, window, is_int)


def _approximate(CubicSpline: Any, times: list[float], values: list[Interval], now: float, window: float,
                 is_int: bool) -> Interval:
    exact = values[-1]
    t = np.asarray(times, dtype=float)
    keep = np.append(np.diff(t) > 0, True)  # CubicSpline needs increasing times: last value wins
    t = t[keep]
    lo, hi = exact.lo, exact.hi
    lo_closed, hi_closed = exact.lo_closed, exact.hi_closed
    ends = ((0, [v.lo for v, k in zip(values, keep) if k]), (1, [v.hi for v, k in zip(values, keep) if k]))
    for end, series in ends:
        if len(t) < 4 or not all(math.isfinite(x) for x in series):
            continue  # an infinite end (`<`, `>`) stays as it is
        y = np.asarray(series, dtype=float)
        try:
            spline = CubicSpline(t, y)
            turns = spline.derivative().roots(extrapolate=False)
        except ValueError:  # near 1e300 the fit's slopes overflow, which scipy refuses: no prediction
            continue
        turns = turns[(turns > t[0]) & (turns < t[-1])]
        # An interpolating spline through noisy but monotone values wiggles between them; only a
        # spline whose turns the values confirm (they change direction twice) is oscillating.
        steps = np.sign(np.diff(y))
        steps = steps[steps != 0]
        if len(turns) >= 2 and np.count_nonzero(steps[1:] != steps[:-1]) >= 2:  # oscillating (line 48)
            sampled = np.concatenate([y, spline(turns)])
            target = float(sampled.min()) if end == 0 else float(sampled.max())
            if not math.isfinite(target):  # the fit overflowed: no reading of the extremes
                continue
        else:  # monotone: extrapolate δ ahead (line 67)
            target = _extrapolate(spline, t, y, now + window, window)
            if target is None:
                continue
            target = min(target, series[-1]) if end == 0 else max(target, series[-1])
        if end == 0 and target < lo:
            lo, lo_closed = (math.floor(target) if is_int else target), True
        elif end == 1 and target > hi:
            hi, hi_closed = (math.ceil(target) if is_int else target), True
    return Interval(lo, lo_closed, hi, hi_closed).lub(exact)


def _extrapolate(spline: CubicSpline, t: np.ndarray, y: np.ndarray, at: float, window: float) -> float | None:
    """The spline's value at `at`, kept to the trend of the window: a cubic piece extrapolated a
    whole window ahead can run off either way (through 50 noisy points it predicted -67,356 for a
    series rising past 208). Against the trend, the straight-line trend is used instead; along it,
    the prediction goes at most twice as far as the trend does."""
    predicted = float(spline(at))
    slope = (y[-1] - y[0]) / (t[-1] - t[0])
    linear = float(y[-1] + slope * window)
    if not math.isfinite(predicted) or not math.isfinite(linear):
        return None
    ahead, trend = predicted - y[-1], linear - y[-1]
    if ahead * trend <= 0:  # against the trend, or no trend at all
        return linear
    if abs(ahead) > 2 * abs(trend):
        return float(y[-1] + 2 * trend)
    return predicted


__all__ = ["UpdateMonitor", "SubscriptionMonitor", "approximate"]
