"""Event methods over class hierarchies against an oracle (DESIGN §1): `C.q(x)` reaches every live
instance of C and of its subclasses, and no other; each instance runs the body and guard that
Python's method resolution finds for its class, once per event."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

import eventpy
from eventpy.compiler import compile_source

GUARDS = ("x < self.t", "x > self.t", "x == self.t or x == 0")


@st.composite
def hierarchies(draw):
    """Classes C0..Cn-1: C0 declares q; Ci (i > 0) derives from an earlier class and either
    inherits q or overrides it with another guard."""
    n = draw(st.integers(1, 5))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    overrides = [draw(st.sampled_from(GUARDS))] + [
        draw(st.one_of(st.none(), st.sampled_from(GUARDS))) for _ in range(1, n)]
    objects = [(c, draw(st.integers(0, 6))) for c in range(n) for _ in range(draw(st.integers(0, 2)))]
    events = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 6)), max_size=12))
    return parents, overrides, objects, events


def program(parents: list, overrides: list) -> str:
    out = []
    for i, (parent, guard) in enumerate(zip(parents, overrides)):
        out.append(f"class C{i}{'' if parent is None else f'(C{parent})'}:")
        if parent is None:
            out.append("    def __init__(self, t: int, log: list):\n        self.t = t\n        self.log = log")
        if guard is not None:
            out.append(f"    event def q(self, x: int) when {guard}:\n        self.log.append(({i}, x))")
        if parent is not None and guard is None:
            out.append("    pass")
    return "\n".join(out) + "\n"


def ancestors(c: int, parents: list) -> list[int]:
    """c and its bases, nearest first (a single-inheritance MRO)."""
    out = []
    while c is not None:
        out.append(c)
        c = parents[c]
    return out


@settings(max_examples=25, deadline=None)
@given(hierarchies())
def test_events_reach_the_class_and_its_subclasses_with_the_resolved_guard(case):
    parents, overrides, objects, events = case
    ns: dict = {"__name__": "hier"}
    exec(compile(compile_source(program(parents, overrides), "hier.epy", "hier"), "hier.epy", "exec"), ns)
    eventpy.shutdown()
    try:
        made = []
        for c, t in objects:
            log: list = []
            made.append((c, t, log, ns[f"C{c}"](t, log)))
        eventpy.drain(10.0)
        for c, x in events:
            ns[f"C{c}"].q(x)
        eventpy.drain(10.0)
        for c, t, log, _ in made:
            mro = ancestors(c, parents)
            body = next(k for k in mro if overrides[k] is not None)  # whose `event def` runs
            env = {"x": None, "self": type("S", (), {"t": t})}
            want = []
            for pc, x in events:
                if pc in mro and eval(overrides[body], {}, {**env, "x": x}):  # test-only oracle
                    want.append((body, x))
            assert log == want, (textwrap.indent(program(parents, overrides), "  "), c, t, events)
    finally:
        eventpy.shutdown()
