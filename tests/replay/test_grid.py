"""The whole replay on Spark, on a grid small enough for the test suite: traces, runs, the ground
truth job, the join, metrics.parquet and the report."""

from __future__ import annotations

import math

import pytest

from eventpy.replay.config import parse
from eventpy.replay.grid import ground_truth_job, run_grid
from eventpy.replay.report import write_report
from eventpy.replay.truth import ground_truth
from eventpy.replay.workloads import generate

REQUIRED = ("workload", "mode", "matcher", "update_rate", "subscribers", "seed", "throughput", "latency_p50_ms",
            "latency_p99_ms", "delay_ms", "spurious", "missed", "sub_messages", "bytes")


@pytest.fixture(scope="module")
def replayed(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("replay")
    config = parse({"replay": {"workload": "at", "seeds": [1], "update_rates": [0, 100], "subscribers": [20, 40],
                               "service": "model", "link_delay_ms": 10},
                    "workload": {"duration": 0.6, "types": 40}}, name="tiny")
    rows = run_grid(spark, config, out)
    return config, rows, out


def test_one_metrics_row_per_grid_point_with_the_required_columns(spark, replayed):
    config, rows, out = replayed
    assert len(rows) == len(config.points()) == 3 * 2  # (0, 40), (100, 40), (100, 20) x 2 modes
    table = spark.read.parquet(str(out / "metrics.parquet"))
    assert set(REQUIRED) <= set(table.columns)
    assert table.count() == len(rows)
    assert {r["subscribers"] for r in rows} == {20, 40}


def test_without_updates_both_modes_deliver_the_ground_truth_exactly(replayed):
    _, rows, _ = replayed
    still = [r for r in rows if r["update_rate"] == 0]
    assert {r["mode"] for r in still} == {"parametric", "resub"}
    for r in still:
        assert r["wanted"] > 0
        assert (r["missed"], r["false_positives"], r["duplicates"], r["spurious"]) == (0, 0, 0, 0), r
        assert r["useful"] == r["delivered"] == r["wanted"]


def test_updates_cost_resub_more_subscription_messages_and_nothing_is_duplicated(replayed):
    _, rows, _ = replayed
    busy = {r["mode"]: r for r in rows if r["update_rate"] == 100 and r["subscribers"] == 40}
    assert busy["resub"]["sub_messages"] > busy["parametric"]["sub_messages"] > 0
    assert busy["resub"]["bytes"] > busy["parametric"]["bytes"]
    assert all(r["duplicates"] == 0 for r in rows)
    assert all(r["throughput"] > 0 and not math.isnan(r["latency_p50_ms"]) for r in rows)


def test_the_spark_ground_truth_equals_the_in_process_one(spark, replayed):
    config, _, out = replayed
    truth = spark.read.parquet(str(out / "truth"))
    for spec in config.traces():
        trace = generate(spec.workload, spec.seed, spec.generator_settings())
        got = {(r.eid, r.sub_id) for r in truth.filter(truth.trace == spec.trace_id).collect()}
        assert got == ground_truth(trace)


def test_the_truth_job_reads_only_the_parquet_traces(spark, replayed, tmp_path):
    import shutil
    config, _, out = replayed
    shutil.copytree(out / "traces", tmp_path / "traces")  # the traces alone, nothing else of the run
    again = {(r.trace, r.eid, r.sub_id) for r in ground_truth_job(spark, tmp_path / "traces").collect()}
    want = set()
    for spec in config.traces():
        trace = generate(spec.workload, spec.seed, spec.generator_settings())
        want |= {(spec.trace_id, eid, sid) for eid, sid in ground_truth(trace)}
    assert again == want and want


def test_the_report_has_tables_table_i_and_plots(replayed):
    config, rows, out = replayed
    path = write_report(config, rows, out, command="eventpy replay tiny.toml --out x", master="local[2]", wall=1.0)
    text = path.read_text()
    for heading in ("## Against update rate", "## Against subscribers", "## 000 Table I from this run",
                    "### Where this run differs from the paper, and why", "## Plots"):
        assert heading in text
    assert "| fastint | delay of resub / parametric |" in text
    assert "4.05×" in text  # the paper's AT figure beside ours
    top = [r for r in rows if r["update_rate"] == 100 and r["subscribers"] == 40]
    updates = {r["updates"] for r in top}
    assert len(updates) == 1 and all(0 <= r["delay_samples"] <= r["updates"] for r in top)  # same trace
    assert f"out of {updates.pop():,} updates" in text  # how many updates the delay rests on
    assert "Background (the same in every report" in text
    for name in ("throughput", "delay_ms", "spurious", "sub_messages"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 1000


def test_the_report_lists_the_busiest_brokers(spark, replayed):
    from eventpy.replay.grid import busiest_brokers
    config, rows, out = replayed
    brokers = busiest_brokers(spark, out, rows, k=3)
    assert {b["mode"] for b in brokers} == {"parametric", "resub"}
    assert all(b["update_rate"] == 100 and b["subscribers"] == 40 for b in brokers)
    assert len(brokers) == 6  # 3 per point
    resub = [b["sub_messages"] for b in brokers if b["mode"] == "resub"]
    assert resub == sorted(resub, reverse=True) and resub[0] > 0
    path = write_report(config, rows, out, command="x", master="local[2]", wall=1.0, brokers=brokers)
    assert "## Per broker" in path.read_text()


def test_single_seed_pooled_latencies_are_the_runs_own(replayed):
    _, rows, _ = replayed
    for r in rows:
        assert r["latency_p50_pooled_ms"] == pytest.approx(r["latency_p50_ms"], abs=1e-9)
        assert r["latency_p99_pooled_ms"] == pytest.approx(r["latency_p99_ms"], abs=1e-9)


def test_latency_percentiles_over_seeds_are_pooled_not_averaged(spark, tmp_path):
    """The report's latency over two seeds is the nearest-rank percentile of both seeds'
    latencies together (it was the mean of the two seeds' percentiles), checked against the
    simulator run in process."""
    from eventpy.replay.report import averaged
    from eventpy.replay.simulate import run_trace
    from eventpy.runtime.transports.inproc import nearest_rank

    config = parse({"replay": {"workload": "at", "seeds": [1, 2], "modes": ["parametric"], "update_rates": [50],
                               "subscribers": [20], "service": "model", "link_delay_ms": 10},
                    "workload": {"duration": 0.6, "types": 40}}, name="two-seeds")
    rows = run_grid(spark, config, tmp_path)
    latencies, per_seed = [], []
    for seed in (1, 2):
        spec = next(p.trace for p in config.points() if p.trace.seed == seed)
        trace = generate("at", seed, spec.generator_settings())
        result = run_trace(trace, "parametric", service="model", link_delay=0.01)
        published = {eid: result.t0 + t for t, eid, *_ in trace.events}
        mine = sorted(t - published[e] for e, _, t in result.deliveries)
        per_seed.append(nearest_rank(mine, 0.99))
        latencies += mine
    latencies.sort()
    [row] = averaged(rows)
    assert row["latency_p50_ms"] == pytest.approx(1e3 * nearest_rank(latencies, 0.5), abs=1e-6)
    assert row["latency_p99_ms"] == pytest.approx(1e3 * nearest_rank(latencies, 0.99), abs=1e-6)
    assert sorted(r["latency_p99_ms"] for r in rows) == pytest.approx(sorted(1e3 * x for x in per_seed), abs=1e-6)
