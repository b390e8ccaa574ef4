"""Algorithmic trading, 000 §8.5 (and its high-frequency variant, §8.12).

A hierarchical overlay of 20 brokers (market data at the root, then clearing houses, brokerages
and trading firms), 5 publishers (exchanges) at the root, 150 subscribers (trading computers) on
the brokers three levels down, so publishers and subscribers are at least three brokers apart.
200 event types (100 commodity quotes, 100 analyst signals), each `price: float, volume: int,
grade: int`; each exchange publishes 40 of them; prices follow a random walk per type.

A subscription has two predicates whose operators are drawn 35% `<=`, 33% `>=`, 32% `==`
(`<=`/`>=` on price or volume, `==` on grade), each with its own parameter. An update moves one
parameter of one of the subscriber's subscriptions: a price threshold to near the current price,
a volume threshold or grade to a new draw. `hf_share` of the subscriptions are high-frequency
(§8.12): one price threshold changes at `hf_rate` (> 4/s) rising, falling or oscillating, a third
each, and ordinary updates leave them alone.
"""

from __future__ import annotations

import random
from typing import Any

from ...runtime.model import EventType
from ...runtime.overlay import Topology
from ..trace import Constraint, Subscription, Trace
from ._common import (COUNT, HF_PATTERNS, NON_NEGATIVE, POSITIVE, SHARE, arrivals, hf_values, option, sort_script,
                      stream)

OPERATORS = (("<=", 0.35), (">=", 0.33), ("==", 0.32))
LEVELS = (1, 3, 6, 10)  # brokers per level of the hierarchy: 20 in all
TICK = 0.25
GRADES = 10
SETTINGS = {"subscribers": COUNT, "publishers": COUNT, "types": COUNT, "types_per_subscriber": COUNT,
            "update_rate": NON_NEGATIVE, "hf_share": SHARE, "hf_rate": POSITIVE, "publish_rate": POSITIVE,
            "duration": POSITIVE}


PUBLISHERS, TYPES = 5, 200  # the defaults


def check_relations(s: dict[str, Any]) -> None:
    """Settings that are each in range but not together: exchange p publishes types p, p + n, ...,
    so an exchange beyond the last type would have none (and failed in a Spark task)."""
    pubs, types = s.get("publishers", PUBLISHERS), s.get("types", TYPES)
    if pubs > types:
        raise ValueError(f"at: publishers ({pubs}) must be at most types ({types}): each exchange publishes "
                         "types of its own")


