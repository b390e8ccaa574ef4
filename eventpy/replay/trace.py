"""A workload trace: who is where, what they subscribe to, and a timed script of publications and
parameter updates. Generators build one from a seed (eventpy.replay.workloads); the simulator
replays it (eventpy.replay.simulate); the ground truth evaluates it centrally
(eventpy.replay.truth); `rows()` is its Parquet form.

Guards are kept structured, as conjunctions of `(attribute, operator, operand)` where the operand is
a parameter name or a constant, so that the ground truth can evaluate them without the runtime's
guard compiler (an oracle must not share the code it checks). `Subscription.guard` is the same
conjunction as guard text, which the simulated subscriber compiles like any application would.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from typing import Any

from ..runtime.model import EventType
from ..runtime.overlay import Topology

# the operators a trace's constraints use, and what each means (the ground truth and the live
# driver evaluate them with these)
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
       "!=": operator.ne}


@dataclass(frozen=True)
class Constraint:
    attr: str
    op: str
    param: str | None = None  # the operand is this parameter ...
    const: Any = None  # ... or this constant

    def text(self) -> str:
        operand = self.param if self.param is not None else repr(self.const)
        return f"{self.attr} {self.op} {operand}"


@dataclass
class Subscription:
    sub_id: int
    client: str
    etype: str
    constraints: tuple[Constraint, ...]
    params: dict[str, Any]  # values at time 0

    @property
    def guard(self) -> str:
        return " and ".join(c.text() for c in self.constraints)


@dataclass
class Trace:
    """Times are seconds from the start of the measured phase (every subscription is in place
    before it). `events` rows are (t, eid, publisher, etype, values); `updates` rows are
    (t, sub_id, {param: value}); both sorted by time."""

    workload: str
    seed: int
    topology: Topology
    types: dict[str, EventType]
    clients: dict[str, str]  # client name -> its edge broker
    advertises: dict[str, tuple[str, ...]]  # publisher client -> event types it publishes
    subscriptions: list[Subscription]
    events: list[tuple[float, int, str, str, tuple]]
    updates: list[tuple[float, int, dict[str, Any]]]
    duration: float
    meta: dict[str, Any] = field(default_factory=dict)  # the generator's settings
    labels: dict[int, str] = field(default_factory=dict)  # sub_id -> e.g. its high-frequency pattern

    def check(self) -> None:
        """Refuse a trace that names unknown clients, types, subscriptions or parameters."""
        for c, b in self.clients.items():
            if b not in self.topology.brokers:
                raise ValueError(f"client {c!r} is attached to unknown broker {b!r}")
        subs = {s.sub_id: s for s in self.subscriptions}
        for s in self.subscriptions:
            if s.client not in self.clients or s.etype not in self.types:
                raise ValueError(f"subscription {s.sub_id}: unknown client or event type")
            for c in s.constraints:
                if c.op not in OPS or c.attr not in self.types[s.etype].schema:
                    raise ValueError(f"subscription {s.sub_id}: bad constraint {c.text()!r}")
                if c.param is not None and c.param not in s.params:
                    raise ValueError(f"subscription {s.sub_id}: parameter {c.param!r} has no value")
        for t, sid, params in self.updates:
            if sid not in subs or not set(params) <= set(subs[sid].params):
                raise ValueError(f"update at {t}: unknown subscription {sid} or parameter")
        for row in self.events:
            if row[2] not in self.advertises or row[3] not in self.advertises[row[2]]:
                raise ValueError(f"event {row[1]}: {row[2]!r} does not advertise {row[3]!r}")

    # -- the Parquet form -------------------------------------------------------------------------------
    def rows(self, trace_id: str) -> dict[str, list[tuple]]:
        """Rows of the three trace tables; values and parameters as JSON text, since event types
        of one workload differ in their attributes."""
        subs = {s.sub_id: s for s in self.subscriptions}
        return {
            "events": [(trace_id, eid, float(t), pub, et, json.dumps(dict(zip(self.types[et].schema, vals))))
                       for t, eid, pub, et, vals in self.events],
            "subscriptions": [(trace_id, s.sub_id, s.client, self.clients[s.client], s.etype, s.guard,
                               json.dumps([[c.attr, c.op, c.param, c.const] for c in s.constraints]),
                               json.dumps(s.params)) for s in self.subscriptions],
            "updates": [(trace_id, float(t), sid, subs[sid].client, json.dumps(p)) for t, sid, p in self.updates],
        }


TABLE_SCHEMAS = {
    "events": "trace string, eid long, t double, publisher string, etype string, attrs string",
    "subscriptions": "trace string, sub_id long, client string, broker string, etype string, guard string, "
                     "constraints string, params string",
    "updates": "trace string, t double, sub_id long, client string, params string",
}
