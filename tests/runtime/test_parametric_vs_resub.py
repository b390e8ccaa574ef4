"""000 §8 in the simulator: with subscribers updating at high rates, parametric subscriptions send
at most 55% of the subscription messages of re-subscription, and their update delay (000 §8.1 (a))
is lower. Deterministic: virtual time, the default cost model, fixed seeds."""

from __future__ import annotations

import pytest

from eventpy.runtime.comparison import moving_windows
from eventpy.runtime.overlay import line, tree


def run(mode, topology, subscribers, rate):
    return moving_windows(mode, topology, subscribers=subscribers, rate=rate)


@pytest.mark.parametrize("topology", [line(3), tree(7)], ids=["line", "tree"])
def test_parametric_halves_messages_and_lowers_delay(topology):
    p = run("parametric", topology, subscribers=200, rate=50.0)
    r = run("resub", topology, subscribers=200, rate=50.0)
    assert p["sub_messages"] <= 0.55 * r["sub_messages"], (p["sub_messages"], r["sub_messages"])
    assert p["delay_samples"] > 100 and r["delay_samples"] > 100
    assert p["delay_mean"] < r["delay_mean"], (p["delay_mean"], r["delay_mean"])


def test_light_load_still_halves_messages():
    p = run("parametric", line(3), subscribers=40, rate=10.0)
    r = run("resub", line(3), subscribers=40, rate=10.0)
    assert p["sub_messages"] <= 0.55 * r["sub_messages"]
    assert p["delay_mean"] <= r["delay_mean"]
