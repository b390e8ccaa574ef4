"""A trading desk written as a user would (trading/bands.epy): band monitors per firm, a subclass
with its own guard and a class-level default, a watchlist and a switch, whose fields change from
the program, from another thread and from event methods while quotes flow and monitors come and
go. What each monitor gets is checked against a centralized oracle (trading/desk.py): on the
embedded overlay here, across processes on the TCP overlay in test_trading_desk_tcp.py."""

from __future__ import annotations

import importlib
import sys
import threading

import pytest

import eventpy

from ._procs import ROOT

TRADING = ROOT / "tests" / "integration" / "trading"


@pytest.fixture
def desk_modules(fresh_overlay, monkeypatch):
    monkeypatch.syspath_prepend(str(TRADING))

    for name in ("bands", "desk"):
        sys.modules.pop(name, None)
    bands, desk = importlib.import_module("bands"), importlib.import_module("desk")
    yield bands, desk
    for name in ("bands", "desk"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("confirm", [True, False])
@pytest.mark.parametrize("seed", [1, 2])
def test_each_monitor_gets_what_its_guard_admits_on_the_embedded_overlay(desk_modules, seed, confirm):
    bands, desk = desk_modules
    objects: dict = {}

    def sub(op, *args):
        if op == "set" and args[1] == "margin":  # a trader's thread moves the margin
            t = threading.Thread(target=desk.handle, args=(bands, objects, op, *args))
            t.start()
            t.join()
            return "ok"
        return desk.handle(bands, objects, op, *args)

    problems = desk.run(sub, lambda *cmd: desk.publish(bands, *cmd), rounds=25, seed=seed, confirm=confirm)
    assert problems == []
    assert eventpy.stats()["delivered"] > 100  # the oracle was not satisfied by silence
