"""A game's areas of interest across an overlay: how many events leave the world's broker, and
what a player's SUB and a player's move cost the broker holding it.

    PYTHONPATH=. .venv/bin/python tools/bench/area_of_interest.py [--players N] [--events N]

Players at the far end of a line of 3 brokers subscribe to a box around them,
`abs(x - px) < view and abs(py - y) <= view` (view 5, a 100 x 100 map); the world publishes at
the other end, and every player moves (one UPD of px and py) between rounds. The baseline, in the
same run: the same box written so that no broker can narrow it (`(x - px) * (x - px) < view *
view ...`, squares: an attribute expression left to the exact check, as every attribute
expression was before the brokers learnt to bound one attribute). Both deliver the same events
(checked); what differs is how many events cross the overlay. Deterministic (the simulator, a
seed); the per-message costs are CPU time of one process on a shared machine (medians of 5).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from eventpy.guards import compile_guard
from eventpy.runtime.broker import Broker
from eventpy.runtime.broker._state import SubState
from eventpy.runtime.messages import Adv, Sub, Upd
from eventpy.runtime.model import EventType
from eventpy.runtime.overlay import line
from eventpy.runtime.transports.inproc import Simulation
from eventpy.runtime.wire import FrameDecoder, encode

Move = EventType("game.Move", x=float, y=float)
BOX = "abs(x - px) < view and abs(py - y) <= view"
SQUARES = "(x - px) * (x - px) < view * view and (py - y) * (py - y) <= view * view"


def crossing(guard: str, summary: str, players: int, events: int, seed: int = 5) -> tuple[int, int, list]:
    """(events that left the world's broker, events published, what each player got)."""
    rng = random.Random(seed)
    sim = Simulation(line(3), link_delay=0.005, summary=summary)
    world = sim.client("world", "b0")
    world.advertise(Move)
    sim.run()
    host = sim.client("host", "b2")
    got: list[list] = [[] for _ in range(players)]
    subs = [host.subscribe(Move, guard, {"px": rng.uniform(0, 100), "py": rng.uniform(0, 100), "view": 5.0},
                           on_event=lambda e, i=i: got[i].append(e._meta[:2])) for i in range(players)]
    sim.run()
    rounds = 4
    for _ in range(rounds):
        for _ in range(events // rounds):
            world.publish(Move, x=rng.uniform(0, 100), y=rng.uniform(0, 100))
        sim.run()
        for s in subs:
            s.update(px=rng.uniform(0, 100), py=rng.uniform(0, 100))
        sim.run()
    return sim.brokers["b0"].stats["pub_forwarded"], events // rounds * rounds, [sorted(g) for g in got]


def sub_cost(guard: str, repeats: int = 5, n: int = 500) -> float:
    """CPU microseconds to build the broker's state of one player's SUB (decoded from the wire)."""
    plan = compile_guard(guard, Move, {"px": float, "py": float, "view": float})
    (msg,) = FrameDecoder().feed(encode(Sub(Move.name, 1, plan.spec, plan.evaluate({"px": 1.0, "py": 2.0, "view": 5.0}))))
    runs = []
    for _ in range(repeats):
        t = time.process_time()
        for sid in range(n):
            SubState("c", sid, Move, msg.spec, msg.values)
        runs.append((time.process_time() - t) / n * 1e6)
    return statistics.median(runs)


def move_cost(guard: str, players: int = 200, moves: int = 1200, repeats: int = 5, seed: int = 1) -> float:
    """CPU microseconds for the broker holding `players` boxes of one client (the game host, with
    a broker upstream) to apply one move: an UPD of px (median of `repeats` runs of `moves`)."""
    rng = random.Random(seed)
    plan = compile_guard(guard, Move, {"px": float, "py": float, "view": float})
    b = Broker("edge")
    b.connect("up", "broker")
    b.handle("up", Adv(Move.name, Move.to_wire()))
    b.connect("host", "client")
    b.handle("host", Adv(Move.name, Move.to_wire(), False))
    for sid in range(1, players + 1):
        values = plan.evaluate({"px": rng.uniform(0, 100), "py": rng.uniform(0, 100), "view": 5.0})
        b.handle("host", Sub(Move.name, sid, plan.spec, values))
    (px,) = plan.by_param["px"]  # the variable the UPD of px changes
    seqs: dict[int, int] = {}
    runs = []
    for _ in range(repeats):
        batch = []
        for _ in range(moves):
            sid = rng.randint(1, players)
            seqs[sid] = seqs.get(sid, 0) + 1
            batch.append(Upd(Move.name, sid, {px: (rng.uniform(0, 100), seqs[sid])}))
        t = time.process_time()
        for msg in batch:
            b.handle("host", msg)
        runs.append((time.process_time() - t) / moves * 1e6)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--players", type=int, default=5)
    ap.add_argument("--events", type=int, default=1200)
    args = ap.parse_args()
    print(f"{args.players} players (boxes of 10 x 10 on 100 x 100), {args.events} events, line of 3 brokers")
    print(f"{'summary':10} {'guard':8} {'events leaving b0':>18} {'share':>7}")
    for summary in ("poset", "attribute"):
        base_fw, total, base_got = crossing(SQUARES, summary, args.players, args.events)
        box_fw, _, box_got = crossing(BOX, summary, args.players, args.events)
        if box_got != base_got:
            raise SystemExit(f"FAIL: the box and the squares delivered differently ({summary} summary)")
        for name, fw in (("squares", base_fw), ("box", box_fw)):
            print(f"{summary:10} {name:8} {fw:18,} {fw / total:7.1%}")
        print(f"{summary:10} box / squares: {box_fw / base_fw:.3f} (same deliveries: checked)")
    print(f"a player's SUB at the broker: {sub_cost(BOX):.1f} us CPU (the second and later players of a guard)")
    print(f"a player's move at the broker holding 200 players of one host: box {move_cost(BOX):.1f} us CPU, "
          f"squares {move_cost(SQUARES):.1f} us (not indexed: nothing to move but the value)")


if __name__ == "__main__":
    main()
