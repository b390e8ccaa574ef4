"""A game's rally on the embedded overlay: event methods that publish to other objects, and an
object that closes itself inside its own event method; one drain() sees the rally to its end."""

from __future__ import annotations

import pytest

import eventpy

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

PADDLES = '''
    class Paddle:
        def __init__(self, side: int, max_hits: int):
            self.side = side
            self.hits = 0
            self.max_hits = max_hits

        event def ball(self, to: int, n: int) when to == self.side:
            self.hits += 1
            if self.hits >= self.max_hits:
                self.close()       # retires: the next ball to this side reaches nobody
                return
            Paddle.ball(1 - self.side, n + 1)
'''


def test_one_drain_sees_a_rally_of_event_methods_to_its_end():
    ns = load(PADDLES)
    left, right = ns["Paddle"](0, 5), ns["Paddle"](1, 3)
    ns["Paddle"].ball(0, 0)
    eventpy.drain(5.0)  # was a barrier for the first ball only: hits were 1 and 1
    assert (left.hits, right.hits) == (3, 3)
    s = eventpy.stats()
    assert s["published"] == 6 and s["delivered"] == 6
    ns["Paddle"].ball(1, 0)
    eventpy.drain(5.0)
    assert right.hits == 3
    left.close()
