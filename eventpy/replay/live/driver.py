"""`run_live(trace, engine)`: a trace replayed in wall-clock time against a live engine, with the
simulator's metrics where they mean something.

The trace is first scaled to one machine (`scale`: at most `max_subscriptions` subscriptions, spread
over the trace, and its first `max_events` events; `speed` > 1 replays faster than the trace's
clock). Every client connects, publishers advertise, subscribers subscribe, and every client's
barrier returns before the measured phase; publications and updates then happen at their (scaled)
times from one thread, an update before a publication at the same instant as in the ground truth.
Each event reaching a subscriber is recorded with its receive time and checked against the
subscription's guard under the parameters the driver had set at that moment: an event that fails it
is *spurious* (for Redis that is the client-side filtering; EventPy's client filters before the
callback and counts its own), the others are *delivered*.

Metrics (times in wall-clock milliseconds, so a `speed` other than 1 stretches the update delay,
which waits for the next matching event):
  * useful / missed / false_positives / duplicates: delivered (eid, sub_id) pairs against
    eventpy.replay.truth.ground_truth of the scaled trace, computed in process;
  * throughput: useful events per second of the measured phase per subscribing client (the grid's
    definition: the phase lasts the trace's duration, and longer while deliveries lag);
  * latency_p50_ms / latency_p99_ms: receive time minus the time the driver called publish;
  * delay_ms (000 §8.1 (a)): from an update to the first delivered event, published after it, that
    matches the new subscription but not the old one; a later update of the same subscription
    closes the probe without a sample;
  * bytes_to_subscribers / bytes_from_subscribers: bytes on the subscribers' TCP connections in the
    measured phase, counted by the relay (payload and protocol framing);
  * sub_messages: subscription-related messages the subscribers sent (EventPy: SUB/UNSUB/UPD;
    ActiveMQ: SUBSCRIBE/UNSUBSCRIBE; Redis: none, an update is local);
  * lag_ms: how far behind its schedule the driver fell at worst (a run that cannot keep up).
"""

from __future__ import annotations

import bisect
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...runtime.transports.inproc import nearest_rank
from ..trace import OPS, Subscription, Trace
from ..truth import ground_truth
from .engine import Engine

@dataclass
class LiveResult:
    metrics: dict[str, Any]
    deliveries: list[tuple[int, int, float]]  # (eid, sub_id, seconds after the measured phase began)
    trace: Trace  # the scaled trace that was replayed


