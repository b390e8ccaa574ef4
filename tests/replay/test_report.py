"""The statements of report.md, from hand-made metric rows (no Spark): each claim rests on the
run's own figures, and says so when they are too few."""

from __future__ import annotations

import math

from eventpy.replay.config import parse
from eventpy.replay.report import averaged, explain, table_i
from eventpy.replay.report_monitor import explain_monitor


def row(rate, mode, seed=1, **kw):
    base = {"update_rate": float(rate), "subscribers": 10, "mode": mode, "rum": False, "matcher": "fastint",
            "seed": seed, "throughput": 10.0, "latency_p50_ms": 20.0, "latency_p99_ms": 30.0, "delay_ms": 50.0,
            "spurious": 100, "missed": 0, "false_positives": 0, "duplicates": 0, "sub_messages": 10, "bytes": 100,
            "utilization": 0.2, "memory_bytes": 1000, "useful": 1000, "wanted": 1000, "rum_approximated": 0,
            "rum_suppressed": 0, "sub_share": 0.1, "delay_samples": 200, "updates": 300 if rate else 0}  # no updates at rate 0 unless a test says so (hf_share)
    return {**base, **kw}


def config(**replay):
    return parse({"replay": {"workload": "at", "update_rates": [0, 100], "subscribers": [10], **replay}})


def report(c, rows):
    avg = averaged(rows)
    ratios = table_i(c, avg)
    return ratios, "\n".join(explain(c, avg, ratios))


def test_table_i_leaves_out_rate_0_where_both_modes_do_the_same_work():
    # at rate 0 the measured noise gave resub 3x the latency of parametric: not an "up to" ratio
    rows = [row(0, "parametric", latency_p50_ms=10.0), row(0, "resub", latency_p50_ms=30.0),
            row(100, "parametric"), row(100, "resub", latency_p50_ms=24.0)]
    ratios, _ = report(config(), rows)
    latency = next(r for r in ratios if r["ratio"] == "latency")
    assert (latency["ours"], latency["at_rate"]) == (1.2, 100.0)
    only_still = [r for r in rows if r["update_rate"] == 0]
    ratios, text = report(config(update_rates=[0]), only_still)
    assert all(math.isnan(r["ours"]) for r in ratios)
    assert "no update rate above 0" in text


def test_a_verdict_needs_enough_counts():
    rows = [row(0, "parametric"), row(0, "resub"),
            row(100, "parametric", spurious=2), row(100, "resub", spurious=5)]
    _, text = report(config(), rows)
    assert ("- fastint spurious: 2.5× here at 100 updates/s rests on 2 spurious events, too few (fewer than 50) "
            "to call it above or below the paper's 4.27×.") in text
    assert "- fastint throughput: 1× here at 100 updates/s (on 1,000 useful events), below the paper's 1.33×." in text


def test_no_mean_over_0_samples():
    rows = [row(0, "parametric"), row(0, "resub"), row(100, "parametric", delay_samples=0, delay_ms=math.nan),
            row(100, "resub", delay_samples=0, delay_ms=math.nan)]
    _, text = report(config(), rows)
    assert "over 0 samples" not in text
    assert ("At 100 updates/s there were no delay samples for parametric fastint and resub fastint (out of 300 "
            "updates), so the run has no delay figure for them.") in text


def test_the_noise_is_not_called_noise_when_it_is_0_by_construction():
    rows = [row(0, "parametric"), row(0, "resub"), row(100, "parametric"), row(100, "resub")]
    _, text = report(config(service="model"), rows)
    assert "noise of this run" not in text and "differs by 0% by construction" in text
    _, text = report(config(service="measured"), [row(0, "parametric", throughput=9.0), *rows[1:]])
    assert "differs by 11%: that is the noise of this run" in text


