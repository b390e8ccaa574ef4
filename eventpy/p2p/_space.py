"""The event space of the broker-less overlay and its dz-expressions (paper 004 §2, §3, §5.1-5.2).

The event space is d ordered attributes, each with a known domain; an event is a point in it and a
subscription a hyper-rectangle (a `Box`). Spatial indexing divides the space by recursive binary
decomposition, one dimension after the other (position k of a dz-expression splits dimension
k mod d at the midpoint of the current sub-space), and names each sub-space by its dz-expression:
a string over '0' (lower half), '1' (upper half) and '*' (both halves, §5.2). The empty string is
the whole space.

Every range here is half-open, [lo, hi): the two halves of a sub-space then partition it and a
point falls in exactly one. An integer domain [L, U] is [L, U + 1), so 7 splits of [1, 128] (the
paper's domain, §6) isolate single values.

Covering (§2, `covered`): dz1 ≺ dz2 when the sub-space of dz1 lies in that of dz2, which for
these strings is: dz2 is no longer than dz1 and agrees with it wherever dz2 is not '*' (and dz1
has '*' only where dz2 has one). Sub-spaces either nest or are disjoint (§3), which is what lets
the overlay map covering onto parent/child links.

A '*' is written only where the box spans the whole current range of that dimension (§5.2), so a
dimension that once got '*' gets '*' at all its later positions: every dz-expression made here
names a box, and `region` returns it. Trailing '*'s are dropped (same sub-space, one spelling).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Box = tuple[tuple[float, float], ...]  # one half-open range [lo, hi) per dimension


@dataclass(frozen=True)
class Dimension:
    """One attribute: its name, its domain as a half-open range, and whether values are integers."""

    name: str
    lo: float
    hi: float
    integer: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"dimension {self.name!r}: the domain must be finite and non-empty, "
                             f"not [{self.lo}, {self.hi})")

    @property
    def top(self) -> float:
        """Where boxes on this dimension may end: `hi` for integers ([L, U + 1)), just above `hi`
        for reals, whose top value belongs to the domain (a box [hi, top) holds it)."""
        return self.hi if self.integer else math.nextafter(self.hi, math.inf)

    def domain(self) -> str:
        """The domain as the user gave it, both ends included."""
        if self.integer:
            return f"[{int(self.lo)}, {int(self.hi) - 1}] (whole values)"
        return f"[{self.lo!r}, {self.hi!r}]"

    @classmethod
    def ints(cls, name: str, lo: int, hi: int) -> Dimension:
        """The integer domain [lo, hi], both ends included (the paper's [1, 128])."""
        return cls(name, float(lo), float(hi) + 1.0, True)

    @classmethod
    def floats(cls, name: str, lo: float, hi: float) -> Dimension:
        """A real domain; a value equal to `hi` is put in the topmost cell."""
        return cls(name, float(lo), float(hi), False)


class Space:
    """d dimensions and the dz-expressions over them. `depth` is the longest dz-expression (the
    finest cells); by default enough splits per dimension to isolate every integer value (16 for a
    real dimension)."""

    def __init__(self, dims: Sequence[Dimension], depth: int | None = None) -> None:
        if not dims:
            raise ValueError("an event space needs at least one dimension")
        names = [d.name for d in dims]
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names repeat: {names}")
        self.dims = tuple(dims)
        self.d = len(dims)
        self.index = {d.name: i for i, d in enumerate(dims)}
        if depth is None:
            bits = max(_bits(d) for d in dims)
            depth = bits * self.d
        if depth < 1:
            raise ValueError(f"depth must be at least 1, not {depth}")
        self.depth = depth
        self.whole: Box = tuple((d.lo, d.hi) for d in dims)
        self._volumes: dict[str, float] = {}

    @classmethod
    def uniform(cls, d: int, lo: int = 1, hi: int = 128) -> Space:
        """d integer attributes A1..Ad over [lo, hi], the paper's evaluation space (§6)."""
        return cls([Dimension.ints(f"A{i + 1}", lo, hi) for i in range(d)])

    # --- boxes and points -------------------------------------------------------------------

    def box(self, ranges: Mapping[str, Any] | None = None, **kw: Any) -> Box:
        """A subscription's hyper-rectangle. Each attribute takes (lo, hi), both included, or an
        EventPy Interval (open or closed ends); a missing attribute is its whole domain. The box
        is clipped to the domain; it may come out empty (then no sub-space is needed). A real
        domain's top value `hi` is one of its values (Dimension.floats), so a range that reaches it
        keeps it: the box ends just above `hi` there."""
        given = dict(ranges or {}, **kw)
        unknown = set(given) - set(self.index)
        if unknown:
            raise KeyError(f"no dimension named {', '.join(sorted(unknown))}; the space has "
                           f"{', '.join(self.index)}")
        out = []
        for dim in self.dims:
            r = given.get(dim.name)
            lo, hi = (dim.lo, dim.top) if r is None else _half_open(dim, r)
            out.append((max(lo, dim.lo), min(hi, dim.top)))
        return tuple(out)

    def point(self, values: Mapping[str, Any] | Sequence[Any]) -> tuple[float, ...]:
        if isinstance(values, Mapping):
            missing = [d.name for d in self.dims if d.name not in values]
            if missing:
                raise KeyError(f"an event needs every attribute of the space; missing {', '.join(missing)}")
            unknown = [str(a) for a in values if a not in self.index]
            if unknown:  # a misspelt attribute was dropped without a word
                raise KeyError(f"{', '.join(unknown)}: no such attribute; the space has "
                               f"{', '.join(self.index)}")
            values = [values[d.name] for d in self.dims]
        elif isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise TypeError(f"an event is {{attribute: value}} or a sequence of {self.d} values, "
                            f"not {values!r}")
        if len(values) != self.d:
            raise ValueError(f"an event of this space has {self.d} values, not {len(values)}")
        out = []
        for dim, v in zip(self.dims, values):
            if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__index__") \
                    and not hasattr(v, "__float__"):
                raise TypeError(f"{dim.name} must be a number, not {v!r}")
            given = v
            try:
                v = float(v)
            except OverflowError:  # an int beyond any float: outside every domain
                raise ValueError(f"{dim.name} = {given} is outside its domain {dim.domain()}") from None
            if dim.integer and not v.is_integer():
                raise ValueError(f"{dim.name} is an integer attribute; {given!r} is not a whole value")
            if not dim.lo <= v <= dim.hi or (dim.integer and v == dim.hi):
                raise ValueError(f"{dim.name} = {given!r} is outside its domain {dim.domain()}")
            # hi itself (a real domain's top) stays as published: code() puts it in the top cell,
            # and the subscriber's guard and callback must see the value the publisher sent
            out.append(v)
        return tuple(out)

    def code(self, point: Sequence[float]) -> str:
        """The full-depth dz-expression of a point (no '*'): the finest cell it falls in."""
        ranges = [list(r) for r in self.whole]
        d = self.d
        out = []
        for k in range(self.depth):
            r = ranges[k % d]
            mid = (r[0] + r[1]) / 2
            if point[k % d] < mid:
                out.append("0")
                r[1] = mid
            else:
                out.append("1")
                r[0] = mid
        return "".join(out)

    def region(self, dz: str) -> Box:
        """The box a dz-expression names. A real domain's top value is in the topmost cell
        (code() puts it there): that cell's box ends just above it, as boxes from Space.box do.
        (Splits halve the cell, `_cell`, whose ranges end at the domain's `hi`.)"""
        return self._closed(self._cell(dz))

    def _closed(self, reg: Box) -> Box:
        return tuple((lo, dim.top if hi == dim.hi else hi) for (lo, hi), dim in zip(reg, self.dims))

    def _cell(self, dz: str) -> Box:
        """The sub-space of a dz-expression as the decomposition halves it, [lo, hi) per dimension."""
        _check(dz)
        ranges = [list(r) for r in self.whole]
        starred = [False] * self.d
        for k, c in enumerate(dz):
            i = k % self.d
            if c == "*":
                starred[i] = True
                continue
            if starred[i]:
                raise ValueError(f"{dz!r} splits dimension {self.dims[i].name} after a '*' there: "
                                 "it names no box")
            r = ranges[i]
            mid = (r[0] + r[1]) / 2
            if c == "0":
                r[1] = mid
            else:
                r[0] = mid
        return tuple((lo, hi) for lo, hi in ranges)

    def volume(self, dz: str) -> float:
        """The share of the whole space a dz-expression's sub-space takes (0..1)."""
        v = self._volumes.get(dz)
        if v is None:  # asked again and again by eviction and rate estimates: kept
            v = math.prod((hi - lo) / (d.hi - d.lo) for (lo, hi), d in zip(self._cell(dz), self.dims))
            if len(self._volumes) < 1 << 16:
                self._volumes[dz] = v
        return v

    # --- mappings from a box to dz-expressions ------------------------------------------------

    def accurate(self, box: Box, limit: int = 4096) -> list[str]:
        """The accurate peer-level subscription (§3, with §5.2's '*'): the fewest sub-spaces, down
        to `depth`, whose union encloses the box; cells at full depth that the box only partly
        fills are included (the finest granularity there is). Raises ValueError if more than
        `limit` expressions would be needed (use `coarse`)."""
        out: list[str] = []
        if _empty(box):
            return out
        stack = [("", self.whole, 0)]
        while stack:
            dz, reg, pos = stack.pop()
            split = self._split(box, dz, reg, pos)
            if split is None:
                out.append(dz.rstrip("*"))
                if len(out) > limit:
                    raise ValueError(f"the accurate mapping needs more than {limit} dz-expressions; "
                                     "coarsen it (Space.coarse) or raise the limit")
            else:
                stack.extend(reversed(split))
        # Two partly filled full-depth cells w0 and w1 (or a full one and a partial one) enclose
        # the box no tighter than their parent w: one expression instead of two ("the fewest").
        return merge(out)

    def coarse(self, box: Box, r: int) -> list[str]:
        """Algorithm 4 (004 §5.1): at most r dz-expressions enclosing the box, by breadth-first
        decomposition, so that splits are spent evenly across the box's sub-spaces.

        Line 11 splits a sub-space the box occupies on both sides of the midpoint only while the
        result stays within r (the printed `|q| + |DZC| < r` is read as the count after the split,
        which keeps property 1, |DZC| <= r); a dimension the box spans completely takes a '*' and
        costs nothing (§5.2). Line 14's `m` is a misprint of x, the midpoint. Line 20 merges two
        sibling expressions into their parent."""
        if r < 1:
            raise ValueError(f"r must be at least 1, not {r}")
        out: list[str] = []
        if _empty(box):
            return out
        q: deque[tuple[str, Box, int]] = deque([("", self.whole, 0)])
        while q:
            dz, reg, pos = q.popleft()
            split = self._split(box, dz, reg, pos)
            if split is None:
                out.append(dz)  # line 10 (covered) or at full depth
            elif len(split) == 1:
                q.append(split[0])  # lines 14-17: one side only, or a '*' (no extra expression)
            elif len(q) + len(out) + 2 <= r:  # line 11
                q.extend(split)  # lines 12-13
            else:
                out.append(dz)  # line 19: keep the enclosing sub-space
        return merge(out)

    def _split(self, box: Box, dz: str, reg: Box, pos: int):
        """None if `reg` is final (covered by the box, or at full depth); else the one or two
        (dz, region, pos) children the box reaches."""
        if pos >= self.depth or _inside(reg, box):
            return None
        i = pos % self.d
        lo, hi = reg[i]
        blo, bhi = box[i]
        if blo <= lo and bhi >= hi:  # §5.2: the box spans this dimension here
            return [(dz + "*", reg, pos + 1)]
        mid = (lo + hi) / 2
        kids = []
        if blo < mid:
            kids.append((dz + "0", _with(reg, i, lo, mid), pos + 1))
        if bhi > mid:
            kids.append((dz + "1", _with(reg, i, mid, hi), pos + 1))
        return kids

    def finer(self, dz: str, box: Box | None = None) -> list[str]:
        """DZ+1 of one expression (§5.1): its sub-spaces divided once more, those the box reaches
        (all when no box is given); a dimension under '*' is not split again, and neither is one
        the box spans across the sub-space: it takes a '*' (§5.2), as in the mappings.

        Splitting a spanned dimension gave two children that both reach the box and together are
        dz again, so a refinement dropped no false positive (merge folded them back into dz):
        Figure 4's DZ+1 of 00 for the subscription *0*0 is {0000, 0010} = 00*0, not {000, 001}."""
        _check(dz)
        reg = self._cell(dz)  # halved at its midpoints (region() may end past the domain's top)
        starred = {k % self.d for k, c in enumerate(dz) if c == "*"}
        pos = len(dz)
        while pos < self.depth:
            i = pos % self.d
            if i not in starred:
                if box is None or not (box[i][0] <= reg[i][0] and reg[i][1] <= box[i][1]):
                    break
                starred.add(i)  # the box spans dimension i here: '*', and no split there later
            pos += 1  # those dimensions are not split again
        if pos >= self.depth:
            return [dz]
        i = pos % self.d
        dz = dz + "*" * (pos - len(dz))
        lo, hi = reg[i]
        mid = (lo + hi) / 2
        kids = [(dz + "0", _with(reg, i, lo, mid)), (dz + "1", _with(reg, i, mid, hi))]
        return [k for k, r in kids if box is None or _overlaps(self._closed(r), box)]


def coarser(dz: str) -> str:
    """DZ-1 of one expression (§5.1): the sub-space divided once less."""
    return dz.rstrip("*")[:-1].rstrip("*") if dz else dz


def covered(dz1: str, dz2: str) -> bool:
    """dz1 ≺ dz2: the sub-space of dz1 lies within that of dz2."""
    if "*" not in dz2:  # the common case, and a prefix test then
        return dz1.startswith(dz2)
    if len(dz2) > len(dz1):
        # dz2 may be longer only in trailing '*'s
        if dz2[len(dz1):].strip("*"):
            return False
        dz2 = dz2[:len(dz1)]
    for a, b in zip(dz1, dz2):
        if b != "*" and a != b:
            return False
    return True


def matches(code: str, dz: str) -> bool:
    """An event whose full-depth code is `code` falls in the sub-space of `dz`."""
    if "*" not in dz:
        return code.startswith(dz)
    for a, b in zip(code, dz):
        if b != "*" and a != b:
            return False
    return True


def overlaps(dz1: str, dz2: str) -> bool:
    """The two sub-spaces intersect. Without '*' one then covers the other (§3); with '*' not
    necessarily: *1 and 0 (d = 2) meet in 01 and neither covers the other."""
    return all(a == b or a == "*" or b == "*" for a, b in zip(dz1, dz2))


def apart(prefix1: str, prefix2: str) -> bool:
    """Whether every expression starting with prefix1 is disjoint from every one starting with
    prefix2: they differ at a position where both split (0 against 1), so no expression of one
    can nest in one of the other. A cheap test before comparing two peers' expressions pairwise."""
    return any(a != b and a != "*" and b != "*" for a, b in zip(prefix1, prefix2))


def minimal(dzs: Iterable[str]) -> list[str]:
    """The expressions no other one covers (duplicates and nested ones dropped), siblings kept
    apart: what a refinement leaves (a merge would undo it)."""
    out: list[str] = []
    for dz in sorted({d.rstrip("*") for d in dzs}, key=len):
        if not any(covered(dz, o) for o in out):
            out.append(dz)
    return sorted(out)


def merge(dzs: Iterable[str]) -> list[str]:
    """Algorithm 4 line 20: drop expressions covered by another and merge siblings (w0 + w1 into
    w, w0* + w1* into w**...) until nothing changes."""
    cur = {dz.rstrip("*") for dz in dzs}
    changed = True
    while changed:
        changed = False
        # Keep the expressions no other one covers. (Keeping each that none kept so far covers,
        # shortest first, missed a cover of the same length: 001 and 0*1, or 00 and *0, both
        # stayed when the set happened to list the covered one first.) Covering is a partial
        # order on these '*'-stripped strings, so every dropped one lies in a kept one.
        out = {dz for dz in cur if not any(o != dz and covered(dz, o) for o in cur)}
        for dz in sorted(out, key=len, reverse=True):
            if dz and dz[-1] in "01" and dz in out:
                sib = dz[:-1] + ("1" if dz[-1] == "0" else "0")
                if sib in out:
                    out -= {dz, sib}
                    out.add(dz[:-1].rstrip("*"))
                    changed = True
        cur = out
    return sorted(cur)


def _check(dz: str) -> None:
    if not isinstance(dz, str) or dz.strip("01*"):
        raise ValueError(f"a dz-expression is a string of '0', '1' and '*', not {dz!r}")


def _bits(dim: Dimension) -> int:
    if dim.integer:
        return max(1, math.ceil(math.log2(dim.hi - dim.lo)))
    return 16


def _half_open(dim: Dimension, r: Any) -> tuple[float, float]:
    """(lo, hi) both included, or an Interval, as a half-open range on this dimension."""
    if hasattr(r, "lo_closed"):  # an EventPy Interval: open or closed ends, maybe infinite
        lo, hi = float(r.lo), float(r.hi)
        if dim.integer:  # the integers it admits, [first, last + 1)
            if math.isfinite(lo):
                lo = math.ceil(lo) if r.lo_closed else math.floor(lo) + 1
            if math.isfinite(hi):
                hi = (math.floor(hi) if r.hi_closed else math.ceil(hi) - 1) + 1
            return lo, hi
        return lo if r.lo_closed else math.nextafter(lo, math.inf), \
            (math.nextafter(hi, math.inf) if r.hi_closed else hi)
    try:
        lo, hi = r
    except (TypeError, ValueError):
        raise TypeError(f"dimension {dim.name!r}: a range is (lo, hi) with both ends included or an "
                        f"Interval, not {r!r}") from None
    lo, hi = float(lo), float(hi)
    if dim.integer:
        return math.ceil(lo), math.floor(hi) + 1
    return lo, math.nextafter(hi, math.inf)


def _empty(box: Box) -> bool:
    return any(lo >= hi for lo, hi in box)


def _inside(reg: Box, box: Box) -> bool:
    return all(blo <= lo and hi <= bhi for (lo, hi), (blo, bhi) in zip(reg, box))


def _overlaps(a: Box, b: Box) -> bool:
    return all(alo < bhi and blo < ahi for (alo, ahi), (blo, bhi) in zip(a, b))


def _with(reg: Box, i: int, lo: float, hi: float) -> Box:
    return reg[:i] + ((lo, hi),) + reg[i + 1:]


def meet(a: Box, b: Box) -> Box | None:
    """The intersection of two boxes, None if empty."""
    out = tuple((max(alo, blo), min(ahi, bhi)) for (alo, ahi), (blo, bhi) in zip(a, b))
    return None if any(lo >= hi for lo, hi in out) else out


def box_contains(box: Box, point: Sequence[float]) -> bool:
    return all(lo <= v < hi for (lo, hi), v in zip(box, point))


__all__ = ["Box", "Dimension", "Space", "apart", "box_contains", "coarser", "covered", "matches",
           "meet", "merge", "minimal", "overlaps"]
