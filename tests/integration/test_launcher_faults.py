"""What an operator meets when starting brokers goes wrong: a broker restarted by hand while it
still runs, and topology files that pass as written in the README but could not run."""

from __future__ import annotations

import os
import time

from ._procs import alive, env_with_root, eventpy, free_port_block


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_restarting_a_broker_that_still_runs_leaves_the_running_one_in_charge(tmp_path):
    """The second `eventpy broker` cannot listen; it says which process holds the port, and the
    pid file still names that broker, so `overlay down` stops it (QA found the pid file removed:
    `overlay status` said the broker was dead and `overlay down` left it running)."""
    run_dir = tmp_path / "run"
    port = free_port_block(1)
    up = eventpy("overlay", "up", "--brokers", "1", "--port", str(port), "--run-dir", str(run_dir),
                 cwd=tmp_path, env=env_with_root())
    assert up.returncode == 0, up.stderr
    pid_file = run_dir / "b0.pid"
    pid = int(pid_file.read_text())
    try:
        again = eventpy("broker", "--config", str(run_dir / "overlay.toml"), "--id", "b0", cwd=tmp_path,
                        env=env_with_root())
        assert again.returncode == 1 and "Traceback" not in again.stderr, again.stderr
        assert f"broker b0 is still running as pid {pid}" in again.stderr, again.stderr
        assert pid_file.read_text() == str(pid)
    finally:
        down = eventpy("overlay", "down", "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
        stopped = _gone(pid)
        if not stopped:  # what the defect did: leave no broker behind all the same
            os.kill(pid, 9)
    assert down.returncode == 0 and "stopped 1 broker(s)" in down.stdout, down.stdout + down.stderr
    assert stopped, f"broker {pid} still running after down"


def test_a_topology_file_without_hosts_runs_on_127_0_0_1(tmp_path):
    """`host` may be left out (the check takes 127.0.0.1), so a broker must find its neighbors'
    hosts too (QA found every broker with a neighbor dying with KeyError: 'host')."""
    port = free_port_block(2)
    topo = tmp_path / "topo.toml"
    topo.write_text(f'links = [["a", "b"]]\n[brokers.a]\nport = {port}\n[brokers.b]\nport = {port + 1}\n')
    run_dir = tmp_path / "run"
    up = eventpy("overlay", "up", "--topology", str(topo), "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
    pids = [int(f.read_text()) for f in run_dir.glob("*.pid")]
    try:
        assert up.returncode == 0, up.stderr + "".join(f.read_text() for f in run_dir.glob("*.log"))
        assert f"a on 127.0.0.1:{port}, b on 127.0.0.1:{port + 1}" in up.stdout
    finally:
        eventpy("overlay", "down", "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
    assert all(_gone(p) for p in pids)


def test_two_brokers_at_one_address_are_refused_before_starting_anything(tmp_path):
    port = free_port_block(1)
    topo = tmp_path / "topo.toml"
    topo.write_text(f'links = [["a", "b"]]\n[brokers.a]\nhost = "127.0.0.1"\nport = {port}\n'
                    f'[brokers.b]\nport = {port}\n')
    run_dir = tmp_path / "run"
    up = eventpy("overlay", "up", "--topology", str(topo), "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
    assert up.returncode == 1 and up.stderr == (f"{topo}: brokers 'a' and 'b' both listen on 127.0.0.1:{port}; "
                                                "give each broker its own port\n"), up.stderr
    assert not list(run_dir.glob("*.pid")) and not list(run_dir.glob("*.log"))