def test_the_spread_between_seeds_is_reported():
    rows = [row(r, m, seed=s, throughput=t) for r in (0, 100) for m in ("parametric", "resub")
            for s, t in ((1, 9.0), (2, 11.0))]
    _, text = report(config(seeds=[1, 2], service="model"), rows)
    assert "- Between the 2 seeds, throughput varied by up to 20% (max - min over the mean;" in text


def test_no_fixed_claim_about_edge_brokers():
    rows = [row(0, "parametric"), row(0, "resub"),
            row(100, "parametric", spurious=200, useful=900), row(100, "resub", spurious=100, useful=500)]
    _, text = report(config(), rows)
    assert "resub has fewer spurious events (100 vs 200)" in text
    assert "apply updates quickly" not in text and "further up" not in text
    few = [row(0, "parametric"), row(0, "resub"),
           row(100, "parametric", spurious=2, useful=12), row(100, "resub", spurious=1, useful=7)]
    assert "resub has fewer spurious events" not in report(config(), few)[1]  # not on 1 vs 2 events


def test_the_monitor_sentences_name_their_rate():
    c = config(monitors=[False, True])
    rows = [row(r, "parametric", rum=on) for r in (0, 100) for on in (False, True)]
    index = {(r["update_rate"], r["subscribers"], r["mode"], r["matcher"]): r for r in averaged(rows)}
    lines = explain_monitor(c, index)
    assert [ln.split(":")[0] for ln in lines] == ["- parametric, fastint, 0 updates/s, 10 subscribers",
                                                  "- parametric, fastint, 100 updates/s, 10 subscribers"]


def test_the_report_defines_every_column_and_the_rate_unit():
    from eventpy.replay.report import TABLE_COLUMNS, columns_section
    text = "\n".join(columns_section(config()))
    for column in TABLE_COLUMNS + ("memory_bytes", "sub_share", "sub_bytes"):
        assert f"`{column}" in text or f"/ {column}`" in text, column
    assert "counted after setup" in text and "milliseconds" in text
    assert "updates per second per subscriber" in text
    htm = parse({"replay": {"workload": "htm"}})
    assert "updates per second per edge broker" in "\n".join(columns_section(htm))


def test_the_delay_over_seeds_is_the_mean_over_all_their_samples():
    rows = [row(100, "parametric", seed=1, delay_ms=500.0, delay_samples=1),
            row(100, "parametric", seed=2, delay_ms=50.0, delay_samples=99),
            row(100, "resub", seed=1, delay_ms=math.nan, delay_samples=0),
            row(100, "resub", seed=2, delay_ms=80.0, delay_samples=4)]
    by_mode = {r["mode"]: r for r in averaged(rows)}
    assert by_mode["parametric"]["delay_ms"] == (500.0 + 50.0 * 99) / 100  # 54.5, not (500 + 50) / 2
    assert by_mode["resub"]["delay_ms"] == 80.0
    none = averaged([row(100, "resub", seed=s, delay_ms=math.nan, delay_samples=0) for s in (1, 2)])
    assert math.isnan(none[0]["delay_ms"])


def test_every_event_gets_through_only_when_none_was_missed():
    rows = [row(0, "parametric"), row(0, "resub"), row(100, "parametric", missed=120, wanted=200),
            row(100, "resub", missed=130, wanted=200)]
    _, text = report(config(), rows)
    assert "very event" not in text
    assert ("Events were missed all the same: up to 130 (65% of those the ground truth wants; resub fastint at 100 "
            "updates/s)") in text
    _, text = report(config(), [row(0, "parametric"), row(0, "resub"), row(100, "parametric"), row(100, "resub")])
    assert "Every event the ground truth wants got through." in text


def test_the_monitor_below_saturation_is_told_by_its_figures_not_a_fixed_claim():
    c = config(monitors=[False, True])
    rows = [row(100, "parametric", rum=False, throughput=10.0, delay_ms=80.0),
            row(100, "parametric", rum=True, throughput=7.0, delay_ms=40.0)]
    index = {(r["update_rate"], r["subscribers"], r["mode"], r["matcher"]): r for r in averaged(rows)}
    text = "\n".join(explain_monitor(c, index))
    assert "hardly move" not in text  # throughput fell by 30% here
    assert "throughput -30% and an update delay of 40 ms against 80 ms" in text