def at(seed: int, s: dict[str, Any]) -> Trace:
    n_subs = option(s, "subscribers", 150, int)
    n_pubs = option(s, "publishers", PUBLISHERS, int)
    n_types = option(s, "types", TYPES, int)
    per_sub = option(s, "types_per_subscriber", 5, int)
    rate = option(s, "update_rate", 0.0)  # per subscriber
    hf_share = option(s, "hf_share", 0.0)
    hf_rate = option(s, "hf_rate", 8.0)
    pub_rate = option(s, "publish_rate", 200.0)  # events per second per exchange
    duration = option(s, "duration", 2.0)

    names, links, level_of = [], [], {}
    for level, count in enumerate(LEVELS):
        parents = [b for b in names if level_of[b] == level - 1]
        for i in range(count):
            b = f"b{len(names)}"
            names.append(b)
            level_of[b] = level
            if parents:
                links.append((parents[i * len(parents) // count], b))
    topology = Topology(tuple(names), tuple(links), "hierarchy")
    leaves = [b for b in names if level_of[b] == len(LEVELS) - 1]

    types = {}
    for i in range(n_types):
        name = f"at.Quote{i:03d}" if i < n_types // 2 else f"at.Signal{i:03d}"
        types[name] = EventType(name, price=float, volume=int, grade=int)
    tnames = list(types)
    step = 0.1
    steps = int(duration / step) + 2
    mid: dict[str, list[float]] = {}
    for et in tnames:  # a random walk per type, sampled every `step` seconds
        rng = stream(seed, "walk", et)
        x, walk = rng.uniform(50, 150), []
        for _ in range(steps):
            walk.append(x)
            x = max(1.0, x * (1 + rng.gauss(0, 0.004)))
        mid[et] = walk

    def price_at(et: str, t: float) -> float:
        return mid[et][min(int(t / step), steps - 1)]

    clients: dict[str, str] = {}
    advertises: dict[str, tuple[str, ...]] = {}
    for p in range(n_pubs):
        clients[f"exchange{p}"] = names[0]
        advertises[f"exchange{p}"] = tuple(tnames[p::n_pubs])

    def draw_value(rng: random.Random, c: Constraint, et: str, t: float) -> float | int:
        if c.attr == "price":
            return round(price_at(et, t) * rng.uniform(0.97, 1.03) / TICK) * TICK
        if c.attr == "volume":
            return rng.randrange(100, 1000)
        return rng.randrange(GRADES)

    subs: list[Subscription] = []
    for i in range(n_subs):
        client = f"trader{i}"
        clients[client] = leaves[i % len(leaves)]
        rng = stream(seed, "trader", i)
        for et in rng.sample(tnames, min(per_sub, n_types)):
            cons: list[Constraint] = []
            while len(cons) < 2:
                op = rng.choices([o for o, _ in OPERATORS], [w for _, w in OPERATORS])[0]
                attr = "grade" if op == "==" else rng.choice(("price", "volume"))
                if any(c.attr == attr for c in cons):
                    continue
                cons.append(Constraint(attr, op, f"p{len(cons)}"))
            sub = Subscription(len(subs), client, et, tuple(cons), {})
            sub.params = {c.param: draw_value(rng, c, et, 0.0) for c in cons}
            subs.append(sub)

    hf = _high_frequency(stream(seed, "hf"), subs, hf_share)
    updates: list[tuple] = []
    for sid, pattern in hf.items():
        sub = subs[sid]
        c = next(c for c in sub.constraints if c.attr == "price")
        rng = stream(seed, "hf", sid)
        times = arrivals(rng, hf_rate, duration)
        start = sub.params[c.param]
        for t, v in zip(times, hf_values(pattern, start, max(TICK, start * 0.002), times, rng)):
            updates.append((t, sub.sub_id, {c.param: v}))
    own: dict[str, list[Subscription]] = {}
    for sub in subs:
        if sub.sub_id not in hf:
            own.setdefault(sub.client, []).append(sub)
    for client, mine in own.items():
        rng = stream(seed, "updates", client)
        for t in arrivals(rng, rate, duration):
            sub = rng.choice(mine)
            c = rng.choice(sub.constraints)
            updates.append((t, sub.sub_id, {c.param: draw_value(rng, c, sub.etype, t)}))

    events: list[tuple] = []
    for pub, ets in advertises.items():
        rng = stream(seed, "events", pub)
        for t in arrivals(rng, pub_rate, duration):
            et = rng.choice(ets)
            price = round(price_at(et, t) * rng.uniform(0.97, 1.03) / TICK) * TICK
            events.append((t, pub, et, (price, rng.randrange(100, 1000), rng.randrange(GRADES))))
    events, updates = sort_script(events, updates)
    meta = {"subscribers": n_subs, "update_rate": rate, "hf_share": hf_share}
    return Trace("at", seed, topology, types, clients, advertises, subs, events, updates, duration, meta,
                 labels=hf)


def _high_frequency(rng: random.Random, subs: list[Subscription], share: float) -> dict[int, str]:
    """A share of the subscriptions that have a price predicate, each with its pattern."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"hf_share must be within 0..1, not {share}")
    candidates = [s for s in subs if any(c.attr == "price" for c in s.constraints)]
    chosen = rng.sample(candidates, min(len(candidates), round(share * len(subs))))
    return {s.sub_id: HF_PATTERNS[i % 3] for i, s in enumerate(chosen)}
