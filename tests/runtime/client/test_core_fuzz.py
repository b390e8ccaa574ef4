"""ClientCore fed bad messages from its broker (what a buggy or hostile broker can send once the
wire has decoded it: PUBs of other types or of the wrong values addressed to its subscriptions,
unknown or repeated sids, answers to nothing it asked, kinds only clients send), between normal
events and updates: the core never raises, never hands the program an event that is not one of
its subscription's type, and delivers every normal event exactly where the guard holds.

EVENTPY_FUZZ=N runs N random examples (a bug hunt); by default a fixed, derandomized few.
A hunt logs a warning for every refused message, which pytest keeps in memory (a GB over 5000
examples): run it with `-p no:logging 2>/dev/null`.
"""

from __future__ import annotations

import math
import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from eventpy.guards import compile_guard
from eventpy.runtime.client import ClientCore
from eventpy.runtime.messages import (Ack, AckReq, Adv, Auth, Bye, Flush, FlushAck, Hello, Pub, Refused, Sub, Unadv,
                                      Unsub, Upd)
from eventpy.runtime.model import EventType, Interval

_RUNS = int(os.environ.get("EVENTPY_FUZZ", "0"))
FUZZ = settings(max_examples=_RUNS or 150, derandomize=not _RUNS, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

Q = EventType("cz.Quote", firm=str, price=float, vol=int)
F = EventType("cz.Flag", on=bool, n=int)
FIRMS = ["IBM", "HP"]
PRICES = [-1.0, 0.0, 0.5, 2.0]
GENERATION = 1 << 32  # resub mode: a subscription's later sids (ClientCore._GENERATION)

# guard, parameters, naive evaluation
GUARDS = [
    (Q, "firm == f and price < limit", {"f": FIRMS, "limit": PRICES},
     lambda e, p: e["firm"] == p["f"] and e["price"] < p["limit"]),
    (Q, "price * 2 > vol + k", {"k": PRICES}, lambda e, p: e["price"] * 2 > e["vol"] + p["k"]),
    (Q, "True", {}, lambda e, p: True),
    (F, "on == b and n >= lo", {"b": [True, False], "lo": [0, 2]},
     lambda e, p: e["on"] == p["b"] and e["n"] >= p["lo"]),
    (Q, "firm in watch or vol == 2", {"watch": [frozenset(), frozenset({"HP"})]},
     lambda e, p: e["firm"] in p["watch"] or e["vol"] == 2),
]
PLANS = [compile_guard(text, etype, {k: type(vs[0]) for k, vs in params.items()})
         for etype, text, params, _ in GUARDS]

ints = st.one_of(st.integers(-3, 5), st.sampled_from([-2**63, 2**63 - 1, 2**64 - 1]), st.integers(-2**63, 2**64 - 1))
floats = st.one_of(st.sampled_from(PRICES + [math.nan, math.inf, -math.inf]), st.floats())
scalars = st.one_of(ints, floats, st.sampled_from(FIRMS + [""]), st.text(max_size=3), st.booleans())
tokens = st.lists(scalars, max_size=3).map(tuple)
etype_names = st.sampled_from([Q.name, F.name, "cz.Nope", ""])


def good_values(etype: EventType):
    if etype is Q:
        return st.tuples(st.sampled_from(FIRMS), st.sampled_from(PRICES), st.integers(-1, 3))
    return st.tuples(st.booleans(), st.integers(0, 3))


SIDS = list(range(1, len(GUARDS) + 1))  # a core numbers its subscriptions from 1


@st.composite
def bad_pubs(draw):
    """A PUB addressed to the core's subscriptions (their sids, later generations of them, or
    unknown ones), of a type and values that may not be theirs."""
    etype = draw(st.sampled_from([Q, F]))
    how = draw(st.integers(0, 3))
    if how == 0:  # another type's values, or values of no type
        vals = draw(good_values(draw(st.sampled_from([Q, F]))))
    elif how == 1:  # the arity right, the types maybe not
        vals = tuple(draw(scalars) for _ in etype.attrs)
    else:
        vals = tuple(draw(st.lists(scalars, max_size=4)))
    targets = st.one_of(st.sampled_from(SIDS), st.sampled_from(SIDS).map(lambda s: s + GENERATION), ints)
    return Pub(draw(st.one_of(st.just(etype.name), etype_names)), vals, draw(st.sampled_from(["b", ""])),
               draw(ints), draw(floats), tuple(draw(st.lists(targets, max_size=3))))


bad_messages = st.one_of(
    bad_pubs(), bad_pubs(),
    st.builds(Ack, tokens, st.text(max_size=3)),
    st.builds(Refused, st.sampled_from(["cz.Nope", ""]), st.text(max_size=3)),
    st.builds(Flush, tokens), st.builds(FlushAck, tokens), st.builds(AckReq, tokens, st.just(1.0)),
    st.builds(Sub, etype_names, ints, st.just(()), st.just([])), st.builds(Unsub, etype_names, ints),
    st.builds(Upd, etype_names, ints, st.just({0: (Interval(0, True, 1, True), 1)})),
    st.builds(Adv, etype_names, st.just(())), st.builds(Unadv, etype_names),
    st.builds(Hello, st.text(max_size=3), st.sampled_from(["broker", "client"])), st.builds(Bye, st.text(max_size=3)),
    st.builds(Auth, st.text(max_size=3), st.text(max_size=3)),
)


def params_of(g: int):
    return st.fixed_dictionaries({k: st.sampled_from(vs) for k, vs in GUARDS[g][2].items()})


steps = st.lists(st.one_of(
    st.sampled_from([Q, F]).flatmap(lambda t: st.tuples(st.just("event"), st.just(t), good_values(t))),
    st.integers(0, len(GUARDS) - 1).flatmap(lambda g: st.tuples(st.just("update"), st.just(g), params_of(g))),
    st.tuples(st.just("bad"), bad_messages), st.tuples(st.just("bad"), bad_messages),
), max_size=30)


class Client:
    """A core with one subscription of every guard, and the naive evaluation of each."""

    def __init__(self, mode: str, params: tuple) -> None:
        self.core = ClientCore("c", mode=mode, clock=lambda: 1000.0)
        self.subs = []  # (state, guard index, params)
        for g, (etype, _, _, _) in enumerate(GUARDS):
            p = dict(params[g])
            self.subs.append((self.core.subscribe(etype, PLANS[g], p, on_event=None), g, p))
        assert [s.sid for s, _, _ in self.subs] == SIDS
        self.core.take()
        self.seq = 0

    def receive(self, msg) -> list:
        """What the program would be given (the local filter passed), each event checked."""
        out = []
        for state, event in self.core.receive(msg):
            if self.core.deliver(state, event):
                assert state.etype.fits(event.values), (state.etype, event)
                out.append((state.sid, event))
        return out

    def event(self, etype: EventType, vals: tuple) -> None:
        """An event as a correct broker sends it: to every open subscription of its type (the local
        filter decides, exactly), each under its current sid."""
        self.seq += 1
        sids = tuple(s.sid for s, _, _ in self.subs if s.etype is etype)
        got = self.receive(Pub(etype.name, vals, "p", self.seq, 1000.0, sids))
        e = dict(zip(etype.attrs, vals))
        want = [s.sid for s, g, p in self.subs if s.etype is etype and GUARDS[g][3](e, p)]
        assert sorted(sid for sid, _ in got) == sorted(want)

    def update(self, g: int, params: dict) -> None:
        state, _, p = self.subs[g]
        self.core.update(state, params)
        p.update(params)
        assert all(type(m) in (Upd, Sub, Unsub) for m in self.core.take())


PARAMS = ({"f": "IBM", "limit": 0.5}, {"k": 0.0}, {}, {"b": True, "lo": 0}, {"watch": frozenset()})


@FUZZ
@given(mode=st.sampled_from(["parametric", "resub"]), params=st.tuples(*map(params_of, range(len(GUARDS)))),
       steps=steps)
# a PUB of another type (two values) addressed to a subscription of cz.Quote: the local filter
# indexed the values by cz.Quote's schema and raised (IndexError), on a delivery thread
@example(mode="parametric", params=PARAMS, steps=[("bad", Pub(F.name, (0, 0), "b", 0, -1.0, (2,)))])
# the right arity, a str where cz.Quote has a float: the guard "True" let it through to the program
@example(mode="parametric", params=PARAMS, steps=[("bad", Pub(Q.name, ("IBM", "cheap", 1), "b", 0, 0.0, (3,)))])
def test_bad_broker_messages_never_reach_the_program(mode, params, steps):
    client = Client(mode, params)
    for step in steps:
        if step[0] == "event":
            client.event(step[1], step[2])
        elif step[0] == "update":
            client.update(step[1], step[2])
        else:
            client.receive(step[1])
    client.event(Q, ("HP", 0.0, 2))
    client.event(F, (True, 3))