def test_delay_sample_and_update_counts_are_totals_over_seeds():
    rows = [row(100, m, seed=s, updates=u, delay_samples=d) for m in ("parametric", "resub")
            for s, u, d in ((1, 3, 1), (2, 7, 2))]
    _, text = report(config(seeds=[1, 2]), rows)
    assert ("At 100 updates/s the delay is a mean over 3 samples for parametric fastint and 3 samples for resub "
            "fastint, out of 10 updates over 2 seeds.") in text


def test_table_i_says_a_missing_ratio_as_a_dash(tmp_path):
    from eventpy.replay.report import write_report
    c = config(update_rates=[0])
    rows = [dict(row(0, m), point=m, trace="t", workload="at") for m in ("parametric", "resub")]
    text = write_report(c, rows, tmp_path, command="x", master="local", wall=0.0).read_text()
    assert "—×" not in text and "| fastint | delay of resub / parametric | — | — | 4.05× |" in text


def test_no_noise_sentence_contradicts_itself_when_the_modes_agree():
    # htm with calibrated costs: "yet their throughput differs by 0%: that is the calibration's noise"
    rows = [row(0, "parametric", throughput=44.60), row(0, "resub", throughput=44.61),
            row(100, "parametric"), row(100, "resub")]
    for service, why in (("calibrated", "each mode's cost model was fitted to its own measured run"),
                         ("measured", "service times are measured CPU times")):
        _, text = report(config(service=service), rows)
        assert "differs by 0%" not in text
        assert (f"- fastint: at 0 updates/s both modes replay the same trace and do the same work, and their "
                f"throughput agrees within 0.5% (0.02%), although {why}: the noise of this run is below that.") in text


def test_a_small_share_of_missed_events_is_not_said_as_0_percent():
    # 6 missed out of 9,000 wanted was written "(0% of those the ground truth wants)"
    for missed, share in ((6, "0.1%"), (2, "under 0.1%"), (900, "15%")):
        rows = [row(0, "parametric", wanted=6000), row(0, "resub", wanted=6000),
                row(100, "parametric", missed=missed, wanted=6000), row(100, "resub", wanted=6000)]
        _, text = report(config(), rows)
        assert f"Events were missed all the same: up to {missed} ({share} of those the ground truth wants;" in text


def test_every_column_of_metrics_parquet_is_documented():
    # published, delivered, useful, wanted, span_s, wall_s ... were in metrics.parquet with no word on them
    from eventpy.replay.grid import METRIC_COLUMNS
    from eventpy.replay.report import columns_section
    text = "\n".join(columns_section(config()))
    written = [c.split()[0] for c in METRIC_COLUMNS.split(",")]
    joined = ["useful", "wanted", "duplicates", "missed", "false_positives", "throughput"]  # grid.run_grid's join
    documented = {n.strip() for line in text.splitlines() if line.startswith("- `")
                  for n in line[3:].split("`")[0].split("/")}
    assert set(written + joined) - documented == set()


def test_the_throughput_ratio_is_called_near_1_only_when_it_is():
    # "throughput ratios stay near 1" stood beside a throughput ratio of 1.5 (brokers 20% busy)
    rows = [row(0, "parametric"), row(0, "resub"), row(100, "parametric", throughput=15.0), row(100, "resub")]
    _, text = report(config(), rows)
    assert "stay near 1" not in text
    assert "yet the throughput ratio reaches 1.5× here (fastint at 100 updates/s)" in text
    near = [row(0, "parametric"), row(0, "resub"), row(100, "parametric", throughput=10.5), row(100, "resub")]
    assert "keep up with the events, and the throughput ratios here stay near 1;" in report(config(), near)[1]


