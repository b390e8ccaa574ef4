"""run_trace takes a service model per broker, as Simulation does (before: a mapping was refused
with "unhashable type: 'dict'", so a researcher could not make one broker slower in a replay)."""

from __future__ import annotations

import pytest

from eventpy.replay.simulate import run_trace
from eventpy.replay.trace import Constraint, Subscription, Trace
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import Topology
from eventpy.runtime.transports.inproc import CostModel

Q = EventType("lab.Q", x=float)


def _trace() -> Trace:
    trace = Trace("hand", 0, Topology(("b0", "b1"), (("b0", "b1"),)), {"lab.Q": Q}, {"pub": "b0", "sub": "b1"},
                  {"pub": ("lab.Q",)},
                  [Subscription(1, "sub", "lab.Q", (Constraint("x", "<", "lim"),), {"lim": 10.0})],
                  events=[(0.1 * i, i, "pub", "lab.Q", (1.0,)) for i in range(5)], updates=[], duration=1.0)
    trace.check()
    return trace


def test_one_slow_broker_slows_what_crosses_it_only():
    uniform = run_trace(_trace(), "parametric", memory=False, link_delay=0.0)
    slow_b1 = run_trace(_trace(), "parametric", memory=False, link_delay=0.0,
                        service={"b1": CostModel(pub=0.05)})
    slow_b1_named = run_trace(_trace(), "parametric", memory=False, link_delay=0.0, service={"b1": "model", "b0": "model"})
    assert len(uniform.deliveries) == len(slow_b1.deliveries) == 5
    # each event waits 0.05 s more at b1 (the subscriber's broker), and nothing else changes
    late = [b[2] - a[2] for a, b in zip(sorted(uniform.deliveries), sorted(slow_b1.deliveries))]
    assert late == pytest.approx([0.05 - 20e-6] * 5, abs=1e-5)
    assert sorted(slow_b1_named.deliveries) == sorted(uniform.deliveries)


def test_a_service_mapping_that_names_no_broker_or_no_model_is_refused():
    with pytest.raises(ValueError, match="unknown broker 'b9'"):
        run_trace(_trace(), "resub", memory=False, service={"b9": "model"})
    with pytest.raises(ValueError, match=r"unknown service\['b1'\] model 'fast'"):
        run_trace(_trace(), "resub", memory=False, service={"b1": "fast"})
    with pytest.raises(ValueError, match="unknown service model 'fast'"):
        run_trace(_trace(), "resub", memory=False, service="fast")
