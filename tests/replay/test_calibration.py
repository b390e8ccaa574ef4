"""`service = "calibrated"`: a cost model fitted to a measured run, so that the rest of the grid is
reproducible within the run and still grounded in what the brokers really cost."""

from __future__ import annotations

import json

import pytest

from eventpy.replay.config import parse
from eventpy.replay.grid import run_grid
from eventpy.replay.simulate import run_trace
from eventpy.replay.workloads import generate
from eventpy.runtime.transports.inproc import CostModel, Recorder


def test_the_fit_recovers_a_base_and_a_per_message_cost():
    r = Recorder()
    for n in range(1, 30):
        r(object.__new__(type("Pub", (), {})), [None] * n, 10e-6 + 2e-6 * n)
    model = r.calibrate()
    assert model.pub == pytest.approx(10e-6, rel=1e-6) and model.per_forward == pytest.approx(2e-6, rel=1e-6)


def test_with_a_calibrated_model_a_point_replays_identically():
    trace = generate("at", 2, {"subscribers": 20, "update_rate": 50, "duration": 0.4, "types": 20})
    recorder = Recorder()
    run_trace(trace, "resub", service=recorder, memory=False)
    assert {"Pub", "Sub", "Unsub"} <= set(recorder.samples)
    model = recorder.calibrate()
    assert isinstance(model, CostModel) and model.sub > 0 and model.unsub > 0
    a, b = (run_trace(trace, "resub", service=model, memory=False) for _ in range(2))
    strip = lambda m: {k: v for k, v in m.items() if k != "wall_s"}  # noqa: E731
    assert strip(a.metrics) == strip(b.metrics) and a.deliveries == b.deliveries


def test_the_grid_calibrates_once_per_mode_and_matcher(spark, tmp_path):
    config = parse({"replay": {"workload": "at", "update_rates": [50], "subscribers": [20], "service": "calibrated",
                               "link_delay_ms": 10},
                    "workload": {"duration": 0.4, "types": 20}}, name="calibrated")
    rows = run_grid(spark, config, tmp_path)
    assert len(rows) == 2
    fitted = json.loads((tmp_path / "calibration.json").read_text())
    assert set(fitted) == {"parametric/fastint", "resub/fastint"}
    assert all(m["pub"] > 0 for m in fitted.values())


def test_a_grid_with_the_monitor_only_still_has_calibration_probes():
    # monitors = [true]: the probes were taken from points without the monitor, so there were none
    # and Spark was asked for zero partitions (ZeroDivisionError)
    from eventpy.replay.grid import calibration_probes
    config = parse({"replay": {"workload": "micro", "update_rates": [0, 10], "subscribers": [3],
                               "monitors": [True], "service": "calibrated", "matchers": ["fastint", "poset"]}})
    probes = calibration_probes(config)
    assert sorted((p.mode, p.matcher) for p in probes) == [(m, k) for m in ("parametric", "resub")
                                                            for k in ("fastint", "poset")]
    assert {p.trace.update_rate for p in probes} == {10.0}  # the heaviest trace
