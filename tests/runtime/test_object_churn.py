"""Objects made and closed all the time (a game's players joining and leaving): what the node
keeps for them must go when they close.

Before, the delivery queue of an `.epy` object (one per object: its event methods run one at a
time) stayed in the node's table after `close()`, so a game server that had seen 10,000 players
come and go held 10,000 queues, and every `drain()` put a marker on each of them: memory and the
cost of a drain grew with the number of objects ever made."""

from __future__ import annotations

import eventpy
from eventpy.compiler import compile_source

SRC = '''
class Player:
    def __init__(self, x: float, view: float):
        self.x = x
        self.view = view
        self.seen = []

    event def moved(self, px: float) when abs(px - self.x) < self.view:
        self.seen.append(px)

    event def chat(self, text: str) when self.view > 0:
        self.seen.append(text)
'''


def _player_class(module: str):
    ns: dict = {"__name__": module}
    exec(compile(compile_source(SRC, f"{module}.epy"), f"{module}.epy", "exec"), ns)
    return ns["Player"]


def test_closed_objects_leave_no_delivery_queue_behind():
    eventpy.shutdown()
    Player = _player_class("churn_queues")
    node = eventpy.default_node()
    try:
        stay = Player(0.0, 5.0)
        Player.moved(1.0)
        eventpy.drain(timeout=10.0)
        baseline = len(node._local.queues)
        for wave in range(5):
            players = [Player(float(i), 5.0) for i in range(40)]
            Player.moved(1.0)  # every one of them gets it: each has a queue now
            Player.chat("hi")
            eventpy.drain(timeout=10.0)
            assert all(p.seen == [1.0, "hi"] for p in players if abs(1.0 - p.x) < 5.0)
            for p in players:
                p.close()
            eventpy.drain(timeout=10.0)
            assert len(node._local.queues) == baseline, f"wave {wave}"
        assert stay.seen == [1.0] + [1.0, "hi"] * 5
        Player.moved(2.0)  # the object that stayed is still served, through its own queue
        eventpy.drain(timeout=10.0)
        assert stay.seen[-1] == 2.0
    finally:
        eventpy.shutdown()