def test_a_run_of_one_mode_says_why_table_i_is_empty():
    # at-hf.toml runs parametric only: Table I was all — and the section said nothing of it
    rows = [row(0, "parametric"), row(100, "parametric")]
    ratios, text = report(config(modes=["parametric"]), rows)
    assert all(math.isnan(r["ours"]) for r in ratios)
    assert ("- Table I sets parametric against resub; this run has only parametric, so there is no Table I ratio "
            "to compare.") in text


def test_rate_0_is_not_called_the_same_work_when_the_trace_still_updates():
    # at with hf_share: the high-frequency updates go on at rate 0; the report said both modes "do the
    # same work" there and that a 51% throughput gap was 0 "by construction"
    rows = [row(0, "parametric", throughput=1.34, updates=500), row(0, "resub", throughput=0.79, updates=500),
            row(100, "parametric"), row(100, "resub")]
    _, text = report(config(service="model"), rows)
    assert "by construction" not in text and "do the same work;" not in text
    assert ("- fastint: at 0 updates/s the trace still makes 500 updates (the workload's own, such as "
            "high-frequency ones), so the modes do not do the same work there: their throughput differs by 52%, "
            "and that is no measure of noise.") in text
    from eventpy.replay.report import _rate_0_note
    assert "still makes updates there" in _rate_0_note(averaged(rows), 10)
    calm = [dict(r, updates=0) if r["update_rate"] == 0 else r for r in rows]
    assert _rate_0_note(averaged(calm), 10).startswith("At 0 updates/s both modes do the same work")


def test_the_report_names_the_eventpy_version_that_made_it(tmp_path):
    """A seed's traces changed between versions (5d204a9: a random stream per part), and a saved
    output directory said nothing of the version that wrote it: two reports of one config and
    seed could differ with nothing to tell why."""
    import eventpy
    from eventpy.replay.report import write_report

    rows = [dict(row(0, m), point=m, trace="t", workload="at") for m in ("parametric", "resub")]
    text = write_report(config(), rows, tmp_path, command="x", master="local", wall=0.0).read_text()
    assert (f"Command: `x`, eventpy {eventpy.__version__} (the traces a seed draws may change from one version "
            "to another: compare runs of one version).") in text


def test_spurious_events_are_not_all_put_on_the_edge_broker():
    # at-small's top point, event by event (docs/replay-spurious.md): 96 of parametric's 104 spurious
    # events were wanted when published and failed the guard because the subscriber changed it while
    # they travelled; the report said every spurious event was one "the subscriber's own edge broker
    # forwarded before it applied the update", and that delay and spurious events are both dominated
    # by how long an update takes to reach the brokers
    rows = [row(0, "parametric"), row(0, "resub"),
            row(100, "parametric", spurious=105, useful=600, missed=346),
            row(100, "resub", spurious=94, useful=550, missed=355)]
    _, text = report(config(), rows)
    assert "forwarded before it applied the update, so" not in text
    assert "Delay and spurious events are dominated" not in text
    flow = next(line for line in text.splitlines() if line.startswith("- fastint at 100 updates/s: resub has fewer"))
    assert "still travelling when its subscription changed" in flow and "docs/replay-spurious.md" in flow
    background = next(line for line in text.splitlines() if line.startswith("- Spurious events are dominated"))
    assert "how long an event takes to reach its subscriber" in background


def test_the_report_says_where_its_docs_are_for_a_user_without_the_repository():
    """report.md is read in the run's directory; '(docs/replay-spurious.md)' named a path that a user
    who installed the wheel has nowhere (the wheel holds the package only)."""
    rows = [row(0, "parametric"), row(0, "resub"),
            row(100, "parametric", spurious=105, useful=600, missed=346),
            row(100, "resub", spurious=94, useful=550, missed=355)]
    _, text = report(config(), rows)
    mentions = [line for line in text.splitlines() if "docs/replay-spurious.md" in line]
    assert mentions and all("docs/replay-spurious.md in EventPy's repository and sdist" in m for m in mentions)
