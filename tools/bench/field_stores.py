"""Client-side cost of a game's guard-field stores, in instructions (valgrind --tool=callgrind).

    PYTHONPATH=. .venv/bin/python tools/bench/field_stores.py [--ticks 20] [--players 200] [--json]
    PYTHONPATH=. .venv/bin/python tools/bench/field_stores.py --run FORM --ticks N   # one run, no valgrind

A game of `--players` players, each an object of an .epy class with one event method whose guard
reads its position (`when abs(x - self.x) < self.view and abs(y - self.y) < self.view`), moves
every player every tick, in one of these forms:

    outside   the game loop stores `p.x = ...; p.y = ...`   (GuardField.__set__ only)
    separate  a method stores `self.x = ...; self.y = ...`  (each in its own `assigning`)
    tuple     a method stores `self.x, self.y = ...`        (one `assigning`, one UPD)
    plain     the `separate` method on a plain Python class: the baseline

Each form runs under callgrind twice, with N ticks and with 0 ticks (the same start-up: import,
compile, node, subscriptions); the difference over N * players is the instructions of one move
(two field stores). Only the storing (main) thread is counted (--separate-threads=yes): the
broker's thread, which the overlay wakes, is the broker side, measured elsewhere. The ratio is
each form's count over the plain class's, measured in the same run: a machine (or a Python) that
runs everything faster changes both. Instruction counts do not depend on the machine's load.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

FORMS = ("plain", "outside", "separate", "tuple")

GAME = '''
class Player:
    def __init__(self, x: float, y: float):
        self.view = 10.0
        self.x = x
        self.y = y

    event def seen(self, x: float, y: float) when abs(x - self.x) < self.view and abs(y - self.y) < self.view:
        pass

    def step(self, dx: float, dy: float):
        self.x = self.x + dx
        self.y = self.y + dy

    def step_tuple(self, dx: float, dy: float):
        self.x, self.y = self.x + dx, self.y + dy
'''


class PlainPlayer:
    """The baseline: the same stores on a plain Python object."""

    def __init__(self, x: float, y: float) -> None:
        self.view = 10.0
        self.x = x
        self.y = y

    def step(self, dx: float, dy: float) -> None:
        self.x = self.x + dx
        self.y = self.y + dy


def run(form: str, ticks: int, players: int) -> None:
    """Make the players, move every one `ticks` times; check the guards got the last move."""
    import eventpy
    from eventpy.compiler import compile_source
    from eventpy.runtime.lang import subscriptions_of

    ns: dict = {}
    exec(compile(compile_source(GAME, "<field_stores>", "field_stores_game"), "<field_stores>", "exec"), ns)
    cls = PlainPlayer if form == "plain" else ns["Player"]
    ps = [cls(float(i), float(-i)) for i in range(players)]
    for t in range(ticks):
        d = 1.0 if t % 2 == 0 else -0.5  # every tick moves every player (no store of a held value)
        if form == "outside":
            for p in ps:
                p.x = p.x + d
                p.y = p.y + d
        elif form == "tuple":
            for p in ps:
                p.step_tuple(d, d)
        else:
            for p in ps:
                p.step(d, d)
    if form != "plain":
        for p in ps:
            (sub,) = subscriptions_of(p)
            if (sub.params["x"], sub.params["y"]) != (p.x, p.y):
                raise AssertionError(f"{form}: the guard holds {sub.params}, the player is at {(p.x, p.y)}")
        eventpy.drain(30.0)


def main_thread_instructions(form: str, ticks: int, players: int) -> int:
    """Ir of the storing thread of one run under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
               sys.executable, __file__, "--run", form, "--ticks", str(ticks), "--players", str(players)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        main = out + "-01"  # thread 1: the one that runs the game loop
        text = Path(main).read_text()
        m = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
        if m is None:
            raise RuntimeError(f"no summary in {main}")
        return int(m.group(1))


def main() -> int:
    p = C.parser(__doc__.split("\n\n")[0])
    p.add_argument("--ticks", type=int, default=20)
    p.add_argument("--players", type=int, default=200)
    p.add_argument("--run", choices=FORMS, help="run one form once, without valgrind (what callgrind runs)")
    args = p.parse_args()
    if args.run:
        run(args.run, args.ticks, args.players)
        return 0
    rows, per_move = [], {}
    for form in FORMS:
        C.note(f"[{form}] callgrind, {args.ticks} ticks and 0 ticks ...")
        full = main_thread_instructions(form, args.ticks, args.players)
        empty = main_thread_instructions(form, 0, args.players)
        per_move[form] = (full - empty) / (args.ticks * args.players)
    for form in FORMS:
        ratio = per_move[form] / per_move["plain"]
        rows.append((form, f"{per_move[form]:,.0f}", f"{ratio:.1f}x"))
        if args.json:
            C.emit_json({"bench": "field_stores", "form": form, "players": args.players, "ticks": args.ticks,
                         "instructions_per_move": round(per_move[form]), "ratio_to_plain": round(ratio, 2)})
    if not args.json:
        C.print_table(f"field stores: instructions per move (two fields) of {args.players} players, "
                      f"{args.ticks} ticks, storing thread", [("form", "left"), ("instr/move", "right"),
                                                             ("vs plain", "right")], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
