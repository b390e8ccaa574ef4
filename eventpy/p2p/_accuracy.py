"""Algorithm 3 and §5.1 of paper 004: how accurate a peer's peer-level subscription is.

A peer that finds an expression uncovered for a timeout coarsens it (DZ-1) if the false positives
it would add stay within its bandwidth budget; a peer whose measured false positives exceed the
budget refines the expression that let most of them through (DZ+1) and lets go of the children its
new subscription no longer covers. Event rates of sub-spaces come from the peer's own counts, from
what peers in its view measured (the aggregation of §5.1, carried by the gossip descriptors), or by
volume from the overall rate. A mixin of `_peer.Peer`, whose state it reads.
"""

from __future__ import annotations

from ._messages import DISCONNECT
from ._space import coarser, covered, meet, merge, minimal

MAX_REFINE = 8  # refinements a peer makes in one cycle


class Accuracy:
    def estimate(self, dz: str, total_rate: float) -> float:
        """Events per cycle in a sub-space: our own count if we subscribe to it, else what a
        peer in our view measured for it (the aggregation of §5.1 over the gossip protocol's
        messages), else its share of the whole space's rate by volume."""
        for mine, rate in self.rates():
            if mine == dz:
                return rate
        for d, _ in list(self.view.values()):
            for other, rate in d.rates:
                if other == dz:
                    return rate
        return total_rate * self.space.volume(dz)

    def user_rate(self, dz: str, total_rate: float) -> float:
        """Events per cycle of a sub-space that the user-level subscription wants (by volume)."""
        region = self.space.region(dz)
        inter = meet(region, self.user)
        if inter is None:
            return 0.0
        share = 1.0
        for (lo, hi), (rlo, rhi) in zip(inter, region):
            share *= (hi - lo) / (rhi - rlo)
        return self.estimate(dz, total_rate) * share

    def coarsen(self, dz: str, out: list) -> bool:
        """Algorithm 3 lines 1-3: dz found no parent within the timeout; take its coarser
        sub-space (DZ-1) if the false positives it adds stay within the bandwidth budget."""
        up = coarser(dz)
        if up == dz:
            return False
        new = merge([d for d in self.dz if not covered(d, up)] + [up])
        total = self.total_rate
        fp = sum(self.estimate(d, total) - self.user_rate(d, total) for d in new)
        if fp > self.fp_budget * total + 1e-12:
            self.uncovered_since[dz] = self.now  # try again after another timeout
            return False
        self.remap(new, out)
        return True

    def refine(self, out: list) -> bool:
        """Algorithm 3 lines 4-6: the false positives exceed the budget; replace the expression
        that brought the most of them by its finer sub-spaces that the user box reaches (DZ+1)."""
        fps: dict[str, int] = {}
        for _, _, by in self.window:
            for dz, c in by.items():
                if dz.startswith("fp:"):
                    fps[dz[3:]] = fps.get(dz[3:], 0) + c
        for dz in sorted(fps, key=lambda d: -fps[d]):
            if dz not in self.fin:
                continue
            kids = self.space.finer(dz, self.user)
            if kids == [dz]:
                continue
            self.remap(minimal([d for d in self.dz if d != dz] + kids), out, keep_parent_of={k: dz for k in kids})
            # what the refined expression let through is gone: the next refinement (next cycle,
            # if the rest still exceeds the budget) looks at the others and at its parts
            for i, (n, f, by) in enumerate(self.window):
                gone = by.get("fp:" + dz, 0)
                self.window[i] = (n, f - gone, {k: v for k, v in by.items() if k not in (dz, "fp:" + dz)})
            return True
        return False

    def remap(self, new: list[str], out: list, keep_parent_of: dict[str, str] | None = None) -> None:
        """Change the peer-level subscription: expressions that went away lose their parents;
        the parts of a refined expression keep its parents, which cover them (each is asked for
        its part before the old entry is dropped, so that no event falls between: a child adding
        an entry takes no new place, so a parent that covered the whole accepts the part);
        children our new subscription no longer covers are let go (Algorithm 3 line 6)."""
        old = self.fin
        self.fin = {}
        for dz in new:
            if dz in old:
                self.fin[dz] = old.pop(dz)
            else:
                self.fin[dz] = set()
        for kid, was in (keep_parent_of or {}).items():
            for q in old.get(was, ()):
                self.fin[kid].add(q)
                self.ask(q, kid, out)
        for dz, parents in old.items():
            for q in parents:
                out.append((DISCONNECT, self.id, q, (dz, "child")))
            self.pending.pop(dz, None)
            self.uncovered_since.pop(dz, None)
        self.fin_pub &= self.parents()
        self.dz = list(new)
        for child, entries in list(self.fout.items()):
            for cdz in list(entries):
                if not any(covered(cdz, a) for a in self.dz):
                    del entries[cdz]
                    out.append((DISCONNECT, self.id, child, (cdz, "parent")))
            if not entries:
                del self.fout[child]

    def end_cycle(self, now: int, out: list, window: int) -> None:
        """Close this cycle's counters; Algorithm 3 line 4: bandwidth violated -> refine."""
        self.window.append(tuple(self.cur))
        self.cur = [0, 0, {}]
        if len(self.window) > window:
            self.window.pop(0)
        if self.publisher or len(self.window) < window:
            return
        # line 5, "accordingly": refine the expressions that let most false positives through
        # until what the others let through fits the budget (each refinement takes its share out
        # of the window), a few per cycle; one per cycle left a peer with dozens of expressions
        # at 2.5 times its budget 40 cycles on
        for _ in range(MAX_REFINE):
            fp = sum(w[1] for w in self.window) / len(self.window)
            if fp <= self.fp_budget * self.total_rate + 1e-12 or not self.refine(out):
                break

