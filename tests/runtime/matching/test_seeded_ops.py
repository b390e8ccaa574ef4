"""A seeded random mix of add / remove / update (including changes of the string equality that
moves a FASTINT entry between partitions) checked against the naive oracle after every event."""

import random

import pytest

from eventpy.runtime.matching import MATCHERS, AdaptiveMatcher, NaiveMatcher
from eventpy.runtime.model import INF, EventType, Interval, ValueSet

T = EventType("t", a=int, b=float, s=str, f=bool)
VALS = [-2, -1, 0, 1, 2, 3]


FACTORIES = {n: MATCHERS[n] for n in MATCHERS if n != "naive"}
# the broker's fastint: a scan below a threshold, the index above (tiny thresholds: many moves)
FACTORIES["adaptive"] = lambda t: AdaptiveMatcher(t, up=8, down=3)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_seeded_mixed_operations(name):
    rng = random.Random(1)
    moves = 0

    def rint():
        return Interval(rng.choice(VALS + [-INF]), rng.random() < .5, rng.choice(VALS + [INF]), rng.random() < .5)

    def rset(dom):
        return ValueSet(frozenset(rng.sample(dom, rng.randint(0, 2))), rng.random() < .3)

    def rflt():
        f = {}
        if rng.random() < .7:
            f["a"] = rint()
        if rng.random() < .5:
            f["b"] = rint()
        if rng.random() < .6:
            f["s"] = ValueSet(frozenset({rng.choice("abc")})) if rng.random() < .6 else rset(list("abc"))
        if rng.random() < .3:
            f["f"] = rset([True, False])
        return f

    checked = 0
    for trial in range(60):
        oracle, m = NaiveMatcher(T), FACTORIES[name](T)
        keys = []
        shrinking = False
        for step in range(rng.randint(1, 300)):
            if step % 40 == 0:  # phases of growth and of shrinking, so populations cross both ways
                shrinking = not shrinking and step > 0
            was = getattr(m, "indexed", None)
            r = rng.random() * (0.6 if shrinking else 1.0)
            if (r < .4 and not shrinking) or not keys:
                k = (trial, step)
                f = rflt()
                oracle.add(k, f)
                m.add(k, f)
                keys.append(k)
            elif r < .5 or (shrinking and r < .3):
                k = keys.pop(rng.randrange(len(keys)))
                oracle.remove(k)
                m.remove(k)
            elif r < .7:
                k, a = rng.choice(keys), rng.choice("abfs")
                c = None if rng.random() < .2 else (
                    rint() if a in "ab" else rset(list("abc") if a == "s" else [True, False]))
                if a == "s" and c is not None and rng.random() < .5:
                    c = ValueSet(frozenset({rng.choice("abc")}))
                oracle.update(k, a, c)
                m.update(k, a, c)
            else:
                e = (rng.choice(VALS), float(rng.choice(VALS)) + rng.choice([0, .5]), rng.choice("abcd"),
                     rng.random() < .5)
                assert sorted(m.match(e)) == sorted(oracle.match(e)), (trial, step, e)
                checked += 1
            moves += was is not None and was != m.indexed
    assert checked > 1000
    if name == "adaptive":
        assert moves > 20  # entries went into the index and back out many times
