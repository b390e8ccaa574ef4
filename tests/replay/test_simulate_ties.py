"""A trace's update and publication at the same instant: the ground truth puts the update in force
for the event (eventpy.replay.truth), and so must the replay, where nothing else separates them
(publisher and subscriber on one broker): before, the replay published first, and a hand-made
trace with round times showed a missed event that no update delay explains."""

from __future__ import annotations

from eventpy.replay.simulate import run_trace
from eventpy.replay.trace import Constraint, Subscription, Trace
from eventpy.replay.truth import ground_truth
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import Topology

Q = EventType("lab.Q", x=float)


def test_an_update_and_an_event_at_one_instant_on_one_broker_are_replayed_as_the_truth_has_them():
    trace = Trace("hand", 0, Topology(("b0",), ()), {"lab.Q": Q}, {"pub": "b0", "sub": "b0"},
                  {"pub": ("lab.Q",)},
                  [Subscription(1, "sub", "lab.Q", (Constraint("x", "<", "lim"),), {"lim": 1.0})],
                  events=[(0.5, 0, "pub", "lab.Q", (5.0,)), (0.5, 1, "pub", "lab.Q", (0.5,)),
                          (0.7, 2, "pub", "lab.Q", (20.0,))],
                  updates=[(0.5, 1, {"lim": 10.0})], duration=1.0)
    trace.check()
    truth = ground_truth(trace)
    assert truth == {(0, 1), (1, 1)}
    for mode in ("parametric", "resub"):
        result = run_trace(trace, mode, memory=False)
        assert {(eid, sid) for eid, sid, _ in result.deliveries} == truth, mode
        assert result.metrics["spurious"] == 0
