"""The runs behind tools/bench/p2p.py: one setup of the broker-less overlay (paper 004 §6), the
sizes of the full and quick benches, and the four kinds of run (construction, churn, in-degree,
Figure 6's satisfaction), each returning plain data so that it can run in a worker process."""

from __future__ import annotations

import itertools
import math
import random
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from eventpy.p2p import _workload as W  # noqa: E402
from eventpy.p2p._network import Network  # noqa: E402
from eventpy.p2p._space import Space  # noqa: E402


@dataclass(frozen=True)
class Setup:
    n: int  # subscribers
    m: int  # out-degree constraint of every peer (publishers too)
    workload: str = "W1"  # W1: uniform subscriptions and events; W2: both around the same hot spots
    delays: tuple[int, int] = (3, 8)  # Δ uniform in [lo, hi] hops
    fp: float = 1.0  # allowed false positives, a share of the overall event rate
    r: int = 4  # dz-expressions of a new subscriber's first mapping (§5.1)
    dims: int = 4
    publishers: int = 3  # each advertises the whole space (unless parts)
    parts: int = 0  # if > 0: 2**parts publishers instead, each advertising one part of the space
    events: int = 25  # published per cycle, by a random publisher
    width: tuple[float, float] = (0.05, 0.5)  # a subscription's side, a share of its domain


def log2m(n: int) -> int:
    """004 §6: m = log2(n)."""
    return max(2, round(math.log2(n)))


class Sim:
    """One simulated overlay of 004 §6: the network, its publishers, and the workload's draws."""

    def __init__(self, s: Setup, seed: int) -> None:
        self.s = s
        self.space = Space.uniform(s.dims)
        self.rng = random.Random(seed)
        self.hot = W.Hotspots.draw(self.space, self.rng) if s.workload == "W2" else None
        self.net = Network(self.space, seed=seed, gossip=8, view_fraction=0.05, timeout=10, window=10)
        if s.parts:  # the sub-spaces of the first `parts` splits: an eighth each for parts = 3
            self.pubs = [self.net.add_publisher(self.space.region("".join(bits)), out_degree=s.m)
                         for bits in itertools.product("01", repeat=s.parts)]
        else:
            self.pubs = [self.net.add_publisher(out_degree=s.m) for _ in range(s.publishers)]
        for _ in range(s.n):
            self.join()

    def join(self) -> int:
        s = self.s
        box = W.subscription(self.space, self.rng, hot=self.hot, width=s.width)
        return self.net.add_subscriber(box, delay=self.rng.randint(*s.delays), out_degree=s.m, r=s.r,
                                       fp_budget=s.fp)

    def step(self) -> None:
        rng, hot, space = self.rng, self.hot, self.space
        events = [W.event(space, rng, hot) for _ in range(self.s.events)]
        if self.s.parts:  # each event from the publisher whose part holds it
            self.net.step([(self.pubs[int(space.code(e)[:self.s.parts], 2)], e) for e in events])
        else:
            self.net.step([(rng.choice(self.pubs), e) for e in events])

    def churn(self, k: int) -> None:
        """k online subscribers leave (fail) and k new ones, with fresh subscriptions and delays, join."""
        subs = sorted(p.id for p in self.net.subscribers)
        for pid in self.rng.sample(subs, min(k, len(subs))):
            self.net.remove(pid)
        for _ in range(k):
            self.join()

    @property
    def cycle(self) -> int:
        return self.net.now

    def converged(self) -> float:
        return self.net.converged()

    def notified(self, sample: int | None) -> float:
        return self.net.notified(sample=sample)  # samples with its own generator: the run is unchanged

    def fp_counts(self) -> dict[int, int]:
        return {p.id: p.false_positives for p in self.net.subscribers}

    def fp_share(self, before: dict[int, int], cycles: int) -> float:
        """False positives a subscriber received per cycle since `before`, as a share of the overall
        event rate (the unit of 004 Figure 6), averaged over the subscribers online throughout."""
        now = self.fp_counts()
        both = [pid for pid in now if pid in before]
        if not both or cycles <= 0:
            return float("nan")
        return statistics.mean(now[p] - before[p] for p in both) / (cycles * self.s.events)


def first_at(series: list[tuple[int, float]], level: float) -> int | None:
    """The first cycle whose value reaches `level` (None: never in the run)."""
    return next((c for c, v in series if v >= level), None)


