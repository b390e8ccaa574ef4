"""Summaries against their definitions: the summary for neighbor N covers every active entry of
every other link (000 §3.4); the per-attribute one is exactly the attribute-wise LUB (001 §5.6)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.runtime.broker._summaries_other import PosetSummary
from eventpy.runtime.broker._summary import AttributeSummary
from eventpy.runtime.model import INF, EventType, Interval, SetDelta, ValueSet, filter_covers, filter_lub

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


@settings(max_examples=800, deadline=None)
@given(st.lists(st.tuples(links, st.integers(0, 3), st.one_of(st.none(), filters)), min_size=1, max_size=40),
       st.integers(1, 6))
def test_the_summary_is_exact_when_it_is_read_only_now_and_then(ops, every):
    # changes pile up between reads (the aggregates are brought up to date when read): grown
    # links and shrunk ones alike
    summary = AttributeSummary(T)
    entries: dict = {}
    for i, (link, k, flt) in enumerate(ops, 1):
        apply(summary, entries, link, k, flt)
        if i % every == 0 or i == len(ops):
            for neighbor in ("up1", "up2"):
                want = reference(entries, neighbor)
                assert summary.summary_for(neighbor) == ([] if want is None else [want]), (neighbor, entries)


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


# ---- the UPD path: one attribute of one entry changes in place ------------------------------------

upd_ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), links, st.integers(0, 1), st.one_of(st.none(), filters)),
        st.tuples(st.just("upd"), links, st.integers(0, 1), st.sampled_from(["x", "s"]),
                  st.one_of(st.none(), intervals, valuesets)),
    ),
    min_size=1, max_size=60)


def apply_op(summary, entries: dict, op) -> None:
    if op[0] == "set":
        _, link, k, flt = op
        apply(summary, entries, link, k, flt)
        return
    _, link, k, attr, c = op
    if c is not None and (attr == "x") != isinstance(c, Interval):
        return  # a constraint of the other attribute's kind: not a valid update
    key = (link, k)
    if key in entries:  # update_entry ignores an entry it does not hold
        flt = dict(entries[key])
        if c is None:
            flt.pop(attr, None)
        else:
            flt[attr] = c
        entries[key] = flt
    summary.update_entry(link, key, attr, c)


@settings(max_examples=1500, deadline=None)
@given(upd_ops)
def test_updated_entries_keep_the_summary_exact(ops):
    summary = AttributeSummary(T)
    entries: dict = {}
    last = {n: (summary.version, summary.summary_for(n)) for n in ("up1", "up2")}
    for op in ops:
        apply_op(summary, entries, op)
        for neighbor in ("up1", "up2"):
            want = reference(entries, neighbor)
            got = summary.summary_for(neighbor)
            assert got == ([] if want is None else [want]), (neighbor, entries)
            if summary.version == last[neighbor][0]:
                assert got == last[neighbor][1]  # the broker skips a neighbor whose version stayed
            last[neighbor] = (summary.version, got)


def test_many_bound_moves_compact_the_heaps():
    """Long random walks of single-entry links (the benchmark's shape) with the neighbors' own
    entries at the extremes; the heaps are compacted many times along the way."""
    import random

    rnd = random.Random(3)
    summary = AttributeSummary(T)
    entries: dict = {}
    names = [f"c{i}" for i in range(30)] + ["up1", "up2"]
    for link in names:
        lo = rnd.uniform(-1, 1)
        apply(summary, entries, link, 0, {"x": Interval(lo, True, lo + 0.5, False)})
    for step in range(4000):
        link = rnd.choice(names)
        lo, lc, hi, hc = entries[(link, 0)]["x"]
        if step & 1:
            c = Interval(hi - rnd.uniform(0.1, 1.0) * (3 if link.startswith("up") else 1), rnd.random() < .5, hi, hc)
        else:
            c = Interval(lo, lc, lo + rnd.uniform(0.1, 1.0), rnd.random() < .5)
        apply_op(summary, entries, ("upd", link, 0, "x", c))
        if step % 7 == 0:
            for neighbor in ("up1", "up2", "c0"):
                assert summary.summary_for(neighbor) == [reference(entries, neighbor)]
    assert len(summary.lo["x"].heap) <= 2 * len(names) + 32 + 1


def test_a_link_with_many_entries_is_aggregated_once_per_read_not_once_per_entry():
    # one process making thousands of subscriptions is one link: a pass over its entries at each
    # new one was quadratic (4,000 subscriptions of one process: 12 s to install, now 0.75 s)
    summary = AttributeSummary(T)
    passes = []
    refresh = summary._refresh
    summary._refresh = lambda link, *new: (passes.append(link), refresh(link, *new))[1]
    summary.set_entry("up1", ("up1", 0), {"x": Interval(0.0, True, 1.0, True)})
    for k in range(200):
        summary.set_entry("c1", ("c1", k), {"x": Interval(float(k), True, float(k) + 1, True)})
    assert summary.summary_for("up1") == [{"x": Interval(0.0, True, 200.0, True)}]
    assert sorted(passes) == ["c1", "up1"]


# ---- set UPDs as a broker applies them: the new set derived from the old by a SetDelta -------------
# (what changed is then known without a pass over the set: derive/set_changes; the summary moves
# the LUBs it caches for the other neighbors by those members only)

delta_ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), links, st.integers(0, 1), st.one_of(st.none(), filters)),
        st.tuples(st.just("delta"), links, st.integers(0, 1), st.frozensets(st.sampled_from("abcde"), max_size=2),
                  st.frozensets(st.sampled_from("abcde"), max_size=2)),
    ),
    min_size=1, max_size=60)


@settings(max_examples=1500, deadline=None)
@given(delta_ops, st.sampled_from(["always", "sometimes"]))
def test_set_deltas_keep_the_summary_exact(ops, reads):
    summary = AttributeSummary(T)
    entries: dict = {}
    for i, op in enumerate(ops):
        if op[0] == "set":
            apply(summary, entries, *op[1:])
        else:
            _, link, k, removed, added = op
            key = (link, k)
            was = entries.get(key, {}).get("s")
            if was is None:
                continue
            c = SetDelta(removed, added).apply(was)  # as a broker's SubState.check does
            entries[key] = {**entries[key], "s": c}
            summary.update_entry(link, key, "s", c)
        if reads == "always" or i % 3 == 2 or i == len(ops) - 1:
            for neighbor in ("up1", "up2"):
                want = reference(entries, neighbor)
                assert summary.summary_for(neighbor) == ([] if want is None else [want]), (neighbor, entries)
