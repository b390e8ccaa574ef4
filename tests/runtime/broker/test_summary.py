"""Summaries against their definitions: the summary for neighbor N covers every active entry of
every other link (000 §3.4); the per-attribute one is exactly the attribute-wise LUB (001 §5.6)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.runtime.broker._summary import AttributeSummary, PosetSummary
from eventpy.runtime.model import INF, EventType, Interval, ValueSet, filter_covers, filter_lub

T = EventType("T", x=float, s=str)
bounds = st.sampled_from([-INF, -2.0, -1.0, 0.0, 1.0, 2.0, INF])
intervals = st.builds(Interval, bounds, st.booleans(), bounds, st.booleans())
valuesets = st.builds(ValueSet, st.frozensets(st.sampled_from("abcd"), max_size=3), st.booleans())
filters = st.fixed_dictionaries({}, optional={"x": intervals, "s": valuesets})
links = st.sampled_from(["up1", "up2", "c1", "c2", "c3"])
ops = st.lists(st.tuples(links, st.integers(0, 2), st.one_of(st.none(), filters)), min_size=1, max_size=40)


def apply(summary, entries: dict, link: str, k: int, flt) -> None:
    """One operation on both the summary and the plain record of its entries."""
    key = (link, k)
    if flt is None:
        entries.pop(key, None)
    else:
        entries[key] = flt
    summary.set_entry(link, key, flt)


def reference(entries: dict, neighbor: str) -> dict | None:
    acc = None
    for (link, _), flt in entries.items():
        if link == neighbor or any(c.is_empty() for c in flt.values()):
            continue
        acc = dict(flt) if acc is None else filter_lub(acc, flt)
    if acc is None:
        return None
    return {a: c for a, c in acc.items() if not c.is_wildcard()}


@settings(max_examples=1500, deadline=None)
@given(ops)
def test_attribute_summary_is_the_lub_of_the_other_links(ops):
    summary = AttributeSummary(T)
    entries: dict = {}
    for link, k, flt in ops:
        apply(summary, entries, link, k, flt)
        for neighbor in ("up1", "up2"):
            want = reference(entries, neighbor)
            got = summary.summary_for(neighbor)
            assert got == ([] if want is None else [want]), (neighbor, entries)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_poset_summary_covers_every_other_entry(ops):
    summary = PosetSummary(T)
    entries: dict = {}
    for link, k, flt in ops:
        apply(summary, entries, link, k, flt)
    for neighbor in ("up1", "up2"):
        got = summary.summary_for(neighbor)
        for (link, _), flt in entries.items():
            if link != neighbor and not any(c.is_empty() for c in flt.values()):
                assert any(filter_covers(s, flt) for s in got), (flt, got)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_version_changes_whenever_a_summary_changes(ops):
    # the broker skips a neighbor whose summary version did not move: that must be safe
    summary = AttributeSummary(T)
    last = {n: (summary.version, summary.summary_for(n)) for n in ("up1", "up2")}
    for link, k, flt in ops:
        summary.set_entry(link, (link, k), flt)
        for n in ("up1", "up2"):
            now = summary.summary_for(n)
            if summary.version == last[n][0]:
                assert now == last[n][1]
            last[n] = (summary.version, now)
