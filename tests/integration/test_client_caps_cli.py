"""The per-client limits as an operator sets them: `overlay up --max-...` (written in
overlay.toml), `eventpy broker --max-...` over the file's, a TOML file's setting; `overlay status`
shows the limits and who hit them. Real broker processes on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import time

import eventpy

from ._procs import env_with_root, eventpy as run_eventpy, free_port_block

Q = eventpy.EventType("caps.Cli", sym=str)


def test_overlay_up_sets_the_limits_and_status_names_who_hit_them(tmp_path):
    run_dir = tmp_path / "run"
    port = free_port_block(1)
    up = run_eventpy("overlay", "up", "--brokers", "1", "--port", str(port), "--run-dir", str(run_dir),
                     "--max-subscriptions", "2", "--max-set-members", "3", cwd=tmp_path, env=env_with_root())
    assert up.returncode == 0, up.stderr
    try:
        assert "max_subscriptions = 2\nmax_set_members = 3\n" in (run_dir / "overlay.toml").read_text()
        eventpy.shutdown()
        node = eventpy.connect(f"tcp://127.0.0.1:{port}", name="team-a")
        node.subscribe(Q, "sym in {'A', 'B', 'C'}")
        try:
            node.subscribe(Q, "sym in {'A', 'B', 'C', 'D'}")
            raise AssertionError("max_set_members = 3 was not enforced")
        except eventpy.LimitExceeded as e:
            assert "max_set_members = 3" in str(e)
        # past the client's own check (as a client that checks nothing would be), to the broker
        with node._local.lock:
            node._local.core.caps = type(node._local.core.caps)()
        node.subscribe(Q, "True")
        late = node.subscribe(Q, "True")
        deadline = time.monotonic() + 10
        while not late._state.refused and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "max_subscriptions = 2" in late._state.refused
        eventpy.shutdown()
        time.sleep(1.5)  # the status file is written once a second
        status = run_eventpy("overlay", "status", "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
        out = status.stdout
        assert "broker b0 limits each client to max_subscriptions = 2, max_set_members = 3" in out, out
        assert "client team-a at b0 was refused past max_subscriptions (2) 1 time" in out, out
        log = (run_dir / "b0.log").read_text()
        assert "b0: per-client limits: max_subscriptions=2, max_set_members=3" in log
        assert "refused Sub from 'team-a': client 'team-a' holds 2 subscriptions" in log
    finally:
        eventpy.shutdown()
        down = run_eventpy("overlay", "down", "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
        assert down.returncode == 0, down.stderr


def test_a_bad_limit_is_refused_before_a_broker_starts(tmp_path):
    topo = tmp_path / "topo.toml"
    topo.write_text(f'max_subscriptions = 0\n[brokers.a]\nport = {free_port_block(1)}\n')
    up = run_eventpy("overlay", "up", "--topology", str(topo), "--run-dir", str(tmp_path / "run"),
                     cwd=tmp_path, env=env_with_root())
    assert up.returncode != 0 and "Traceback" not in up.stderr
    assert ("max_subscriptions is the most subscriptions one client connection holds at the broker, a whole "
            "number of at least 1, not 0") in up.stderr, up.stderr
    flag = run_eventpy("broker", "--config", str(topo), "--id", "a", "--max-set-members", "-3", cwd=tmp_path,
                       env=env_with_root())
    assert flag.returncode == 2 and "--max-set-members: must be above 0, not -3" in flag.stderr, flag.stderr


def test_the_broker_command_line_overrides_the_file(tmp_path):
    port = free_port_block(1)
    topo = tmp_path / "topo.toml"
    topo.write_text(f'max_subscriptions = 100\n[brokers.a]\nport = {port}\n')
    proc = subprocess.Popen([sys.executable, "-m", "eventpy", "broker", "--config", str(topo), "--id", "a",
                             "--max-subscriptions", "1"], cwd=tmp_path, env=env_with_root(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "a.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        eventpy.shutdown()
        node = eventpy.connect(f"tcp://127.0.0.1:{port}")
        node.subscribe(Q, "True")
        try:
            node.subscribe(Q, "True")
            raise AssertionError("--max-subscriptions 1 was not enforced")
        except eventpy.LimitExceeded as e:
            assert e.limit == "max_subscriptions" and e.value == 1
    finally:
        eventpy.shutdown()
        proc.terminate()
        proc.wait(10)
