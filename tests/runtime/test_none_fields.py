"""A game developer's first try at a player that has not spawned yet: its position is None. The
guard cannot take None (a position it compares); the error says so from the program's line, as
before, and now also says what to write instead (a switch field, or a value the guard rejects)."""

from __future__ import annotations

import pytest

import eventpy
from eventpy.compiler import compile_source

SRC = '''
class Player:
    def __init__(self, x):
        self.x = x
        self.spawned = x is not None

    event def boom(self, bx: float) when self.spawned and abs(bx - self.x) < 3.0:
        pass
'''


def _player_class(module: str):
    ns: dict = {"__name__": module}
    exec(compile(compile_source(SRC, f"{module}.epy"), f"{module}.epy", "exec"), ns)
    return ns["Player"]


def test_none_before_spawning_is_refused_with_what_to_write_instead():
    eventpy.shutdown()
    Player = _player_class("none_fields")
    try:
        with pytest.raises(TypeError) as made:
            Player(None)
        assert "the guard reads self.x, which is None" in str(made.value)
        assert "switch field" in str(made.value) and "self.spawned and" in str(made.value)
        p = Player(1.0)
        with pytest.raises(TypeError) as stored:
            p.x = None  # the player died
        assert "Player.x = None refused" in str(stored.value) and "switch field" in str(stored.value)
        assert p.x == 1.0
        with pytest.raises(TypeError) as wrong:
            p.x = "1"  # no hint where None is not the mistake
        assert "switch field" not in str(wrong.value)
    finally:
        eventpy.shutdown()
