"""The event space and dz-expressions of paper 004 (eventpy/p2p/_space.py).

Written from the paper's definitions, not from the module:

- §2: the event space is d ordered attributes with known domains; an event is a point, a
  subscription a hyper-rectangle; sub1 ≺ sub2 iff the rectangle of sub1 lies in that of sub2.
- §3: recursive binary decomposition, one dimension after the other; a dz-expression names a
  sub-space, the prefix being the parent; sub-spaces either nest or are disjoint. Figure 2:
  sub1 = {Pressure=[25,50] ∧ Area=[0,100]} maps to {001, 011}.
- §5.1: a coarse mapping has at most r expressions (property 1) and covers every expression of
  the accurate mapping (property 2); DZ-1 is divided once less, DZ+1 once more (Figure 4: DZC =
  {00, 10} has DZ+1 = {0000, 0010, 1000, 1010}).
- §5.2: '*' is "0 and 1" and is written where the subscription spans the whole domain of the
  dimension being divided.

Every range of the module is half-open [lo, hi); an integer domain [L, U] is [L, U + 1). The
checks below compare the string-level operations (matches, covered, overlaps, merge) with the
boxes `region` names, which are checked against the decomposition itself (halving one dimension
after the other), so a wrong `region` cannot make the other checks pass by agreeing with them.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from eventpy.p2p._space import (
    Dimension,
    Space,
    coarser,
    covered,
    matches,
    merge,
    overlaps,
)
from eventpy.runtime.model import Interval

INF = math.inf

# --- reference geometry (from the definitions) ----------------------------------------------


def in_box(box, p) -> bool:
    return all(lo <= v < hi for (lo, hi), v in zip(box, p))


def inside(a, b) -> bool:
    """Box a lies in box b (both non-empty, half-open)."""
    return all(blo <= alo and ahi <= bhi for (alo, ahi), (blo, bhi) in zip(a, b))


def intersects(a, b) -> bool:
    return all(max(alo, blo) < min(ahi, bhi) for (alo, ahi), (blo, bhi) in zip(a, b))


def ref_region(space: Space, dz: str):
    """The sub-space a dz-expression names, by the definition: position k halves dimension k mod d
    of the current sub-space ('0' lower, '1' upper); '*' keeps both halves, and a dimension that
    took a '*' is not divided again (else the expression names no box)."""
    ranges = [list(r) for r in space.whole]
    starred = set()
    for k, c in enumerate(dz):
        i = k % space.d
        if c == "*":
            starred.add(i)
            continue
        assert i not in starred
        lo, hi = ranges[i]
        mid = (lo + hi) / 2
        ranges[i] = [lo, mid] if c == "0" else [mid, hi]
    # a real domain's top value belongs to it (space_of: both ends included): the cells at the
    # top hold it, so they end just above it
    return tuple((lo, math.nextafter(hi, INF) if not dim.integer and hi == dim.hi else hi)
                 for (lo, hi), dim in zip(ranges, space.dims))


def valid_dzs(d: int, depth: int) -> list[str]:
    """Every dz-expression of length <= depth that names a box (a dimension that took a '*' is
    '*' at its later positions), trailing '*'s included."""
    out = [""]
    frontier = [("", frozenset())]
    for k in range(depth):
        i = k % d
        nxt = []
        for dz, starred in frontier:
            options = "*" if i in starred else "01*"
            for c in options:
                nxt.append((dz + c, starred | {i} if c == "*" else starred))
        out.extend(dz for dz, _ in nxt)
        frontier = nxt
    return out


def cells(space: Space) -> list[tuple[str, tuple[float, ...]]]:
    """Every full-depth cell of a small space, as (code, centre point)."""
    out = []
    for bits in itertools.product("01", repeat=space.depth):
        code = "".join(bits)
        reg = ref_region(space, code)
        out.append((code, tuple((lo + hi) / 2 for lo, hi in reg)))
    return out


def cell_set(space: Space, dzs) -> frozenset[str]:
    """The full-depth cells whose centres lie in the union of the regions of dzs (every dz of
    length <= depth is a union of full-depth cells, so this is the union, exactly)."""
    regs = [ref_region(space, dz) for dz in dzs]
    return frozenset(code for code, c in cells(space) if any(in_box(r, c) for r in regs))


def box_corners(space: Space, box):
    """Points at the box's corners (the lowest and highest value inside it per dimension, for an
    integer dimension its first and last integer), clamped to the domain; and points just outside
    each face."""
    inner, outer = [], []
    per_dim_in, per_dim_out = [], []
    for dim, (lo, hi) in zip(space.dims, box):
        if dim.integer:
            first, last = math.ceil(lo), math.ceil(hi) - 1
            per_dim_in.append(sorted({first, last}))
            per_dim_out.append([v for v in (first - 1, last + 1) if dim.lo <= v < dim.hi])
        else:
            per_dim_in.append(sorted({lo, math.nextafter(hi, -INF)}))
            per_dim_out.append([v for v in (math.nextafter(lo, -INF), hi) if dim.lo <= v < dim.hi])
    for combo in itertools.product(*per_dim_in):
        inner.append(tuple(float(v) for v in combo))
    for i, outs in enumerate(per_dim_out):
        for v in outs:
            for combo in itertools.product(*per_dim_in):
                p = list(combo)
                p[i] = v
                outer.append(tuple(float(x) for x in p))
    return inner, outer


def int_points(lo: float, hi: float) -> range:
    return range(math.ceil(lo), math.ceil(hi))


# --- strategies -------------------------------------------------------------------------------

NAMES = ["A1", "A2", "A3", "A4"]


@st.composite
def dimensions(draw, name: str, kinds=("pow2", "ints", "float"), max_bits=7):
    """One attribute: an integer domain of power-of-two size (like the paper's [1, 128] and
    [1, 16]), another integer domain, or a real one. Integer domains have at most 2^max_bits
    values."""
    kind = draw(st.sampled_from(kinds))
    if kind == "pow2":
        lo = draw(st.sampled_from([1, 0, -8, 5]))
        bits = draw(st.integers(1, min(7, max_bits)))
        return Dimension.ints(name, lo, lo + 2 ** bits - 1)
    if kind == "ints":
        lo = draw(st.integers(-5, 5))
        return Dimension.ints(name, lo, lo + draw(st.integers(0, min(40, 2 ** max_bits - 1))))
    lo = draw(st.sampled_from([0.0, -1.0, 0.5, -100.0, 1e3]))
    return Dimension.floats(name, lo, lo + draw(st.sampled_from([1.0, 3.0, 100.0, 0.1, 1e3])))


@st.composite
def spaces(draw, kinds=("pow2", "ints", "float"), max_d=4, full_depth=False, budget=12):
    """A space of 1-4 dimensions with at most `budget` splits in all (so that mappings stay
    small). `full_depth` keeps the default depth (enough splits to isolate every integer; integer
    kinds only); otherwise the depth is drawn up to the default (16 per real dimension)."""
    d = draw(st.integers(1, max_d))
    max_bits = max(1, budget // d)
    dims = [draw(dimensions(NAMES[i], kinds, max_bits)) for i in range(d)]
    if full_depth:
        space = Space(dims)
        assert space.depth <= budget
        return space
    depth = draw(st.integers(1, min(Space(dims).depth, budget)))
    return Space(dims, depth)


def dim_value(dim: Dimension):
    if dim.integer:
        return st.integers(int(dim.lo), int(dim.hi) - 1)
    return st.floats(dim.lo, dim.hi, allow_nan=False)  # hi itself is a value of a real domain


def points(space: Space):
    return st.tuples(*[dim_value(dim) for dim in space.dims]).map(space.point)


def points_in(space: Space, box):
    """Points inside a non-empty box (clipped to the domain)."""
    parts = []
    for dim, (lo, hi) in zip(space.dims, box):
        if dim.integer:
            parts.append(st.integers(math.ceil(lo), math.ceil(hi) - 1))
        else:
            parts.append(st.floats(lo, hi, exclude_max=True, allow_nan=False))
    return st.tuples(*parts).map(lambda vs: tuple(float(v) for v in vs))


@st.composite
def ranges_for(draw, dim: Dimension):
    """A range on one dimension: None (whole domain), (lo, hi) both included, or an Interval;
    may reach beyond the domain and, rarely, be empty."""
    kind = draw(st.sampled_from(["none", "pair", "pair", "pair", "interval"]))
    if kind == "none":
        return None
    if dim.integer:
        vals = st.integers(int(dim.lo) - 3, int(dim.hi) + 2)
    else:
        w = dim.hi - dim.lo
        vals = st.floats(dim.lo - w / 4, dim.hi + w / 4, allow_nan=False)
    a, b = draw(vals), draw(vals)
    if draw(st.integers(0, 9)):  # mostly non-empty
        a, b = min(a, b), max(a, b)
    if kind == "pair":
        return (a, b)
    return Interval(float(a), draw(st.booleans()), float(b), draw(st.booleans()))


@st.composite
def boxes(draw, space: Space, nonempty=True):
    given_ = {}
    for dim in space.dims:
        r = draw(ranges_for(dim))
        if r is not None:
            given_[dim.name] = r
    box = space.box(given_)
    if nonempty:
        assume(all(lo < hi for lo, hi in box))
        # an integer dimension needs an integer inside (a box like [2.5, 3) has none)
        assume(all(not dim.integer or math.ceil(lo) < hi for dim, (lo, hi) in zip(space.dims, box)))
    return box


@st.composite
def space_and_box(draw, **kw):
    space = draw(spaces(**kw))
    return space, draw(boxes(space))


@st.composite
def dz_in(draw, space: Space, canonical=None):
    """A random dz-expression that names a box of `space` (a dimension that took a '*' is '*'
    at its later positions); trailing '*'s dropped when canonical (randomly when None)."""
    n = draw(st.integers(0, space.depth))
    starred = set()
    out = []
    for k in range(n):
        i = k % space.d
        c = "*" if i in starred else draw(st.sampled_from("01*"))
        if c == "*":
            starred.add(i)
        out.append(c)
    dz = "".join(out)
    if canonical is None:
        canonical = draw(st.booleans())
    return dz.rstrip("*") if canonical else dz


def extend(draw, space: Space, dz: str) -> str:
    """A random descendant of dz in the decomposition (its sub-space lies in dz's)."""
    starred = {k % space.d for k, c in enumerate(dz) if c == "*"}
    out = list(dz)
    for k in range(len(dz), draw(st.integers(len(dz), max(len(dz), space.depth)))):
        i = k % space.d
        c = "*" if i in starred else draw(st.sampled_from("01*"))
        if c == "*":
            starred.add(i)
        out.append(c)
    return "".join(out)


def accurate_or_skip(space, box):
    try:
        return space.accurate(box)
    except ValueError:  # over the limit: the brief's spaces are kept small so this is rare
        assume(False)


# Tiny spaces for exhaustive checks: every valid dz-expression, every full-depth cell.
TINY = [
    Space([Dimension.ints("a", 0, 15)], 4),
    Space([Dimension.floats("a", 0.0, 100.0)], 5),
    Space([Dimension.ints("a", 1, 16), Dimension.ints("b", 1, 16)], 4),
    Space([Dimension.floats("p", 0.0, 100.0), Dimension.floats("q", -1.0, 1.0)], 5),
    Space([Dimension.ints("a", 1, 8), Dimension.ints("b", 1, 8), Dimension.ints("c", 1, 8)], 5),
    Space([Dimension.ints("a", 0, 9), Dimension.floats("b", 0.0, 1.0), Dimension.ints("c", 1, 4)], 4),
]
TINY_IDS = [f"d{s.d}-depth{s.depth}-{'i' if all(x.integer for x in s.dims) else 'f'}{n}"
            for n, s in enumerate(TINY)]
_TINY_DZS = {id(s): valid_dzs(s.d, s.depth) for s in TINY}
_TINY_CELLS = {id(s): cells(s) for s in TINY}


def tiny_dzs(space):
    return _TINY_DZS[id(space)]


def tiny_cells(space):
    return _TINY_CELLS[id(space)]


# --- the paper's examples -------------------------------------------------------------------


@pytest.mark.parametrize("depth", [3, 4])
def test_figure2_accurate_mapping_is_001_011(depth):
    """§3 Figure 2: sub1 = {Pressure=[25,50] ∧ Area=[0,100]} -> {001, 011}; with §5.2's '*'
    that is one expression, 0*1. The figure's [25,50] is the half-open [25, 50) the
    decomposition's cells are (Pressure = 50 lies in the upper half, sub-space 1)."""
    space = Space([Dimension.floats("Pressure", 0, 100), Dimension.floats("Area", 0, 100)], depth)
    box = space.box(Pressure=Interval(25, True, 50, False), Area=(0, 100))
    got = space.accurate(box)
    assert got == ["0*1"]
    # same sub-space as the paper's {001, 011}: compare the regions' union cell by cell
    assert cell_set(space, got) == cell_set(space, ["001", "011"])
    # (Area = 100, the domain's top, is in it: the top cells end just above it)
    assert ref_region(space, "0*1") == ((25.0, 50.0), (0.0, math.nextafter(100.0, INF)))
    # the paper's coarsening of sub1 to the sub-space 0 (§3) is its DZ-1, and covers it
    assert coarser("0*1") == "0"
    assert covered("0*1", "0") and covered("001", "0") and covered("011", "0")
    assert not covered("0", "0*1")
    # one expression is enough: a coarse mapping into r = 1 needs no false positives here
    assert space.coarse(box, 1) == ["0*1"]
    assert space.coarse(box, 5) == ["0*1"]


def test_figure2_on_integers():
    """The same example on an integer domain [0, 99]: Pressure 25..49 is the cell 0*1 again."""
    space = Space([Dimension.ints("Pressure", 0, 99), Dimension.ints("Area", 0, 99)], 3)
    box = space.box(Pressure=(25, 49), Area=(0, 99))
    assert space.accurate(box) == ["0*1"]
    # with the closed end at 50 the value 50 is in the subscription, so its cell must be mapped
    box50 = space.box(Pressure=(25, 50))
    dzs = space.accurate(box50)
    p = space.point({"Pressure": 50, "Area": 70})
    assert any(matches(space.code(p), dz) for dz in dzs)
    assert not any(matches(space.code(space.point([24, 70])), dz) for dz in dzs)


def test_figure4_finer_of_00_10():
    """§5.1 Figure 4: the subscription *0*0 (all of the first dimension, the lowest quarter of the
    second) mapped to DZC = {00, 10} has DZ+1 = {0000, 0010, 1000, 1010} and DZ-1 = {ε}.
    The dimension the subscription spans is not divided for nothing: DZ+1 of 00 is 00*0, the
    '*'-form of {0000, 0010}, not {000, 001} (whose union is 00 itself, so the "refinement"
    would drop no false positive)."""
    space = Space([Dimension.ints("x", 0, 3), Dimension.ints("y", 0, 3)], 4)
    box = space.box(y=(0, 0))
    assert space.accurate(box) == ["*0*0"]
    assert cell_set(space, ["*0*0"]) == cell_set(space, ["0000", "0010", "1000", "1010"])
    plus = [k for dz in ("00", "10") for k in space.finer(dz, box)]
    assert cell_set(space, plus) == cell_set(space, ["0000", "0010", "1000", "1010"])
    assert sorted(plus) == ["00*0", "10*0"]
    # in §5.2's notation DZC = {00, 10} is the one expression *0: its DZ-1 is ε, its DZ+1 *0*0
    assert cell_set(space, ["*0"]) == cell_set(space, ["00", "10"])
    assert coarser("*0") == ""
    assert space.finer("*0", box) == ["*0*0"]
    # nothing finer than the subscription itself
    assert space.finer("*0*0", box) == ["*0*0"]


# --- code, region, matches -------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_code_names_a_cell_containing_the_point(data):
    space = data.draw(spaces())
    p = data.draw(points(space))
    code = space.code(p)
    assert len(code) == space.depth and set(code) <= {"0", "1"}
    assert space.region(code) == ref_region(space, code)
    assert in_box(space.region(code), p)
    assert matches(code, code) and matches(code, "")


@pytest.mark.parametrize("space", TINY, ids=TINY_IDS)
def test_region_is_the_decomposition_and_matches_agrees_exhaustive(space):
    """Every valid dz-expression of a small space: region is the halving of §3, and an event in
    every full-depth cell matches dz iff it lies in region(dz)."""
    for dz in tiny_dzs(space):
        reg = space.region(dz)
        assert reg == ref_region(space, dz), dz
        for code, c in tiny_cells(space):
            assert space.code(c) == code
            assert matches(code, dz) == in_box(reg, c), (dz, code)


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_matches_iff_point_in_region_for_produced_dzs(data):
    space, box = data.draw(space_and_box())
    r = data.draw(st.integers(1, 8))
    acc = accurate_or_skip(space, box)
    co = space.coarse(box, r)
    produced = set(acc) | set(co)
    for dz in list(produced):
        produced.update(space.finer(dz, box))
        produced.update(space.finer(dz))
        produced.add(coarser(dz))
    for _ in range(5):
        p = data.draw(points(space))
        code = space.code(p)
        for dz in produced:
            assert matches(code, dz) == in_box(ref_region(space, dz), p), (dz, p)


def test_half_open_boundaries():
    """A value on a midpoint belongs to the upper half; the top of a real domain is in the
    topmost cell."""
    space = Space([Dimension.floats("x", 0, 100)], 3)
    assert space.code(space.point([50])) == "100"
    assert space.code(space.point([math.nextafter(50, 0)])) == "011"
    assert space.code(space.point([100])) == "111"
    assert space.code(space.point([0])) == "000"
    ints = Space([Dimension.ints("x", 1, 128)])
    assert ints.depth == 7
    # 7 splits of [1, 128] isolate single values (§6's domain)
    codes = {ints.code(ints.point([v])) for v in range(1, 129)}
    assert len(codes) == 128
    for v in range(1, 129):
        assert ref_region(ints, ints.code(ints.point([v]))) == ((v, v + 1),)


def test_volume():
    space = Space([Dimension.ints("a", 1, 16), Dimension.floats("b", 0, 1)], 6)
    assert space.volume("") == 1.0
    assert space.volume("0") == 0.5
    assert space.volume("0*1") == 0.25
    assert space.volume("01") == 0.25
    assert space.volume("*1*0") == 0.25


# --- accurate --------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_accurate_covers_the_box(data):
    space, box = data.draw(space_and_box())
    dzs = accurate_or_skip(space, box)
    assert dzs, "a non-empty box needs at least one sub-space"
    for dz in dzs:
        assert set(dz) <= set("01*") and not dz.endswith("*") and len(dz) <= space.depth
        assert intersects(ref_region(space, dz), box), f"{dz} does not reach the box"
    inner, _ = box_corners(space, box)
    samples = inner + [data.draw(points_in(space, box)) for _ in range(10)]
    for p in samples:
        code = space.code(p)
        assert any(matches(code, dz) for dz in dzs), p
        assert any(in_box(ref_region(space, dz), p) for dz in dzs), p


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_accurate_is_exact_on_power_of_two_integer_domains(data):
    """Full depth isolates single integers, so no event outside the box matches (§3: if the
    peer-level mapping is the accurate one the peer gets only matching events)."""
    space = data.draw(spaces(kinds=("pow2",), full_depth=True))
    box = data.draw(boxes(space))
    dzs = accurate_or_skip(space, box)
    for dz in dzs:
        reg = ref_region(space, dz)
        for (rlo, rhi), (blo, bhi) in zip(reg, box):
            # every integer of the sub-space is in the box
            assert set(int_points(rlo, rhi)) <= set(int_points(blo, bhi)), (dz, reg, box)
    _, outer = box_corners(space, box)
    for _ in range(10):
        p = data.draw(points(space))
        if not in_box(box, p):
            outer.append(p)
    for p in outer:
        code = space.code(p)
        assert not any(matches(code, dz) for dz in dzs), (p, box)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_accurate_expressions_are_disjoint_and_minimal(data):
    space, box = data.draw(space_and_box())
    dzs = accurate_or_skip(space, box)
    assert dzs == sorted(set(dzs))
    for a, b in itertools.combinations(dzs, 2):
        assert not covered(a, b) and not covered(b, a)
        assert not intersects(ref_region(space, a), ref_region(space, b)), (a, b)
        assert not overlaps(a, b)
    # "the fewest sub-spaces": two siblings w0 and w1 would be their parent w, the same union
    for dz in dzs:
        if dz and dz[-1] in "01":
            sib = dz[:-1] + ("1" if dz[-1] == "0" else "0")
            assert sib not in dzs, (dz, sib)


def test_accurate_small_cases():
    space = Space([Dimension.ints("a", 1, 16), Dimension.ints("b", 1, 16)])
    assert space.accurate(space.whole) == [""]
    assert space.accurate(space.box()) == [""]
    assert space.accurate(space.box(a=(1, 8))) == ["0"]
    assert space.accurate(space.box(b=(9, 16))) == ["*1"]
    assert space.accurate(space.box(a=(9, 12), b=(1, 8))) == ["100"]
    assert space.accurate(space.box(a=(5, 3))) == []  # empty
    assert space.accurate(space.box(a=(20, 30))) == []  # outside the domain
    cell = space.accurate(space.box(a=(3, 3), b=(7, 7)))
    assert cell == [space.code(space.point([3, 7]))]
    with pytest.raises(ValueError):
        space.accurate(space.box(a=(2, 15), b=(2, 15)), limit=3)


# --- coarse (Algorithm 4) ---------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_coarse_properties(data):
    space, box = data.draw(space_and_box())
    r = data.draw(st.integers(1, 12))
    acc = accurate_or_skip(space, box)
    dzs = space.coarse(box, r)
    assert 1 <= len(dzs) <= r  # property 1
    for a in acc:  # property 2
        cover = [c for c in dzs if covered(a, c)]
        assert cover, (a, dzs)
        assert inside(ref_region(space, a), ref_region(space, cover[0]))
    for dz in dzs:
        space.region(dz)  # names a box
        assert intersects(ref_region(space, dz), box)
    for a, b in itertools.combinations(dzs, 2):
        assert not covered(a, b) and not covered(b, a)
        assert not intersects(ref_region(space, a), ref_region(space, b))
    inner, _ = box_corners(space, box)
    for p in inner + [data.draw(points_in(space, box)) for _ in range(8)]:
        assert any(matches(space.code(p), dz) for dz in dzs), p


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_coarse_with_room_for_every_split_is_accurate(data):
    """With r large enough that no split of Algorithm 4 is refused, the coarse mapping encloses
    the box as tightly as the accurate one: the same union."""
    space, box = data.draw(space_and_box())
    acc = accurate_or_skip(space, box)
    co = space.coarse(box, 10_000)
    assert co == acc
    inner, outer = box_corners(space, box)
    samples = inner + outer + [data.draw(points(space)) for _ in range(10)]
    for p in samples:
        code = space.code(p)
        assert any(matches(code, dz) for dz in co) == any(matches(code, dz) for dz in acc), p


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_coarse_with_r_the_accurate_size_is_accurate(data):
    """On power-of-two integer domains at full depth no two expressions of the accurate mapping
    merge, so each is a leaf of Algorithm 4's exploration: r = |accurate| expressions are room
    enough for every split (after a split there are never more pending sub-spaces than leaves to
    come), and the coarse mapping is the accurate one."""
    space = data.draw(spaces(kinds=("pow2",), full_depth=True))
    box = data.draw(boxes(space))
    acc = accurate_or_skip(space, box)
    assert space.coarse(box, len(acc)) == acc
    if len(acc) > 1:  # one fewer is not enough to be exact: some event outside the box matches
        co = space.coarse(box, len(acc) - 1)
        assert len(co) < len(acc)
        assert any(not set(int_points(*rr)) <= set(int_points(*bb))
                   for dz in co for rr, bb in zip(ref_region(space, dz), box)), (acc, co)


def test_coarse_errors_and_edges():
    space = Space.uniform(2, 1, 16)
    box = space.box(A1=(3, 9), A2=(2, 2))
    for bad in (0, -1):
        with pytest.raises(ValueError):
            space.coarse(box, bad)
    assert space.coarse(space.box(A1=(9, 3)), 3) == []
    (one,) = space.coarse(box, 1)
    assert all(matches(space.code(space.point([a, 2])), one) for a in range(3, 10))
    assert space.coarse(space.whole, 4) == [""]


# --- covered, overlaps: against region containment -------------------------------------------


@pytest.mark.parametrize("space", TINY, ids=TINY_IDS)
def test_covered_and_overlaps_agree_with_regions_exhaustive(space):
    dzs = tiny_dzs(space)
    regs = {dz: ref_region(space, dz) for dz in dzs}
    for a in dzs:
        ra = regs[a]
        assert covered(a, a)
        for b in dzs:
            rb = regs[b]
            assert covered(a, b) == inside(ra, rb), (a, b)
            assert overlaps(a, b) == intersects(ra, rb), (a, b)


@pytest.mark.parametrize("space", TINY[:5], ids=TINY_IDS[:5])
def test_covered_is_transitive_exhaustive(space):
    dzs = [dz for dz in tiny_dzs(space) if not dz.endswith("*")]  # one spelling per sub-space
    up = {a: [b for b in dzs if covered(a, b)] for a in dzs}
    for a in dzs:
        for b in up[a]:
            for c in up[b]:
                assert covered(a, c), (a, b, c)


@pytest.mark.parametrize("space", TINY, ids=TINY_IDS)
def test_starless_subspaces_nest_or_are_disjoint(space):
    """§3: without '*', overlapping sub-spaces are always in a containment relationship."""
    dzs = [dz for dz in tiny_dzs(space) if "*" not in dz]
    for a, b in itertools.combinations(dzs, 2):
        if overlaps(a, b):
            assert covered(a, b) or covered(b, a), (a, b)
        else:
            assert not intersects(ref_region(space, a), ref_region(space, b))


def test_star_subspaces_may_cross():
    """With §5.2's '*' that is no longer so: *1 (upper half of the second dimension) and 0 (lower
    half of the first) intersect, yet neither covers the other."""
    space = Space.uniform(2, 1, 16)
    assert overlaps("*1", "0") and not covered("*1", "0") and not covered("0", "*1")
    assert intersects(space.region("*1"), space.region("0"))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_covered_on_larger_spaces(data):
    space = data.draw(spaces(budget=20))
    a = data.draw(dz_in(space))
    b = data.draw(dz_in(space))
    ra, rb = ref_region(space, a), ref_region(space, b)
    assert covered(a, b) == inside(ra, rb)
    assert overlaps(a, b) == intersects(ra, rb)
    assert overlaps(a, b) == overlaps(b, a)
    # a descendant is covered, and transitively so
    mid = extend(data.draw, space, b)
    low = extend(data.draw, space, mid)
    assert covered(mid, b) and covered(low, mid) and covered(low, b)
    assert inside(ref_region(space, low), rb)


# --- merge -----------------------------------------------------------------------------------


_MASKS: dict[tuple[int, str], int] = {}


def cell_mask(space, dz: str) -> int:
    """The full-depth cells of a tiny space inside region(dz), as a bit mask."""
    key = (id(space), dz)
    if key not in _MASKS:
        reg = ref_region(space, dz)
        _MASKS[key] = sum(1 << n for n, (_, c) in enumerate(tiny_cells(space)) if in_box(reg, c))
    return _MASKS[key]


def union_mask(space, dzs) -> int:
    m = 0
    for dz in dzs:
        m |= cell_mask(space, dz)
    return m


def _check_merge(space, dzs, got):
    assert got == sorted(set(got))
    for dz in got:
        space.region(dz)
        assert not dz.endswith("*")
    for a, b in itertools.permutations(got, 2):
        assert not covered(a, b), f"merge({dzs}) = {got}: {a} is covered by {b}"
    assert union_mask(space, got) == union_mask(space, dzs), (dzs, got)


@pytest.mark.parametrize("space", TINY[2:5], ids=TINY_IDS[2:5])
def test_merge_pairs_exhaustive(space):
    """Every pair of valid expressions: same union, and no result covered by another. (A pair
    like 001 and 0*1, the first inside the second, once came out unmerged, depending on the
    order a set iterated in.)"""
    dzs = [dz for dz in tiny_dzs(space) if len(dz) >= 2]
    for a, b in itertools.combinations(dzs, 2):
        _check_merge(space, [a, b], merge([a, b]))


def test_merge_covered_pair_of_same_length():
    space = TINY[2]
    for pair in (["001", "0*1"], ["0*1", "001"], ["00", "*0"], ["1*1", "101"], ["10*1", "1001"]):
        got = merge(pair)
        _check_merge(space, pair, got)
        assert len(got) == 1


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_merge_keeps_the_union(data):
    space = data.draw(st.sampled_from(TINY))
    dzs = data.draw(st.lists(st.sampled_from(tiny_dzs(space)), max_size=8))
    got = merge(dzs)
    _check_merge(space, dzs, got)
    assert merge(got) == got  # nothing left to merge
    assert len(got) <= len(set(dz.rstrip("*") for dz in dzs))


def test_merge_examples():
    assert merge([]) == []
    assert merge(["000", "001"]) == ["00"]
    assert merge(["000", "001", "01"]) == ["0"]
    assert merge(["0", "1"]) == [""]
    assert merge(["0*0", "0*1"]) == ["0"]
    assert merge(["01", "0"]) == ["0"]
    assert merge(["01", "01*"]) == ["01"]


# --- finer (DZ+1), coarser (DZ-1) ------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_finer_children_cover_dz_within_box(data):
    space, box = data.draw(space_and_box())
    dz = data.draw(st.one_of(dz_in(space, canonical=True),
                             st.sampled_from(space.coarse(box, data.draw(st.integers(1, 6))))))
    reg = ref_region(space, dz)
    kids = space.finer(dz, box)
    for k in kids:
        assert covered(k, dz) and inside(ref_region(space, k), reg)
    for a, b in itertools.combinations(kids, 2):
        assert not intersects(ref_region(space, a), ref_region(space, b))
    if kids != [dz]:
        for k in kids:
            assert intersects(ref_region(space, k), box), "a child the box does not reach"
            # divided once more, along a dimension the box does not span there
            assert space.volume(k) == pytest.approx(space.volume(dz) / 2)
            i = (len(k) - 1) % space.d
            (blo, bhi), (lo, hi) = box[i], reg[i]
            assert not (blo <= lo and hi <= bhi), (dz, k, box)
    # every point of dz ∩ box is in a child
    inter = tuple((max(a, c), min(b, d)) for (a, b), (c, d) in zip(reg, box))
    if all(lo < hi for lo, hi in inter) and all(
            not dim.integer or math.ceil(lo) < hi for dim, (lo, hi) in zip(space.dims, inter)):
        for p in [data.draw(points_in(space, inter)) for _ in range(6)]:
            assert any(matches(space.code(p), k) for k in kids), (p, dz, kids)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_finer_without_box_halves_dz(data):
    space = data.draw(spaces(budget=16))
    dz = data.draw(dz_in(space))
    kids = space.finer(dz)
    reg = ref_region(space, dz)
    if kids == [dz] or kids == [dz.rstrip("*")]:
        # nothing left to divide: every dimension is starred or the depth is reached
        starred = {k % space.d for k, c in enumerate(dz) if c == "*"}
        free = [k for k in range(len(dz), space.depth) if k % space.d not in starred]
        assert not free
        return
    assert len(kids) == 2
    a, b = (ref_region(space, k) for k in kids)
    assert inside(a, reg) and inside(b, reg) and not intersects(a, b)
    assert space.volume(kids[0]) + space.volume(kids[1]) == pytest.approx(space.volume(dz))
    assert merge(kids) == [dz.rstrip("*")]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_coarser_covers_and_is_divided_once_less(data):
    space = data.draw(spaces(budget=20))
    dz = data.draw(dz_in(space))
    up = coarser(dz)
    space.region(up)
    assert covered(dz, up) and inside(ref_region(space, dz), ref_region(space, up))
    if dz.rstrip("*"):
        assert space.volume(up) == pytest.approx(2 * space.volume(dz))
        assert up != dz.rstrip("*")
    else:
        assert up == ""


# --- errors ----------------------------------------------------------------------------------


def test_box_unknown_attribute():
    space = Space([Dimension.ints("Pressure", 0, 99), Dimension.ints("Area", 0, 99)])
    with pytest.raises(KeyError, match="Humidity"):
        space.box(Humidity=(1, 2))
    with pytest.raises(KeyError, match="Humidity"):
        space.box({"Pressure": (1, 2), "Humidity": (1, 2)})
    with pytest.raises(TypeError):
        space.box(Pressure=5)


@pytest.mark.parametrize("bad", ["01x", "2", " 0", "0-1", "ab"])
def test_region_rejects_other_characters(bad):
    space = Space.uniform(2, 1, 16)
    with pytest.raises(ValueError):
        space.region(bad)


def test_region_rejects_a_split_after_star():
    space = Space.uniform(2, 1, 16)
    with pytest.raises(ValueError):
        space.region("*01")  # dimension A1 took a '*' and is split again


@pytest.mark.parametrize("values", [[0, 5], [129, 5], [5, 0], [5, 129], [-1e9, 5], [5, math.nan]])
def test_point_outside_the_integer_domain(values):
    space = Space.uniform(2, 1, 128)
    with pytest.raises(ValueError):
        space.point(values)


@pytest.mark.parametrize("v", [-0.001, 100.001, math.inf, -math.inf, math.nan])
def test_point_outside_the_real_domain(v):
    space = Space([Dimension.floats("x", 0, 100)])
    with pytest.raises(ValueError):
        space.point([v])


def test_point_shape_errors():
    space = Space.uniform(2, 1, 128)
    assert space.point([1, 128]) == (1.0, 128.0)
    assert space.point({"A1": 3, "A2": 4}) == (3.0, 4.0)
    with pytest.raises(ValueError):
        space.point([1])
    with pytest.raises(KeyError, match="A2"):
        space.point({"A1": 3})


def test_space_and_dimension_errors():
    with pytest.raises(ValueError):
        Space([])
    with pytest.raises(ValueError):
        Space([Dimension.ints("a", 1, 2), Dimension.ints("a", 1, 2)])
    with pytest.raises(ValueError):
        Space([Dimension.ints("a", 1, 2)], 0)
    with pytest.raises(ValueError):
        Dimension.floats("a", 1, 1)
    with pytest.raises(ValueError):
        Dimension.floats("a", 0, math.inf)


# --- boxes from Intervals --------------------------------------------------------------------


@pytest.mark.parametrize("interval, values", [
    (Interval(2, False, 5, True), {3, 4, 5}),
    (Interval(2, True, 5, False), {2, 3, 4}),
    (Interval(2, False, 5, False), {3, 4}),
    (Interval(2, True, 5, True), {2, 3, 4, 5}),
    (Interval(2.5, True, 5.5, True), {3, 4, 5}),
    (Interval(2.5, False, 5.5, False), {3, 4, 5}),
    (Interval(-INF, True, 3, False), {1, 2}),
    (Interval(14, False, INF, True), {15, 16}),
    (Interval(-INF, True, INF, True), set(range(1, 17))),
    (Interval(5, False, 5, True), set()),
    (Interval(5, True, 5, True), {5}),
])
def test_interval_on_integers(interval, values):
    space = Space.uniform(1, 1, 16)
    box = space.box(A1=interval)
    (lo, hi), = box
    assert set(int_points(lo, hi) if lo < hi else ()) == values
    admitted = {v for v in range(1, 17) if any(matches(space.code(space.point([v])), dz)
                                               for dz in space.accurate(box))}
    assert admitted == values  # [1, 16] is a power-of-two domain: the mapping is exact


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_interval_boxes_admit_what_the_interval_admits(data):
    dim = data.draw(dimensions("x"))
    space = Space([dim], min(Space([dim]).depth, 12))
    if dim.integer:
        ends = st.one_of(st.integers(int(dim.lo) - 3, int(dim.hi) + 2).map(float),
                         st.floats(dim.lo - 3, dim.hi + 2, allow_nan=False), st.just(INF), st.just(-INF))
    else:
        w = dim.hi - dim.lo
        ends = st.one_of(st.floats(dim.lo - w / 4, dim.hi + w / 4, allow_nan=False), st.just(INF), st.just(-INF))
    iv = Interval(data.draw(ends), data.draw(st.booleans()), data.draw(ends), data.draw(st.booleans()))
    box = space.box(x=iv)
    if dim.integer:
        admitted = {v for v in range(int(dim.lo), int(dim.hi)) if iv.contains(v)}
        (lo, hi), = box
        assert set(int_points(lo, hi) if lo < hi else ()) == admitted, (iv, box)
        values = [float(v) for v in range(int(dim.lo), int(dim.hi))]
    else:
        values = [data.draw(st.floats(dim.lo, dim.hi, exclude_max=True, allow_nan=False)) for _ in range(10)]
        values += [v for v in (iv.lo, iv.hi, math.nextafter(iv.lo, INF), math.nextafter(iv.hi, -INF))
                   if dim.lo <= v < dim.hi]
    for v in values:
        assert in_box(box, (v,)) == iv.contains(v), (iv, v, box)
    # and the mapping admits every admitted event
    if all(lo < hi for lo, hi in box):
        dzs = accurate_or_skip(space, box)
        for v in values:
            if iv.contains(v):
                assert any(matches(space.code(space.point([v])), dz) for dz in dzs)


def test_pairs_are_closed_ranges():
    ints = Space.uniform(1, 1, 16)
    assert ints.box(A1=(2, 5)) == ((2.0, 6.0),)
    assert ints.box(A1=(2.5, 5.5)) == ((3.0, 6.0),)
    assert ints.box(A1=(-10, 100)) == ints.whole
    reals = Space([Dimension.floats("x", 0, 10)])
    (lo, hi), = reals.box(x=(2, 5))
    assert lo == 2 and in_box(((lo, hi),), (5.0,)) and not in_box(((lo, hi),), (math.nextafter(5, INF),))
    dzs = reals.accurate(reals.box(x=(2, 5)))
    assert any(matches(reals.code(reals.point([5])), dz) for dz in dzs)
    assert any(matches(reals.code(reals.point([2])), dz) for dz in dzs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("01*", max_size=6), min_size=1, max_size=4),
       st.lists(st.text("01*", max_size=6), min_size=1, max_size=4))
def test_apart_prefixes_admit_no_nesting_pair(a, b):
    """`apart` on the common prefixes of two peers' expressions (the quick test of gossip) is
    only true when no expression of one covers one of the other."""
    from os.path import commonprefix

    from eventpy.p2p._space import apart
    if apart(commonprefix(a), commonprefix(b)):
        assert not any(covered(x, y) or covered(y, x) for x in a for y in b)
    assert apart("01", "00") and not apart("0*", "01") and not apart("0", "01")
