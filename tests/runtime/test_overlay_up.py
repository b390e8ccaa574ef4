"""`eventpy overlay up --port 0`: the launcher picks free ports itself (a test suite's overlays,
side by side on one machine), says where the brokers listen, and records it where `status` and
clients find it. It was refused: "ports 0..2 are not all between 1 and 65535"."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import tomllib

from eventpy.runtime import _overlay_up, launcher


def _eventpy(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eventpy", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def test_up_on_port_0_picks_free_ports_and_says_where_the_brokers_listen(tmp_path):
    run = tmp_path / "run"
    try:
        up = _eventpy("overlay", "up", "--brokers", "2", "--port", "0", "--run-dir", str(run), cwd=tmp_path)
        assert up.returncode == 0, up.stderr
        said = dict(re.findall(r"(b\d) on 127\.0\.0\.1:(\d+)", up.stdout))
        ports = {name: b["port"] for name, b in tomllib.loads((run / "overlay.toml").read_text())["brokers"].items()}
        assert {name: int(p) for name, p in said.items()} == ports, up.stdout
        assert ports["b1"] == ports["b0"] + 1 and ports["b0"] > 0
        for port in ports.values():  # they listen there
            socket.create_connection(("127.0.0.1", port), timeout=30).close()
        status = _eventpy("overlay", "status", "--run-dir", str(run), cwd=tmp_path)
        assert status.returncode == 0, status.stdout + status.stderr
        for port in ports.values():
            assert f"127.0.0.1:{port}" in status.stdout, status.stdout
    finally:
        _eventpy("overlay", "down", "--run-dir", str(run), cwd=tmp_path)


def test_a_picked_port_taken_before_the_broker_binds_it_makes_up_pick_another_block(tmp_path, monkeypatch, capsys):
    """Another run can take a port between the pick and the broker's bind: `up` stops what it
    started and picks again, instead of failing the caller's test."""
    run = tmp_path / "run"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        picks, real_pick = [], _overlay_up.free_port_block

        def pick(k: int) -> int:  # first the block holding the taken port, then a real pick
            picks.append(taken if not picks else real_pick(k))
            return picks[-1]

        checks = []

        def unavailable(brokers: dict) -> str:  # the check before starting finds it free: the race
            checks.append(brokers)
            return "" if len(checks) == 1 else real_unavailable(brokers)

        real_unavailable = _overlay_up._unavailable
        monkeypatch.setattr(_overlay_up, "free_port_block", pick)
        monkeypatch.setattr(_overlay_up, "_unavailable", unavailable)
        try:
            assert launcher.overlay_up(run, "line", 1, None, 0, None, None, None, timeout=60) == 0
            out = capsys.readouterr()
            assert len(picks) == 2 and picks[1] != taken, picks
            assert f"b0 on 127.0.0.1:{picks[1]}" in out.out and out.err == "", out
            assert tomllib.loads((run / "overlay.toml").read_text())["brokers"]["b0"]["port"] == picks[1]
            assert f"cannot listen on 127.0.0.1:{taken}" in (run / "b0.log").read_text()  # the first try's
        finally:
            launcher.overlay_down(run)


def test_port_0_where_no_block_is_free_says_so(tmp_path, monkeypatch, capsys):
    def none_free(k: int) -> int:
        raise RuntimeError(f"no {k} consecutive free ports on 127.0.0.1 between 17200 and 20000")

    monkeypatch.setattr(_overlay_up, "free_port_block", none_free)
    assert launcher.overlay_up(tmp_path / "run", "line", 2, None, 0, None, None, None) == 1
    assert capsys.readouterr().err == ("eventpy overlay: --port 0: no 2 consecutive free ports on 127.0.0.1 "
                                       "between 17200 and 20000; give --port\n")
    assert not list((tmp_path / "run").glob("*.pid"))