def scale(trace: Trace, max_events: int | None = None, max_subscriptions: int | None = None) -> Trace:
    """The trace cut to fit one machine: subscriptions spread evenly over the trace's, its first
    `max_events` events (the duration ends at the last), updates of the kept subscriptions within it."""
    subs = trace.subscriptions
    if max_subscriptions is not None and len(subs) > max_subscriptions:
        subs = [subs[i * len(subs) // max_subscriptions] for i in range(max_subscriptions)]
    events = trace.events
    duration = trace.duration
    if max_events is not None and len(events) > max_events:
        events = events[:max_events]
        duration = events[-1][0] if events else 0.0
    kept = {s.sub_id for s in subs}
    updates = [u for u in trace.updates if u[1] in kept and u[0] <= duration]
    publishers = {e[2] for e in events}
    names = {s.client for s in subs} | publishers
    out = Trace(trace.workload, trace.seed, trace.topology, trace.types,
                {c: b for c, b in trace.clients.items() if c in names},
                {p: t for p, t in trace.advertises.items() if p in publishers}, list(subs), list(events),
                updates, duration, {**trace.meta, "max_events": max_events, "max_subscriptions": max_subscriptions},
                {k: v for k, v in trace.labels.items() if k in kept})
    out.check()
    return out


class _Guard:
    """A subscription's conjunction evaluated on trace values (no runtime code, like the truth)."""

    def __init__(self, sub: Subscription, attrs: tuple[str, ...]) -> None:
        index = {a: i for i, a in enumerate(attrs)}
        self.checks = [(index[c.attr], OPS[c.op], c.param, c.const) for c in sub.constraints]

    def holds(self, values: tuple, params: dict[str, Any]) -> bool:
        return all(op(values[i], params[p] if p is not None else const) for i, op, p, const in self.checks)


def run_live(trace: Trace, engine: Engine, *, speed: float = 1.0, max_events: int | None = None,
             max_subscriptions: int | None = None, quiet: float = 0.5, timeout: float = 60.0,
             lead: float = 0.2, workdir: Path | None = None) -> LiveResult:
    """Replay `trace` on `engine` (started here and stopped here, whatever happens)."""
    if speed <= 0:
        raise ValueError("speed must be positive")
    trace = scale(trace, max_events, max_subscriptions)
    with tempfile.TemporaryDirectory(prefix=f"eventpy-live-{engine.name}-", dir=workdir) as tmp:
        try:
            run = _run(trace, engine, Path(tmp), speed, quiet, timeout, lead)
        finally:
            engine.stop()
    return _measure(trace, engine.name, speed, *run)


def _run(trace: Trace, engine: Engine, workdir: Path, speed: float, quiet: float, timeout: float,
         lead: float) -> tuple:
    wall = time.perf_counter()
    engine.start(trace, workdir)
    sub_clients = {s.client for s in trace.subscriptions}
    pub_clients = {e[2] for e in trace.events}
    clients = {n: engine.connect(n, subscriber=n in sub_clients) for n in sorted(sub_clients | pub_clients)}
    for pub in sorted(pub_clients):
        for et in trace.advertises[pub]:
            clients[pub].advertise(trace.types[et])
    arrivals: list[tuple[int, int, float]] = []  # (sub_id, eid, receive time): list.append is atomic
    now = time.perf_counter
    handles = {s.sub_id: clients[s.client].subscribe(s, lambda eid, sid=s.sub_id: arrivals.append((sid, eid, now())))
               for s in trace.subscriptions}
    for c in clients.values():
        c.barrier(timeout)
    engine.drain(timeout)
    setup_s = time.perf_counter() - wall
    bytes_before, counts_before = engine.relay_bytes(), engine.counters()
    arrivals.clear()  # nothing should have arrived yet; the measured phase starts empty

    actions = [(t, 0, sid, params) for t, sid, params in trace.updates]
    actions += [(t, 1, eid, (pub, et, vals)) for t, eid, pub, et, vals in trace.events]
    actions.sort(key=lambda a: (a[0], a[1]))
    current = {s.sub_id: dict(s.params) for s in trace.subscriptions}
    client_of = {s.sub_id: s.client for s in trace.subscriptions}
    updates: dict[int, list[tuple[float, dict, dict]]] = {}  # sub_id -> (wall time, old, new params)
    published: dict[int, float] = {}
    lag = 0.0
    t0 = time.perf_counter() + lead
    for t, kind, key, what in actions:
        due = t0 + t / speed
        late = time.perf_counter() - due
        if late < 0:
            time.sleep(-late)
        else:
            lag = max(lag, late)
        if kind == 0:
            old = current[key]
            new = current[key] = {**old, **what}
            updates.setdefault(key, []).append((time.perf_counter(), old, new))
            clients[client_of[key]].update(handles[key], dict(what), new)
        else:
            pub, et, vals = what
            published[key] = time.perf_counter()
            clients[pub].publish(trace.types[et], key, vals)
    end = time.perf_counter()
    engine.drain(timeout)
    _settle(arrivals, quiet, timeout)
    bytes_after, counts_after = engine.relay_bytes(), engine.counters()
    return (list(arrivals), published, updates, t0, end, lag, setup_s, wall,
            [a - b for a, b in zip(bytes_after, bytes_before)],
            {k: counts_after[k] - counts_before.get(k, 0) for k in counts_after})


def _settle(arrivals: list, quiet: float, timeout: float) -> None:
    """Wait until nothing has arrived for `quiet` seconds (at most `timeout`)."""
    deadline = time.perf_counter() + timeout
    seen, since = len(arrivals), time.perf_counter()
    while time.perf_counter() < deadline:
        time.sleep(min(0.05, quiet))
        if len(arrivals) != seen:
            seen, since = len(arrivals), time.perf_counter()
        elif time.perf_counter() - since >= quiet:
            return


def _measure(trace: Trace, engine: str, speed: float, arrivals: list, published: dict, updates: dict,
             t0: float, end: float, lag: float, setup_s: float, wall: float, relayed: list, counts: dict) -> LiveResult:
    subs = {s.sub_id: s for s in trace.subscriptions}
    guards = {sid: _Guard(s, trace.types[s.etype].attrs) for sid, s in subs.items()}
    values = {eid: vals for _, eid, _, _, vals in trace.events}
    times = {sid: [u[0] for u in ups] for sid, ups in updates.items()}
    arrivals.sort(key=lambda a: a[2])
    delivered: list[tuple[int, int, float]] = []
    spurious = 0
    latencies = []
    for sid, eid, ta in arrivals:
        k = bisect.bisect_right(times.get(sid, []), ta)
        params = updates[sid][k - 1][2] if k else subs[sid].params
        if guards[sid].holds(values[eid], params):
            delivered.append((eid, sid, ta - t0))
            latencies.append(ta - published[eid])
        else:
            spurious += 1
    delays = _delays(delivered, updates, guards, values, published, t0)
    truth = ground_truth(trace)
    pairs = [(e, s) for e, s, _ in delivered]
    unique = set(pairs)
    useful = len(unique & truth)
    # as in the simulator: the measured phase lasts as long as the trace runs (its duration at this
    # speed, or the driver's schedule if it fell behind), and longer while deliveries lag; ending it
    # at the last delivery made an engine whose deliveries stopped early look fast
    span = max(max((t for _, _, t in delivered), default=0.0), trace.duration / speed, end - t0)
    n_subscribers = len({s.client for s in trace.subscriptions})
    latencies.sort()
    metrics = {
        "engine": engine, "workload": trace.workload, "seed": trace.seed,
        "update_rate": float(trace.meta.get("update_rate", 0.0)), "subscribers": n_subscribers,
        "subscriptions": len(subs), "speed": speed, "published": len(published),
        "updates": sum(len(u) for u in updates.values()), "arrivals": len(arrivals),
        "delivered": len(delivered), "useful": useful, "wanted": len(truth), "missed": len(truth) - useful,
        "false_positives": len(unique) - useful, "duplicates": len(pairs) - len(unique),
        "spurious": spurious + counts.get("spurious", 0),
        "throughput": useful / span / n_subscribers if span > 0 and n_subscribers else 0.0,
        "latency_p50_ms": _pct(latencies, 0.5), "latency_p99_ms": _pct(latencies, 0.99),
        "delay_ms": 1e3 * sum(delays) / len(delays) if delays else math.nan, "delay_samples": len(delays),
        "bytes_to_subscribers": relayed[0], "bytes_from_subscribers": relayed[1],
        "sub_messages": counts.get("sub_messages", 0), "span_s": span, "publish_s": end - t0,
        "lag_ms": 1e3 * lag, "setup_s": setup_s, "wall_s": time.perf_counter() - wall,
    }
    return LiveResult(metrics, delivered, trace)


def _delays(delivered: list, updates: dict, guards: dict, values: dict, published: dict, t0: float) -> list[float]:
    by_sub: dict[int, list[tuple[float, int]]] = {}
    for eid, sid, t in delivered:
        by_sub.setdefault(sid, []).append((t0 + t, eid))
    out = []
    for sid, ups in updates.items():
        got = by_sub.get(sid, [])
        got_t = [t for t, _ in got]
        for k, (tu, old, _) in enumerate(ups):
            until = ups[k + 1][0] if k + 1 < len(ups) else math.inf
            for t, eid in got[bisect.bisect_left(got_t, tu):]:
                if t >= until:
                    break
                if published[eid] >= tu and not guards[sid].holds(values[eid], old):
                    out.append(t - tu)
                    break
    return out


def _pct(sorted_values: list[float], q: float) -> float:
    return 1e3 * nearest_rank(sorted_values, q)
