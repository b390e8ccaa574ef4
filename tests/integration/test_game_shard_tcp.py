"""A small multiplayer game (game/world.epy) on the real overlay, as the README starts it: the
game host holds the players on b2 and runs the game loop; a shard process on b0 publishes
explosions and chat. Players join and leave every round, a loop thread moves them while events
flow, and the match ends with every player closed. Each round, once the moves are confirmed,
every player got exactly the events its guard admits with its position, view and channels of
that round (the oracle), and after the match the host's node and every broker hold nothing
of the players."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time

import eventpy

from ._procs import ROOT

GAME = ROOT / "tests" / "integration" / "game"
sys.path.insert(0, str(GAME))
import world  # noqa: E402  (compiled by the import hook)

sys.path.remove(str(GAME))


class _Shard:
    def __init__(self, overlay) -> None:
        env = {**overlay.env, "PYTHONPATH": f"{GAME}:{ROOT}", "EVENTPY_BROKER": f"tcp://127.0.0.1:{overlay.port}"}
        self.proc = subprocess.Popen([sys.executable, str(GAME / "shard.py")], cwd=overlay.dir, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.read() == "ready"

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the shard ended: {self.proc.stderr.read()}")
        return json.loads(line)

    def __call__(self, kind, items):
        self.proc.stdin.write(json.dumps([kind, items]) + "\n")
        self.proc.stdin.flush()
        assert self.read() == "done"

    def close(self) -> str:
        self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read()


def _owed(p, booms, chats):
    want = [("explode", x, y, r) for x, y, r in booms if abs(x - p.x) < r + p.view and abs(y - p.y) < r + p.view]
    return want + [("chat", c, t) for c, t in chats if c in p.channels]


def _broker_subscriptions(overlay) -> dict[str, int]:
    counts = {}
    for f in overlay.run_dir.glob("*.status.json"):
        try:
            status = json.loads(f.read_text())
        except (OSError, ValueError):  # being rewritten
            return {}
        counts[status["name"]] = sum(t["subscriptions"] for t in status["types"].values())
    return counts


def test_players_get_what_their_guards_admit_through_churn_and_a_moving_loop(overlay):
    node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}")
    eventpy.set_default_node(node)
    shard = _Shard(overlay)
    rng = random.Random(7)
    players: dict[int, world.Player] = {}
    made = 0
    problems = []
    try:
        baseline_queues = len(node._local.queues)
        for rnd in range(6):
            for k in rng.sample(sorted(players), min(len(players), 12)):  # some leave
                players.pop(k).close()
            for _ in range(15):  # some join: one in five an NPC
                made += 1
                x, y = rng.uniform(0, 60), rng.uniform(0, 60)
                players[made] = (world.Npc(f"n{made}", x, y, []) if made % 5 == 0 else
                                 world.Player(f"p{made}", x, y, rng.uniform(2, 12), rng.choice("rb"), []))
            # the game loop moves everyone from its own thread while the shard's events flow
            stop = threading.Event()

            def loop():
                while not stop.is_set():
                    for p in list(players.values()):
                        p.x += rng.uniform(-1, 1)
                        p.y += rng.uniform(-1, 1)

            mover = threading.Thread(target=loop)
            mover.start()
            shard("moved", [["shard", rng.uniform(0, 60), rng.uniform(0, 60)] for _ in range(30)])
            stop.set()
            mover.join(30)
            for p in players.values():
                if rng.random() < 0.3:
                    p.channels.add(rng.choice(["c1", "c2"]))
            node.confirm(10.0)  # the round's positions and channels are in force at every broker
            booms = [[rng.uniform(0, 60), rng.uniform(0, 60), rng.uniform(0, 4)] for _ in range(15)]
            chats = [[rng.choice(["global", "c1", "c2", "team-r"]), f"m{rnd}-{i}"] for i in range(6)]
            for p in players.values():
                p.log.clear()
            shard("boom", booms)
            shard("chat", chats)  # the shard's drain returns once our event methods have run
            for p in players.values():
                got = sorted(e[:4] if e[0] == "explode" else e[:3] for e in p.log)
                if got != sorted(_owed(p, booms, chats)):
                    problems.append((rnd, p.name, got, sorted(_owed(p, booms, chats))))
        assert not problems, problems[:3]
        for p in players.values():  # the match ends
            p.close()
        eventpy.drain(timeout=10.0)
        assert len(node._local.queues) == baseline_queues
        assert not node._local.core.subs
        deadline = time.monotonic() + 20  # status files are written every second
        while _broker_subscriptions(overlay) != {"b0": 0, "b1": 0, "b2": 0} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _broker_subscriptions(overlay) == {"b0": 0, "b1": 0, "b2": 0}
    finally:
        err = shard.close()
        eventpy.shutdown()
    assert "Traceback" not in err, err
