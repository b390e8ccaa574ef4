"""The generators: deterministic for a seed, and shaped as the papers describe (000 §8.2–§8.5)."""

from __future__ import annotations

from collections import Counter

import pytest

from eventpy.replay.workloads import generate
from eventpy.replay.workloads.at import OPERATORS


@pytest.mark.parametrize("workload", ["micro", "overlay-micro", "htm", "at"])
def test_a_seed_gives_the_same_trace_and_another_seed_another(workload):
    settings = {"update_rate": 20, "duration": 0.5, "subscribers": 40 if workload != "micro" else 10}
    a, b, c = (generate(workload, s, settings) for s in (5, 5, 6))
    assert a.rows("x") == b.rows("x")
    assert a.rows("x") != c.rows("x")
    assert a.updates, "an update rate of 20/s must give updates"
    assert all(x[0] <= y[0] for x, y in zip(a.events, a.events[1:]))
    assert [e[1] for e in a.events] == list(range(len(a.events)))


def _published(trace) -> list[tuple]:
    return [(t, pub, et, vals) for t, _, pub, et, vals in trace.events]


@pytest.mark.parametrize("workload", ["micro", "overlay-micro", "htm", "at"])
def test_the_events_of_a_seed_do_not_depend_on_the_update_rate_or_the_subscribers(workload):
    # the report plots metrics against the update rate and against subscribers: each point must
    # replay the same publications, or it compares different workloads (QA: 8/5/16 events)
    many = 40 if workload != "micro" else 10
    base = {"duration": 0.5, "subscribers": many}
    traces = [generate(workload, 3, {**base, "update_rate": r}) for r in (0, 25, 100)]
    traces.append(generate(workload, 3, {**base, "update_rate": 25, "subscribers": many // 2}))
    first = _published(traces[0])
    assert first and all(_published(t) == first for t in traces[1:])


@pytest.mark.parametrize("workload", ["micro", "at"])
def test_more_subscribers_keep_the_subscriptions_and_updates_of_the_first_ones(workload):
    small, large = (generate(workload, 3, {"duration": 0.5, "update_rate": 20, "subscribers": n}) for n in (4, 8))
    def mine(trace, clients):
        return ([(s.client, s.etype, s.params) for s in trace.subscriptions if s.client in clients],
                [(t, sid, p) for t, sid, p in trace.updates
                 if trace.subscriptions[sid].client in clients])
    clients = {s.client for s in small.subscriptions}
    assert mine(small, clients) == mine(large, clients)


def test_micro_is_one_broker_five_publishers_ten_subscribers_100_types_of_five_attributes():
    t = generate("micro", 1, {})
    assert len(t.topology.brokers) == 1
    assert len(t.advertises) == 5 and all(len(v) == 20 for v in t.advertises.values())
    assert len({s.client for s in t.subscriptions}) == 10
    assert len(t.types) == 100 and all(len(et.attrs) == 5 for et in t.types.values())
    assert len(t.subscriptions) == 10 * 100  # every subscriber subscribes to every type


@pytest.mark.parametrize("coverage", [0.0, 0.33, 0.67, 1.0])
def test_micro_coverage_is_the_share_of_subscriptions_inside_another(coverage):
    t = generate("micro", 2, {"coverage": coverage})
    by_type: dict[str, list] = {}
    for s in t.subscriptions:
        by_type.setdefault(s.etype, []).append(s.params)
    covered = sum(1 for subs in by_type.values() for i, p in enumerate(subs)
                  if any(j != i and q["lo"] <= p["lo"] and p["hi"] <= q["hi"] for j, q in enumerate(subs)))
    share = covered / len(t.subscriptions)
    assert share >= min(coverage, 0.9) - 0.05
    if coverage == 0.0:
        assert share < 0.2  # random 10-wide windows on 0..100 rarely nest


def test_overlay_micro_is_20_brokers_acyclic_20_publishers_200_subscribers():
    t = generate("overlay-micro", 1, {"types_per_subscriber": 2})
    assert len(t.topology.brokers) == 20 and len(t.topology.links) == 19 and t.topology.connected()
    assert len(t.advertises) == 20
    per_broker = Counter(t.clients[c] for c in {s.client for s in t.subscriptions})
    assert sum(per_broker.values()) == 200 and set(per_broker.values()) == {10}


def test_htm_has_200_sensors_and_vehicles_watching_25_sensors_around_them():
    t = generate("htm", 1, {"subscribers": 300, "update_rate": 100, "duration": 1.0})
    assert len(t.advertises) == 200
    assert len(t.subscriptions) == 300
    edges = {t.clients[s.client] for s in t.subscriptions}
    assert len(edges) == 3  # 100 vehicles per edge broker
    for s in t.subscriptions[:20]:
        assert s.params["hi"] - s.params["lo"] == pytest.approx(12.5)  # 25 sensors half a mile apart
    moved = [p for _, _, p in t.updates]
    assert all(p["hi"] - p["lo"] == pytest.approx(12.5) for p in moved)
    assert len(t.updates) == pytest.approx(3 * 100 * 1.0, rel=0.2)  # 100/s per edge broker


def test_at_is_hierarchical_publishers_three_brokers_from_subscribers_and_the_operator_mix():
    t = generate("at", 1, {})
    assert len(t.topology.brokers) == 20 and len(t.topology.links) == 19
    assert len(t.advertises) == 5 and len(t.types) == 200
    assert len({s.client for s in t.subscriptions}) == 150
    for pub in t.advertises:
        for sub in {s.client for s in t.subscriptions}:
            assert t.topology.distance(t.clients[pub], t.clients[sub]) >= 3
    ops = Counter(c.op for s in t.subscriptions for c in s.constraints)
    total = sum(ops.values())
    for op, share in OPERATORS:
        assert ops[op] / total == pytest.approx(share, abs=0.05)


def test_at_high_frequency_share_rises_falls_and_oscillates_above_4_per_second():
    t = generate("at", 1, {"hf_share": 0.3, "duration": 2.0})
    assert len(t.labels) == round(0.3 * len(t.subscriptions))
    assert Counter(t.labels.values()).keys() == {"rising", "falling", "oscillating"}
    per_sub = Counter(sid for _, sid, _ in t.updates if sid in t.labels)
    assert sum(per_sub.values()) / len(t.labels) / t.duration > 4
    rising = next(sid for sid, p in t.labels.items() if p == "rising")
    values = [list(p.values())[0] for _, sid, p in t.updates if sid == rising]
    assert values == sorted(values)


def test_unknown_workload_and_bad_settings_are_refused():
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        generate("nope", 1)
    with pytest.raises(ValueError, match="coverage"):
        generate("micro", 1, {"coverage": 2})


def test_every_setting_a_generator_reads_is_declared_with_its_type_and_range():
    """config.parse checks a [workload] table against SETTINGS; a setting read by a generator but
    not declared would be refused, one declared but never read would be silently ignored."""
    import inspect
    import re

    from eventpy.replay.workloads import SETTINGS, WORKLOADS

    for name, make in WORKLOADS.items():
        source = inspect.getsource(inspect.getmodule(make))
        read = set(re.findall(r'option\(s, "(\w+)"', source)) | set(re.findall(r'"(subscribers)" in s', source))
        assert read == set(SETTINGS[name]), name


@pytest.mark.parametrize("settings, message", [
    ({"update_rte": 50.0}, "micro has no setting 'update_rte'; it takes"),
    ({"update_rate": -5.0}, "micro: update_rate must be >= 0"),
    ({"subscribers": 0}, "micro: subscribers must be >= 1"),
])
def test_generate_called_from_python_checks_its_settings_as_a_replay_file_does(settings, message):
    # a misspelled setting made a trace with the default (no updates at all), silently
    with pytest.raises(ValueError, match=message):
        generate("micro", 1, settings)
