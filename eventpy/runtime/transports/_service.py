"""How long a simulated broker spends on a message: a deterministic cost model, the CPU time it
really took, or a recorder of those to fit a cost model to (eventpy.runtime.transports.inproc)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from ..messages import Pub, Sub, Unsub, Upd

# a broker's service time for a message: service(msg, what handling it sent, CPU time it took) -> seconds
Service = Callable[[Any, list, float], float]

@dataclass
class CostModel:
    """Service time of a broker per message, in seconds (deterministic)."""

    pub: float = 20e-6
    per_forward: float = 2e-6
    sub: float = 60e-6
    unsub: float = 50e-6
    upd: float = 10e-6
    other: float = 5e-6

    def __call__(self, msg: Any, sends: list, cpu: float) -> float:
        kind = type(msg)
        if kind is Pub:
            return self.pub + self.per_forward * len(sends)
        if kind is Sub:
            return self.sub
        if kind is Unsub:
            return self.unsub
        if kind is Upd:
            return self.upd
        return self.other


def measured(msg: Any, sends: list, cpu: float) -> float:
    """Service time = the CPU time the broker really spent (not reproducible run to run)."""
    return cpu


class Recorder:
    """Measured service times, kept per message kind, to fit a CostModel to (`calibrate`)."""

    def __init__(self) -> None:
        self.samples: dict[str, list[tuple[int, float]]] = {}

    def __call__(self, msg: Any, sends: list, cpu: float) -> float:
        self.samples.setdefault(type(msg).__name__, []).append((len(sends), cpu))
        return cpu

    def calibrate(self) -> CostModel:
        """A deterministic cost model with this run's costs: PUB as a base plus a cost per
        message sent (least squares), every other kind its median."""
        import numpy as np

        def median(kind: str, default: float) -> float:
            xs = [c for _, c in self.samples.get(kind, ())]
            return float(np.median(xs)) if xs else default

        base = CostModel()
        pub, per = base.pub, base.per_forward
        pubs = self.samples.get("Pub", [])
        if len({n for n, _ in pubs}) > 1:
            a = np.array([[1.0, n] for n, _ in pubs])
            (pub, per), *_ = np.linalg.lstsq(a, np.array([c for _, c in pubs]), rcond=None)
            pub, per = max(float(pub), 0.0), max(float(per), 0.0)
        elif pubs:
            pub = median("Pub", pub)
            per = 0.0
        others = [c for kind, xs in self.samples.items() if kind not in ("Pub", "Sub", "Unsub", "Upd")
                  for _, c in xs]
        return CostModel(pub=pub, per_forward=per, sub=median("Sub", base.sub), unsub=median("Unsub", base.unsub),
                         upd=median("Upd", base.upd),
                         other=float(np.median(others)) if others else base.other)


def nearest_rank(sorted_values: list[float], q: float) -> float:
    """The q-quantile of sorted values by nearest rank: the smallest value that at least a share q
    of them do not exceed; nan for none. Index int(n * q) was one rank high: the p99 of 100
    latencies was their maximum."""
    if not sorted_values:
        return float("nan")
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]