# --- experiments (each runs in a worker process; returns plain data) --------------------------------
def construction(s: Setup, seed: int, cycles: int, every: int, sample: int, level: float,
                 stop: bool = False) -> dict:
    """Figure 5 (a)-(c), (h): converged every cycle, notified every `every` cycles (a sample); the
    construction time is the first probe with `level` of the sample notified. With `stop`, the run
    ends there (scalability); else it runs all `cycles`."""
    t = C.perf()
    sim = Sim(s, seed)
    series, conv_series = [], []
    built = None
    connects = None
    for c in range(1, cycles + 1):
        sim.step()
        conv = sim.converged()
        conv_series.append((c, conv))
        if c % every == 0:
            nt = sim.notified(sample)
            series.append((c, conv, nt))
            if built is None and nt >= level:
                built = c
                connects = sorted(p.connects for p in sim.net.subscribers)
                if stop:
                    break
    if connects is None:  # never built: the requests sent in the whole run
        connects = sorted(p.connects for p in sim.net.subscribers)
    st = sim.net.stats()
    return {"setup": s, "series": series, "converged_at": first_at(conv_series, level), "built": built,
            "cycles": sim.cycle, "connects": connects, "in_degree": st["in_degree"], "dz": st["dz_per_peer"],
            "messages": st["messages"], "wall": C.perf() - t}


def churn(s: Setup, seed: int, warm: int, levels: list[float], cycles: int, massive: bool, every: int,
          sample: int) -> dict:
    """Figure 5 (d)-(g). One warm-up (construction), then for each level a copy of the warmed
    overlay: continuous churn (level x n subscribers leave and as many join every cycle, for
    `cycles` cycles) or massive churn (level x n leave and join at once, then `cycles` quiet
    cycles)."""
    import copy

    t = C.perf()
    sim = Sim(s, seed)
    for _ in range(warm):
        sim.step()
    warm_conv, warm_nt = sim.converged(), sim.notified(sample)
    out = []
    for level in levels:
        run = copy.deepcopy(sim)
        k = round(level * s.n)
        conv, nts = [], []
        if massive:
            run.churn(k)
        for c in range(1, cycles + 1):
            if not massive and k:
                run.churn(k)
            run.step()
            conv.append((c, run.converged()))
            if c % every == 0:
                nts.append((c, run.notified(sample)))
        out.append({"level": level, "k": k, "converged": conv, "notified": nts})
    return {"setup": s, "warm": warm, "warm_converged": warm_conv, "warm_notified": warm_nt, "runs": out,
            "massive": massive, "wall": C.perf() - t}


def indegree(s: Setup, seed: int, cycles: int, every: int, sample: int) -> dict:
    """Figure 5 (i): the average in-degree against the average number of dz-expressions per peer."""
    t = C.perf()
    sim = Sim(s, seed)
    dz0 = statistics.mean(len(p.dz) for p in sim.net.subscribers)
    nts = []
    for c in range(1, cycles + 1):
        sim.step()
        if c % every == 0 and c > cycles - 3 * every:
            nts.append(sim.notified(sample))
    st = sim.net.stats()
    return {"setup": s, "dz_initial": dz0, "dz": st["dz_per_peer"], "in_degree": st["in_degree"],
            "converged": sim.converged(), "notified": statistics.mean(nts), "wall": C.perf() - t}


def satisfaction(s: Setup, seed: int, cycles: int, tail: int, every: int) -> dict:
    """Figure 6: after `cycles - tail` cycles, the notified share (all subscribers, every `every`
    cycles of the tail, averaged) and the false positives received in the tail as a share of the
    overall event rate."""
    t = C.perf()
    sim = Sim(s, seed)
    before, nts, convs = None, [], []
    for c in range(1, cycles + 1):
        if c == cycles - tail + 1:
            before = sim.fp_counts()
        sim.step()
        if c > cycles - tail and c % every == 0:
            nts.append(sim.notified(None))
            convs.append(sim.converged())
    st = sim.net.stats()
    return {"setup": s, "notified": statistics.mean(nts), "notified_min": min(nts), "notified_max": max(nts),
            "converged": statistics.mean(convs), "fp_actual": sim.fp_share(before, tail),
            "dz": st["dz_per_peer"], "connects": st["connects_per_peer"], "wall": C.perf() - t}


# --- sizes --------------------------------------------------------------------------------------------
FULL = {
    "conv": {"n": 500, "cycles": 250, "every": 5, "sample": 100},
    "scale": {"ns": [125, 250, 500, 1000], "cycles": 300},
    "churn": {"n": 300, "warm": 200, "levels": [0.0, 0.01, 0.02, 0.03, 0.04, 0.05], "cycles": 100,
              "massive": [0.10, 0.25, 0.40], "recovery": 100},
    "indeg": {"n": 150, "rs": [4, 8, 16, 32], "cycles": 100},
    "fig6": {"n": 150, "ms": [6, 12], "fps": [0.0, 0.031, 0.062, 0.125, 0.25, 0.5], "cycles": 150, "tail": 50},
    "parts": {"parts": 3, "m": 6, "fps": [0.0, 0.031, 0.062, 0.125, 0.25, 0.5]},
}
QUICK = {
    "conv": {"n": 120, "cycles": 100, "every": 5, "sample": 60},
    "scale": {"ns": [60, 120], "cycles": 150},
    "churn": {"n": 100, "warm": 80, "levels": [0.0, 0.05], "cycles": 30, "massive": [0.25], "recovery": 30},
    "indeg": {"n": 60, "rs": [4, 16], "cycles": 40},
    "fig6": {"n": 60, "ms": [6, 12], "fps": [0.0, 0.062, 0.5], "cycles": 50, "tail": 20},
    "parts": {"parts": 2, "m": 6, "fps": [0.062]},
}
LEVEL = 0.9  # the share notified that marks the overlay as built (construction time)
S1, S2 = (3, 8), (2, 4)  # moderate and tight delay requirements, hops
FIG5_FP = 1.0  # Figure 5's runs: no bandwidth limit on coarsening ("delays such that convergence can be achieved")
FIG6_EVENTS = 50  # Figure 6 measures false positives against the event rate: more events, finer shares
EXPERIMENTS = ("conv", "scale", "churn", "indeg", "fig6", "parts")


