"""The update monitor on the replay's high-frequency AT workload (000 §8.12): with instantaneous
links and brokers no event the ground truth wants is missed because of the monitor, it sends
fewer subscription messages, and the grid and the report carry it as its own line."""

from __future__ import annotations

import pytest

from eventpy.replay.config import ConfigError, parse
from eventpy.replay.report_monitor import monitor_section
from eventpy.replay.simulate import run_trace
from eventpy.replay.truth import ground_truth
from eventpy.replay.workloads import generate


@pytest.fixture
def instantaneous(monkeypatch):
    """Brokers that take no time, so that only the monitor can make an event go missing."""
    import eventpy.replay.simulate as simulate
    monkeypatch.setitem(simulate.SERVICES, "model", lambda: (lambda msg, sends, cpu: 0.0))


@pytest.mark.parametrize("mode", ["parametric", "resub"])
def test_with_the_monitor_nothing_wanted_is_missed_and_fewer_messages_are_sent(instantaneous, mode):
    trace = generate("at", 4, {"subscribers": 30, "update_rate": 2, "hf_share": 0.3, "hf_rate": 12,
                               "duration": 3.0, "types": 20})
    truth = ground_truth(trace)
    exact = run_trace(trace, mode, link_delay=0.0, memory=False)
    monitored = run_trace(trace, mode, link_delay=0.0, memory=False, rum=True)
    for result in (exact, monitored):
        got = {(e, s) for e, s, _ in result.deliveries}
        assert got == truth  # no event missed, none delivered that the guard did not want
    assert monitored.metrics["rum_approximated"] > 0
    assert monitored.metrics["sub_messages"] < exact.metrics["sub_messages"]
    assert monitored.metrics["spurious"] >= exact.metrics["spurious"]  # the price: wider brokers' filters
    # without the monitor a broker only ever holds values the subscription had: every event the
    # local filter drops is one of an update (000 §8.1 (c)); with it, only some are
    assert exact.metrics["spurious_updates"] == exact.metrics["spurious"]
    assert monitored.metrics["spurious_updates"] <= monitored.metrics["spurious"]


def test_the_config_takes_monitors_and_knobs():
    c = parse({"replay": {"workload": "at", "monitors": [False, True], "modes": ["parametric"]},
               "monitor": {"window": 0.5, "freq_approx": 4}})
    labels = sorted({(p.mode, p.rum is not None) for p in c.points()})
    assert labels == [("parametric", False), ("parametric", True)]
    on = next(p for p in c.points() if p.rum is not None)
    assert dict(on.rum) == {"window": 0.5, "freq_approx": 4} and on.point_id.endswith("-rum")
    with pytest.raises(ConfigError, match="monitors has .yes.; allowed: true, false"):
        parse({"replay": {"workload": "at", "monitors": ["yes"]}})
    with pytest.raises(ConfigError, match="\\[monitor\\]"):
        parse({"replay": {"workload": "at"}, "monitor": {"window": -1}})


def test_the_report_sets_the_monitor_beside_the_same_mode_without_it():
    c = parse({"replay": {"workload": "at", "monitors": [False, True], "modes": ["parametric"]}})
    base = {"update_rate": 10.0, "subscribers": 150, "matcher": "fastint", "rum_approximated": 0,
            "rum_suppressed": 0}
    avg = [{**base, "mode": "parametric", "throughput": 2.0, "delay_ms": 300.0, "spurious": 100, "sub_messages": 1000,
            "utilization": 0.98, "useful": 1000},
           {**base, "mode": "parametric+rum", "throughput": 3.0, "delay_ms": 150.0, "spurious": 120,
            "sub_messages": 400, "rum_approximated": 50, "rum_suppressed": 900, "utilization": 0.6, "useful": 1500}]
    text = "\n".join(monitor_section(c, avg))
    assert "| parametric | fastint | 10 | 150 | +50% | 2× | +20% | — | -60% | 50 | 900 |" in text
    assert "+92%" in text and "+27%" in text
    # the computed explanation: a saturated baseline relieved by the monitor; spurious per approximation
    assert "98% busy (saturated" in text and "brought it to 60%" in text
    assert "20 more spurious events with the monitor, 0.4 per approximation" in text and "(10.0% of the useful" in text
    # still saturated with the monitor: no "brought it to 99%, hence" (at-slow: 99% -> 99%, throughput +31%)
    busy = [dict(avg[0], utilization=0.99), dict(avg[1], utilization=0.99)]
    busy_text = "\n".join(monitor_section(c, busy))
    assert "brought it to" not in busy_text and "hence" not in busy_text
    assert ("99% busy without the monitor (saturated: thrashing, 000 §8.12) and still 99% with its -60% subscription "
            "messages; throughput +50%") in busy_text
    calm = [dict(r, utilization=0.3) for r in avg]
    calm_text = "\n".join(monitor_section(c, calm))  # not "hardly move": throughput rose by 50% here
    assert "30% busy without the monitor and 30% with it; throughput +50% and an update delay of 150 ms" in calm_text
    # 000 §8.1 (c)'s count, where the run has it: its change beside the paper's bound
    counted = [dict(avg[0], spurious_updates=100), dict(avg[1], spurious_updates=110)]
    counted_text = "\n".join(monitor_section(c, counted))
    assert "| +20% | +10% | -60% |" in counted_text
    assert "spurious events went from 100 to 110 (+10%): within the paper's +27%" in counted_text
    beyond = [dict(avg[0], spurious_updates=10), dict(avg[1], spurious_updates=110)]
    assert "from 10 to 110 (+1000%): beyond the paper's +27%" in "\n".join(monitor_section(c, beyond))
    # none without the monitor: no relative change, so neither within nor beyond (it said "beyond" for 0 -> 0)
    for on in (0, 12):
        zero = [dict(avg[0], spurious_updates=0), dict(avg[1], spurious_updates=on)]
        zero_text = "\n".join(monitor_section(c, zero))
        assert "beyond the paper" not in zero_text and "within the paper" not in zero_text
        assert (f"spurious events went from 0 to {on} ({'—' if not on else 'new'}): no change to set against the "
                "paper's +27%, since there were none without the monitor.") in zero_text
