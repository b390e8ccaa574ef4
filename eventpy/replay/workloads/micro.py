"""The micro benchmarks of 000 §8.2 (one broker) and §8.3 (an overlay).

§8.2: one broker, 5 publishers, 10 subscribers, 100 event types of five attributes, each publisher
publishing 20 of the types at a constant rate, each subscriber subscribed to every type with its own
predicate. §8.3: 20 brokers in an acyclic non-hierarchical graph, one publisher per broker (20) and
10 subscribers per broker (200). Both vary the coverage among subscriptions, 0/33/67/100%.

A subscription is a window on one attribute, `a0 >= lo and a0 <= hi`. Coverage c: per event type,
a share c of the subscriptions are nested inside the window of that type's first subscription
(its "coverer"), at subscription time and after every update, so c of them are covered by another
(c = 1 makes all but the coverer covered; a coverer cannot cover itself). An update moves one
window of the subscriber to a new place (inside the coverer's current window if covered).
"""

from __future__ import annotations

import random
from typing import Any

from ...runtime.model import EventType
from ...runtime.overlay import Topology, random_tree
from ..trace import Constraint, Subscription, Trace
from ._common import COUNT, NON_NEGATIVE, POSITIVE, SHARE, arrivals, option, sort_script, stream

ATTRS = ("a0", "a1", "a2", "a3", "a4")
WINDOW = (Constraint("a0", ">=", "lo"), Constraint("a0", "<=", "hi"))


SETTINGS = {"brokers": COUNT, "publishers": COUNT, "subscribers": COUNT, "types": COUNT,
            "types_per_publisher": COUNT, "types_per_subscriber": COUNT, "coverage": SHARE, "width": POSITIVE,
            "update_rate": NON_NEGATIVE, "publish_rate": POSITIVE, "duration": POSITIVE}


def micro(seed: int, settings: dict[str, Any]) -> Trace:
    return _generate("micro", seed, settings, brokers=1, publishers=5, subscribers=10)


def overlay_micro(seed: int, settings: dict[str, Any]) -> Trace:
    return _generate("overlay-micro", seed, settings, brokers=20, publishers=20, subscribers=200)


def _generate(name: str, seed: int, s: dict[str, Any], *, brokers: int, publishers: int,
              subscribers: int) -> Trace:
    n_brokers = option(s, "brokers", brokers, int)
    n_pubs = option(s, "publishers", publishers, int)
    n_subs = option(s, "subscribers", subscribers, int)
    n_types = option(s, "types", 100, int)
    types_per_pub = option(s, "types_per_publisher", 20, int)
    types_per_sub = option(s, "types_per_subscriber", n_types, int)
    coverage = option(s, "coverage", 0.0)
    width = option(s, "width", 10.0)  # of the coverer's window, on a 0..100 attribute
    rate = option(s, "update_rate", 0.0)  # updates per second per subscriber
    pub_rate = option(s, "publish_rate", 100.0)  # events per second per publisher
    duration = option(s, "duration", 2.0)
    if not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage must be within 0..1, not {coverage}")

    topology = random_tree(n_brokers, seed) if n_brokers > 1 else Topology(("b0",), (), "single")
    topology = Topology(topology.brokers, topology.links, "random" if n_brokers > 1 else "single")
    types = {f"micro.T{i:03d}": EventType(f"micro.T{i:03d}", **{a: float for a in ATTRS}) for i in range(n_types)}
    names = list(types)
    clients: dict[str, str] = {}
    advertises: dict[str, tuple[str, ...]] = {}
    for p in range(n_pubs):
        clients[f"pub{p}"] = topology.brokers[p % n_brokers]
        advertises[f"pub{p}"] = tuple(stream(seed, "pub", p).sample(names, min(types_per_pub, n_types)))
    subs: list[Subscription] = []
    by_type: dict[str, list[Subscription]] = {}
    for i in range(n_subs):
        client = f"sub{i}"
        clients[client] = topology.brokers[i % n_brokers]
        for et in sorted(stream(seed, "sub", i).sample(names, min(types_per_sub, n_types))):
            sub = Subscription(len(subs), client, et, WINDOW, {})
            subs.append(sub)
            by_type.setdefault(et, []).append(sub)

    covered: set[int] = set()
    for et, group in by_type.items():
        k = min(len(group) - 1, round(coverage * len(group)))
        covered.update(x.sub_id for x in stream(seed, "coverage", et).sample(group[1:], k))
    coverer = {x.sub_id: group[0] for group in by_type.values() for x in group}

    def window(rng: random.Random, sub: Subscription, current: dict[int, dict]) -> dict[str, float]:
        if sub.sub_id in covered:
            outer = current[coverer[sub.sub_id].sub_id]
            w = (outer["hi"] - outer["lo"]) / 2
            lo = rng.uniform(outer["lo"], outer["hi"] - w)
            return {"lo": lo, "hi": lo + w}
        lo = rng.uniform(0, 100 - width)
        return {"lo": lo, "hi": lo + width}

    current: dict[int, dict] = {}
    for group in by_type.values():  # coverers first
        for sub in group:
            current[sub.sub_id] = sub.params = window(stream(seed, "window", sub.client, sub.etype), sub, current)

    updates: list[tuple] = []
    own: dict[str, list[Subscription]] = {}
    for sub in subs:
        own.setdefault(sub.client, []).append(sub)
    moves = {c: stream(seed, "updates", c) for c in own}  # per client: its times, then its draws
    timeline = sorted((t, c) for c in own for t in arrivals(moves[c], rate, duration))
    for t, client in timeline:
        rng = moves[client]
        sub = rng.choice(own[client])
        current[sub.sub_id] = new = window(rng, sub, current)
        updates.append((t, sub.sub_id, new))

    events: list[tuple] = []
    for pub, ets in advertises.items():
        rng = stream(seed, "events", pub)
        for t in arrivals(rng, pub_rate, duration):
            et = rng.choice(ets)
            events.append((t, pub, et, tuple(rng.uniform(0, 100) for _ in ATTRS)))
    events, updates = sort_script(events, updates)
    meta = {"subscribers": n_subs, "update_rate": rate, "coverage": coverage, "brokers": n_brokers}
    return Trace(name, seed, topology, types, clients, advertises, subs, events, updates, duration, meta)
