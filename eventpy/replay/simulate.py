"""One grid point: a trace replayed on the deterministic simulator of the runtime core
(eventpy.runtime.transports.inproc) in one mode, with one matcher.

Every client of the trace attaches to its edge broker, publishers advertise, subscribers subscribe
with their guard text and initial parameters, and the overlay is drained; the measured phase then
starts, publications and updates happen at their trace times, and the simulation runs to
quiescence. What each subscriber's callback received is recorded as (eid, sub_id, time), for the
join with the ground truth (eventpy.replay.truth).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..guards import compile_guard
from ..runtime.transports.inproc import CostModel, Simulation, measured
from .memory import deep_size
from .trace import Trace

SUBSCRIPTION_KINDS = ("Sub", "Unsub", "Upd")
SERVICES = {"model": CostModel, "measured": lambda: measured}


@dataclass
class RunResult:
    metrics: dict[str, Any]
    deliveries: list[tuple[int, int, float]]  # (eid, sub_id, virtual time of the callback)
    brokers: list[dict[str, Any]]  # one row per broker
    t0: float = 0.0  # virtual time at which the trace's clock starts (after the subscriptions were set up)


def run_trace(trace: Trace, mode: str, *, matcher: str = "fastint", summary: str = "attribute",
              service: Any = "model", link_delay: float = 1e-3, memory: bool = True,
              rum: Any = None, service_scale: float = 1.0) -> RunResult:
    """`service`: how long a broker takes to serve a message: "model", "measured", a callable
    (a CostModel, a Recorder), or {broker: one of those} for brokers that differ (the others:
    "model"), as Simulation takes it. `rum`: the runtime update monitor (000 §6) on every
    subscription: an UpdateMonitor, True, or a dict of its knobs; None for exact updates."""
    if isinstance(service, Mapping):
        model: Any = {broker: _scaled(_service_model(m, f"service[{broker!r}]"), service_scale)
                      for broker, m in service.items()}
    else:
        model = _scaled(_service_model(service, "service"), service_scale)
    wall = time.perf_counter()
    sim = Simulation(trace.topology, mode=mode, matcher=matcher, summary=summary,
                     link_delay=link_delay, service=model, count_bytes=True)
    clients = {name: sim.client(name, broker) for name, broker in trace.clients.items()}
    for pub, names in trace.advertises.items():
        for et in names:
            clients[pub].advertise(trace.types[et])
    sim.run()  # to quiescence: in a discrete-event simulation that is the barrier

    deliveries: list[tuple[int, int, float]] = []
    eid_of: dict[tuple[str, int], int] = {}
    plans: dict[tuple, Any] = {}
    handles = {}
    for s in trace.subscriptions:
        etype = trace.types[s.etype]
        key = (s.etype, s.guard, tuple(sorted((k, type(v)) for k, v in s.params.items())))
        if key not in plans:  # one compile per distinct guard, as a compiled program would
            plans[key] = compile_guard(s.guard, etype, {k: type(v) for k, v in s.params.items()})

        def record(ev, sid=s.sub_id) -> None:
            origin, seq, _ = ev._meta
            deliveries.append((eid_of[origin, seq], sid, sim.now))

        handles[s.sub_id] = clients[s.client].subscribe(etype, plans[key], s.params, on_event=record, rum=rum)
    sim.run()  # to quiescence: in a discrete-event simulation that is the barrier
    setup = sim.metrics()  # the client counters run from the start: the replayed phase is the difference
    before = {k: v for k, v in sim.sent.items()}
    before_bytes = dict(sim.sent_bytes or {})
    busy_before = dict(sim.busy)
    kind_before = dict(sim.busy_kind)
    for c in sim.clients.values():  # measure the replayed phase only
        c.delays.clear()
        c.latencies.clear()

    t0 = sim.now
    # updates first: at one instant, actions run in the order they were scheduled, and an update
    # at t is in force for an event published at t (eventpy.replay.truth)
    for t, sid, params in trace.updates:
        sim.at(t0 + t, lambda h=handles[sid], p=params: h.update(**p))
    for t, eid, pub, et, vals in trace.events:
        etype = trace.types[et]
        attrs = dict(zip(etype.attrs, vals))

        def publish(client=clients[pub], etype=etype, attrs=attrs, eid=eid) -> None:
            eid_of[client.publish(etype, **attrs)] = eid

        sim.at(t0 + t, publish)
    sim.run()

    metrics = sim.metrics()
    # the measured phase lasts as long as the trace publishes, and longer while deliveries lag: a
    # span that ended at the last delivery made a subscriber whose events stopped early look fast
    # (one event at 0.57 s of a 1 s trace counted as 1.7 events/s)
    last = max((t for _, _, t in deliveries), default=t0)
    last = max(last, t0 + trace.duration)
    sub_bytes = sum(v for (_, kind), v in (sim.sent_bytes or {}).items() if kind in SUBSCRIPTION_KINDS)
    sub_bytes -= sum(v for (_, kind), v in before_bytes.items() if kind in SUBSCRIPTION_KINDS)
    rows = []
    for b in trace.topology.brokers:
        sent = sum(sim.sent[b, k] - before.get((b, k), 0) for k in SUBSCRIPTION_KINDS)
        sent_b = sum((sim.sent_bytes or {}).get((b, k), 0) - before_bytes.get((b, k), 0) for k in SUBSCRIPTION_KINDS)
        busy = sim.busy[b] - busy_before.get(b, 0.0)
        sub_busy = sum(sim.busy_kind[b, k] - kind_before.get((b, k), 0.0) for k in SUBSCRIPTION_KINDS)
        rows.append({"broker": b, "sub_messages": sent, "sub_bytes": sent_b,
                     "pub_messages": sim.sent[b, "Pub"] - before.get((b, "Pub"), 0),
                     "utilization": busy / max(sim.now - t0, 1e-9),
                     # the share of its service time that went to SUB/UNSUB/UPD (the rest: events, flushes)
                     "sub_share": sub_busy / busy if busy > 0 else 0.0,
                     "memory_bytes": deep_size(sim.brokers[b]) if memory else 0})
    out = {
        "published": metrics["published"],
        "delivered": metrics["delivered"],
        "spurious": metrics["spurious"],
        "spurious_updates": metrics["spurious_updates"],  # setup makes no updates: nothing to subtract
        "sub_messages": metrics["sub_messages"] - setup["sub_messages"],
        "bytes": sub_bytes,
        "event_bytes_to_subscribers": sim.client_bytes["Pub"],
        **{k: metrics[k] - setup[k] for k in ("upd_sent", "sub_sent", "unsub_sent", "upd_coalesced")},
        # setup makes no updates, so the monitor has counted nothing before the replayed phase
        **{k: sum(c.core.stats[k] for c in sim.clients.values()) for k in ("rum_approximated", "rum_suppressed")},
        "latency_p50_ms": _ms(metrics["latency_p50"]),
        "latency_p99_ms": _ms(metrics["latency_p99"]),
        "delay_ms": _ms(metrics["delay_mean"]),
        "delay_samples": metrics["delay_samples"],
        "updates": len(trace.updates),  # parameter changes the trace makes (delay_samples is out of these)
        "span_s": last - t0,
        "memory_bytes": max((r["memory_bytes"] for r in rows), default=0),
        "utilization": max((r["utilization"] for r in rows), default=0.0),
        # of the busiest broker: how much of its time subscription changes took
        "sub_share": max(rows, key=lambda r: r["utilization"])["sub_share"] if rows else 0.0,
        "wall_s": time.perf_counter() - wall,
    }
    return RunResult(out, deliveries, rows, t0)


def _service_model(service: Any, what: str) -> Any:
    if callable(service):  # a CostModel (e.g. calibrated from a measured run) or a Recorder
        return service
    if isinstance(service, str) and service in SERVICES:
        return SERVICES[service]()
    raise ValueError(f"unknown {what} model {service!r}; one of {', '.join(SERVICES)} or a CostModel")


def _scaled(service: Any, scale: float) -> Any:
    """Service times `scale` times longer: brokers as slow as another machine's or language's."""
    if scale == 1.0:
        return service
    return lambda msg, sends, cpu: scale * service(msg, sends, cpu)


def _ms(seconds: float) -> float:
    return seconds * 1000.0 if not math.isnan(seconds) else float("nan")