def tasks(z: dict, seed: int, only: set[str]) -> list[tuple[str, tuple, object, tuple]]:
    """(experiment, key, function, arguments) of every run; the longest first (pool balance)."""
    out = []
    cv = z["conv"]
    if "conv" in only or "scale" in only:
        for wl in ("W1", "W2"):
            s = Setup(n=cv["n"], m=log2m(cv["n"]), workload=wl, fp=FIG5_FP)
            out.append(("conv", (wl,), construction, (s, seed, cv["cycles"], cv["every"], cv["sample"], LEVEL)))
    if "scale" in only:
        for n in z["scale"]["ns"]:
            if n == cv["n"]:
                continue  # the convergence runs are this size's (the same setup and seed)
            for wl in ("W1", "W2"):
                s = Setup(n=n, m=log2m(n), workload=wl, fp=FIG5_FP)
                out.append(("scale", (wl, n), construction,
                            (s, seed, z["scale"]["cycles"], cv["every"], cv["sample"], LEVEL, True)))
    if "churn" in only:
        ch = z["churn"]
        for wl in ("W1", "W2"):
            s = Setup(n=ch["n"], m=log2m(ch["n"]), workload=wl, fp=FIG5_FP)
            out.append(("churn", (wl, "continuous"), churn,
                        (s, seed, ch["warm"], ch["levels"], ch["cycles"], False, cv["every"], cv["sample"])))
            out.append(("churn", (wl, "massive"), churn,
                        (s, seed, ch["warm"], ch["massive"], ch["recovery"], True, cv["every"], cv["sample"])))
    if "indeg" in only:
        ig = z["indeg"]
        for r in ig["rs"]:
            s = Setup(n=ig["n"], m=log2m(ig["n"]), workload="W1", fp=FIG5_FP, r=r)
            out.append(("indeg", (r,), indegree, (s, seed, ig["cycles"], 10, cv["sample"])))
    if "fig6" in only:
        f6 = z["fig6"]
        for scen, delays in (("S1", S1), ("S2", S2)):
            for m in f6["ms"]:
                for fp in f6["fps"]:
                    s = Setup(n=f6["n"], m=m, delays=delays, fp=fp, events=FIG6_EVENTS)
                    out.append(("fig6", (scen, m, fp), satisfaction, (s, seed, f6["cycles"], f6["tail"], 10)))
    if "parts" in only:  # Figure 6's S1 with publishers that each advertise a part of the space
        f6, pz = z["fig6"], z["parts"]
        for fp in pz["fps"]:
            s = Setup(n=f6["n"], m=pz["m"], delays=S1, fp=fp, events=FIG6_EVENTS, parts=pz["parts"])
            out.append(("parts", (fp,), satisfaction, (s, seed, f6["cycles"], f6["tail"], 10)))
    # a rough cost: subscriber-cycles, the fp = 0 runs (endless refinement) and large r dearer
    def cost(t):
        exp, key, fn, a = t
        s = a[0]
        if exp == "churn":
            cycles = a[2] + len(a[3]) * a[4]
        elif exp == "scale":
            cycles = a[2] * 0.6  # stops once built
        elif exp == "indeg":
            cycles = a[2] * s.r / 4
        elif exp in ("fig6", "parts"):
            cycles = a[2] * (6 if s.fp == 0 else 1) * s.events / 25
        else:
            cycles = a[2]
        return s.n ** 1.3 * cycles
    return sorted(out, key=cost, reverse=True)


def run_all(todo, jobs: int) -> dict:
    results = {}
    if jobs <= 1:
        for exp, key, fn, a in todo:
            results[(exp, key)] = fn(*a)
            C.note(f"p2p.py: {exp} {key} done ({results[(exp, key)]['wall']:.1f} s)")
        return results
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(fn, *a): (exp, key) for exp, key, fn, a in todo}
        for f in as_completed(futs):
            exp, key = futs[f]
            results[(exp, key)] = f.result()
            C.note(f"p2p.py: {exp} {key} done ({results[(exp, key)]['wall']:.1f} s)")
    return results
