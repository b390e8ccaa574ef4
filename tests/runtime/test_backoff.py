"""The reconnection backoff on its own, with a fake clock and a fake random source: it grows up to
its cap, jitters within [step/2, step], says when it escalated (what callers log), and is reset only
by a session that stayed up long enough."""

from __future__ import annotations

from eventpy.runtime.transports._backoff import Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_waits_grow_to_the_cap_and_escalate_once_per_step():
    b = Backoff(base=0.05, cap=2.0, healthy=10.0, clock=Clock(), rand=lambda: 1.0)
    waits, loud = zip(*(b.next() for _ in range(12)))
    assert list(waits[:7]) == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    assert set(waits[7:]) == {2.0}  # bounded
    assert list(loud) == [True] * 7 + [False] * 5  # logged while it grows, then quiet


def test_jitter_keeps_each_wait_between_half_and_the_whole_step():
    draws = iter([0.0, 0.5, 0.999])
    b = Backoff(base=1.0, cap=8.0, clock=Clock(), rand=lambda: next(draws))
    assert [b.next()[0] for _ in range(3)] == [0.5, 1.5, 0.5 * 4 + 0.5 * 4 * 0.999]


def test_a_session_that_fails_at_once_does_not_reset_the_wait():
    clock = Clock()
    b = Backoff(base=0.05, cap=2.0, healthy=10.0, clock=clock, rand=lambda: 1.0)
    waits = []
    for _ in range(10):  # a broker that sends a bad frame right after its HELLO
        b.connected()
        clock.now += 0.01
        b.lost()
        wait, _ = b.next()
        waits.append(wait)
        clock.now += wait
    assert waits[-1] == 2.0 and sum(waits) > 10  # ~1 attempt per 2 s, not 20 a second


def test_a_healthy_session_resets_the_wait():
    clock = Clock()
    b = Backoff(base=0.05, cap=2.0, healthy=10.0, clock=clock, rand=lambda: 1.0)
    for _ in range(8):
        b.next()
    b.connected()
    clock.now += 10.0
    b.lost()
    assert b.next() == (0.05, True)  # and the first loss after it is logged again
