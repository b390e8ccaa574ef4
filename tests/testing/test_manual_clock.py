"""eventpy.testing.ManualClock: elapsed() moves when the test says, not with the wall clock."""

import importlib
import math
import textwrap

import pytest

import eventpy
from eventpy.testing import ManualClock, fresh_overlay

Parcel = eventpy.EventType("testing.Parcel", x=float)
COURIER = '''
class Courier:
    def __init__(self, x0: float, speed: float):
        self.x0 = x0
        self.speed = speed
        self.heard = []

    event def parcel(self, x: float) when abs(x - (self.x0 + self.speed * elapsed())) < 2:
        self.heard.append(x)
'''


def test_a_subscription_moves_only_when_the_clock_is_advanced():
    clock = ManualClock(start=1_000.0)
    with fresh_overlay(clock=clock) as overlay:
        got = []
        sub = overlay.node.subscribe(Parcel, "abs(x - (x0 + v * elapsed())) < 1", {"x0": 0.0, "v": 2.0},
                                     on_event=lambda e: got.append(e["x"]))
        eventpy.drain(5)
        overlay.node.publish(Parcel, x=0.0)
        overlay.node.publish(Parcel, x=20.0)  # where it will be in 10 s: not yet
        eventpy.drain(5)
        assert eventpy.elapsed(sub) == 0.0
        clock.advance(10)
        assert eventpy.elapsed(sub) == 10.0
        overlay.node.publish(Parcel, x=0.0)  # where it was: no longer
        overlay.node.publish(Parcel, x=20.0)
        eventpy.drain(5)
        assert got == [0.0, 20.0]
        assert eventpy.stats()["broker_pub_forwarded"] == 2  # the broker moved it too, not only the local filter


def test_an_epy_object_on_the_manual_clock(tmp_path, monkeypatch):
    (tmp_path / "couriers_clock.epy").write_text(textwrap.dedent(COURIER))
    monkeypatch.syspath_prepend(str(tmp_path))
    couriers = importlib.import_module("couriers_clock")
    clock = ManualClock()
    with fresh_overlay(clock=clock):
        c = couriers.Courier(5.0, 1.5)
        clock.advance(10)
        assert eventpy.elapsed(c) == 10.0
        couriers.Courier.parcel(20.0)  # 5 + 1.5 * 10
        couriers.Courier.parcel(5.0)
        eventpy.drain(5)
        assert c.heard == [20.0]


def test_the_next_overlay_is_on_the_wall_clock_again():
    clock = ManualClock(start=0.0)
    with fresh_overlay(clock=clock) as overlay:
        assert overlay.clock is clock
    with fresh_overlay() as overlay:
        sub = overlay.node.subscribe(Parcel, "x < elapsed()")
        assert overlay.clock is None and eventpy.elapsed(sub) < 60


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "1", True])
def test_advance_refuses_what_is_not_a_step_forward(bad):
    clock = ManualClock(start=5.0)
    with pytest.raises(ValueError, match="advance takes a finite number of seconds"):
        clock.advance(bad)
    assert clock() == 5.0


def test_a_clock_starts_at_a_finite_time():
    with pytest.raises(ValueError, match="finite"):
        ManualClock(start=math.nan)
    assert ManualClock(start=3)() == 3.0 and ManualClock(start=3).advance(0.5) == 3.5
