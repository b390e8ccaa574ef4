"""The simulator's figures for one grid point, recomputed independently: useful, missed, delay
(000 §8.1 (a)), spurious (§8.1 (c)) and latency from what each subscriber received and the trace,
with a plain-Python evaluation of the trace's constraints (no guard compiler, no matcher)."""

from __future__ import annotations

import math
import operator

import pytest

from eventpy.replay import simulate
from eventpy.replay.workloads import generate
from eventpy.runtime.client import ClientCore
from eventpy.runtime.transports.inproc import Simulation

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
       "!=": operator.ne}


def takes(sub, params, values):
    return all(OPS[c.op](values[c.attr], params[c.param] if c.param is not None else c.const)
               for c in sub.constraints)


def params_at(sub, history, t):
    """The subscription's parameters once every update at or before t is applied."""
    p = dict(sub.params)
    for tu, changed in history:
        if tu <= t:
            p.update(changed)
    return p


@pytest.fixture(scope="module", params=["parametric", "resub"])
def run(request, monkeypatch_module):
    trace = generate("at", 1, {"subscribers": 12, "update_rate": 60.0, "duration": 0.6, "types": 30})
    received, sims = [], []

    starts = []

    class Kept(Simulation):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            sims.append(self)

        def run(self, *a, **k):  # run_trace runs after advertising, after subscribing, then the trace
            starts.append(self.now)
            return super().run(*a, **k)

    real = ClientCore.receive

    def receive(core, msg):  # every (subscription, event) that reached a subscriber, before its filter
        pairs = list(real(core, msg))
        received.extend((state.on_event.__defaults__[0], ev._meta, sims[0].now) for state, ev in pairs)
        return pairs

    monkeypatch_module.setattr(simulate, "Simulation", Kept)
    monkeypatch_module.setattr(ClientCore, "receive", receive)
    result = simulate.run_trace(trace, request.param, service="model", link_delay=0.01, memory=False)
    monkeypatch_module.undo()
    assert len(starts) == 3
    return trace, result, received, starts[2]


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_useful_and_missed_against_a_plain_evaluation(run):
    trace, result, _, _ = run
    history = {}
    for t, sid, changed in trace.updates:
        history.setdefault(sid, []).append((t, changed))
    by_type = {}
    for s in trace.subscriptions:
        by_type.setdefault(s.etype, []).append(s)
    wanted = {(eid, s.sub_id) for t, eid, _, et, vals in trace.events for s in by_type.get(et, [])
              if takes(s, params_at(s, history.get(s.sub_id, []), t), dict(zip(trace.types[et].attrs, vals)))}
    got = {(e, s) for e, s, _ in result.deliveries}
    assert len(got) == len(result.deliveries) == result.metrics["delivered"]  # no duplicates
    assert wanted and got & wanted  # the check has something to check
    assert 0 < len(wanted - got) < len(wanted)  # updates at 60/s: some are missed, not all


def test_delay_spurious_and_latency_recomputed(run):
    trace, result, received, t0 = run
    m = result.metrics
    events = {eid: (t, dict(zip(trace.types[et].attrs, vals))) for t, eid, _, et, vals in trace.events}
    eid_at = {(pub, round(t, 7)): eid for t, eid, pub, _, _ in trace.events}
    subs = {s.sub_id: s for s in trace.subscriptions}
    history = {}
    for t, sid, changed in trace.updates:
        history.setdefault(sid, []).append((t, changed))

    # spurious: received for a subscription whose parameters at receipt reject the event
    spurious = 0
    for sid, (origin, _, t_pub), t in received:
        if t >= t0:
            eid = eid_at[origin, round(t_pub - t0, 7)]
            spurious += not takes(subs[sid], params_at(subs[sid], history.get(sid, []), t - t0), events[eid][1])
    assert spurious == m["spurious"] > 0

    # latency, nearest rank
    lat = sorted(t - t0 - events[e][0] for e, _, t in result.deliveries)
    rank = lambda q: lat[math.ceil(q * len(lat)) - 1]  # noqa: E731
    assert m["latency_p50_ms"] == pytest.approx(rank(0.5) * 1000, abs=1e-6)
    assert m["latency_p99_ms"] == pytest.approx(rank(0.99) * 1000, abs=1e-6)

    # delay: from an update to the first delivery, before the next update that changes something, of
    # an event published at or after it that the new parameters take and the old ones did not
    got = {}
    for e, s, t in sorted(result.deliveries, key=lambda d: d[2]):
        got.setdefault(s, []).append((t - t0, e))
    delays = []
    for sid, h in history.items():
        sub, current = subs[sid], dict(subs[sid].params)
        changes = []
        for tu, changed in h:
            new = {**current, **changed}
            if new != current:
                changes.append((tu, current, new))
            current = new
        for k, (tu, old, new) in enumerate(changes):
            until = changes[k + 1][0] if k + 1 < len(changes) else math.inf
            for t, e in got.get(sid, []):
                te, values = events[e]
                if tu <= t < until and te >= tu and takes(sub, new, values) and not takes(sub, old, values):
                    delays.append(t - tu)
                    break
    assert len(delays) == m["delay_samples"] > 0
    assert m["delay_ms"] == pytest.approx(1000 * sum(delays) / len(delays), rel=1e-9)
