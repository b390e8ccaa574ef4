"""The ground truth (003 §VI-A): for every event, the subscriptions whose guard held at its
publication time with the parameter values in force at that instant, as a centralized system with
instantaneous subscriptions would deliver it.

This evaluates the trace's structured constraints with numpy and shares no code with the guard
compiler, the matchers or the brokers it is used to check. An update at time t is in force for an
event published at t' >= t (the replay applies an update before a publication at the same time).
`holds` evaluates one subscription over a block of events of one type; the Spark job
(eventpy.replay.grid.ground_truth_job) gives each task the block of one (trace, type).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .trace import OPS, Constraint, Subscription, Trace


class EventBlock:
    """The events of one type in one trace, as columns."""

    def __init__(self, attrs: tuple[str, ...], rows: list[tuple[float, int, tuple]]) -> None:
        rows = sorted(rows, key=lambda r: (r[0], r[1]))
        self.t = np.array([r[0] for r in rows], dtype=float)
        self.eid = np.array([r[1] for r in rows], dtype=np.int64)
        self.columns = {a: np.array([r[2][i] for r in rows]) for i, a in enumerate(attrs)}

    def __len__(self) -> int:
        return len(self.t)


def holds(block: EventBlock, sub: Subscription, history: list[tuple[float, dict[str, Any]]]) -> np.ndarray:
    """eids of the block's events that `sub` wanted at their publication time. `history` is the
    subscription's updates as (t, changed parameters), sorted by time."""
    if not len(block):
        return block.eid
    times = np.array([t for t, _ in history], dtype=float)
    # version k is in force from times[k-1] on; version 0 (the initial values) before times[0]
    version = np.searchsorted(times, block.t, side="right")
    values = [dict(sub.params)]
    for _, changed in history:
        values.append({**values[-1], **changed})
    mask = np.ones(len(block), dtype=bool)
    for c in sub.constraints:
        mask &= _constraint(block, c, values, version)
    return block.eid[mask]


def _constraint(block: EventBlock, c: Constraint, values: list[dict], version: np.ndarray) -> np.ndarray:
    column = block.columns[c.attr]
    if c.param is None:
        return OPS[c.op](column, c.const)
    operand = np.array([v[c.param] for v in values])[version]
    return OPS[c.op](column, operand)


def ground_truth(trace: Trace) -> set[tuple[int, int]]:
    """(eid, sub_id) pairs the centralized evaluation delivers, for a whole trace in one process
    (tests, and the reference the Spark job is checked against)."""
    blocks = {et: EventBlock(trace.types[et].attrs, [(t, eid, vals) for t, eid, _, e, vals in trace.events
                                                       if e == et]) for et in trace.types}
    histories = histories_of(trace)
    out: set[tuple[int, int]] = set()
    for sub in trace.subscriptions:
        for eid in holds(blocks[sub.etype], sub, histories.get(sub.sub_id, [])):
            out.add((int(eid), sub.sub_id))
    return out


def histories_of(trace: Trace) -> dict[int, list[tuple[float, dict[str, Any]]]]:
    out: dict[int, list] = {}
    for t, sid, params in trace.updates:
        out.setdefault(sid, []).append((t, params))
    return out
