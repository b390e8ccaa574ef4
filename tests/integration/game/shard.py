"""The shard: a second game process on the real overlay. It reads one JSON command a line and
answers one JSON line: ["boom", [[x, y, r], ...]] publishes explosions, ["chat", [[channel, text],
...]] chat lines, then drains (so every player's event method has run when it answers)."""

import json
import sys

import eventpy
import world

node = eventpy.default_node()
node.advertise(world.Player.explode)
node.advertise(world.Player.chat)
node.advertise(world.Player.moved)
eventpy.drain(timeout=10.0)
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    kind, items = json.loads(line)
    for item in items:
        if kind == "boom":
            world.Player.explode(*item)
        elif kind == "chat":
            world.Player.chat(*item)
        elif kind == "moved":
            world.Player.moved(*item)
    eventpy.drain(timeout=20.0)
    print(json.dumps("done"), flush=True)
