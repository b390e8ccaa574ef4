"""What an operator meets starting an overlay again in a run directory that a crash, a reboot or
an interrupted `up` left behind: files of brokers that no longer run, and Ctrl-C while `up` is
still starting brokers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from ._procs import alive, env_with_root, eventpy, free_port_block


def _stop(pids: list[int], timeout: float = 10.0) -> list[int]:
    """SIGTERM then SIGKILL the given processes; returns those that were still running."""
    running = [p for p in pids if alive(p)]
    for p in running:
        os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in running) and time.monotonic() < deadline:
        time.sleep(0.05)
    for p in running:
        if alive(p):
            os.kill(p, signal.SIGKILL)
    return running


def test_a_status_file_left_by_a_broker_of_an_earlier_overlay_does_not_hold_up_the_next(tmp_path):
    """An overlay of 3 brokers crashed and its pid files were cleaned away by hand, its status
    files not: `up --brokers 2` waited for the 3rd broker's file to match 2 brokers, said after
    20 s that the overlay was not ready (with empty logs) and stopped the brokers it had started.
    Now the stale file is removed before anything starts, and `status` lists only the overlay's
    brokers."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stale = {"pid": 999999, "host": "127.0.0.1", "port": 1, "ready": True, "stats": {}, "types": {},
             "connected": {"b1": "broker"}, "uptime": 5.0}
    (run_dir / "b2.status.json").write_text(json.dumps(stale))
    port = free_port_block(2)
    up = eventpy("overlay", "up", "--brokers", "2", "--port", str(port), "--run-dir", str(run_dir),
                 cwd=tmp_path, env=env_with_root())
    pids = [int(f.read_text()) for f in run_dir.glob("*.pid")]
    try:
        assert up.returncode == 0, up.stderr
        assert not (run_dir / "b2.status.json").exists()
        status = eventpy("overlay", "status", "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
        assert status.returncode == 0, status.stderr
        assert "b0" in status.stdout and "b1" in status.stdout and "b2" not in status.stdout, status.stdout
    finally:
        down = eventpy("overlay", "down", "--run-dir", str(run_dir), cwd=tmp_path, env=env_with_root())
        left = _stop(pids)
    assert down.returncode == 0, down.stderr
    assert not left, f"brokers {left} still running after down"


# `overlay up` in a process of its own, interrupted (SIGINT, as Ctrl-C) just after the second
# broker's process was forked and before Popen returned its pid to the launcher: the narrowest
# window of the spawning loop, where a KeyboardInterrupt lost the pid of a running broker.
_INTERRUPTED_UP = textwrap.dedent("""
    import os, signal, subprocess, sys
    from pathlib import Path
    from eventpy.runtime import launcher

    real, spawned = subprocess.Popen, []
    def popen(*args, **kwargs):
        proc = real(*args, **kwargs)
        spawned.append(proc.pid)
        Path(sys.argv[2]).write_text(" ".join(map(str, spawned)))
        if len(spawned) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return proc
    subprocess.Popen = popen  # (the launcher's: it calls subprocess.Popen)
    sys.exit(launcher.overlay_up(Path(sys.argv[3]), "line", 3, None, int(sys.argv[1]), None, None, None))
""")


def test_ctrl_c_while_up_starts_the_brokers_stops_every_broker_it_started(tmp_path):
    """Ctrl-C while `up` was still forking brokers printed a KeyboardInterrupt traceback and left
    the brokers already forked running (the one being forked without even a pid file: `down`
    could not find it). Now `up` records the broker being forked, starts no more, stops them all,
    says so and exits with 130."""
    port = free_port_block(3)
    spawned_file = tmp_path / "spawned"
    run_dir = tmp_path / "run"
    up = subprocess.run([sys.executable, "-c", _INTERRUPTED_UP, str(port), str(spawned_file), str(run_dir)],
                        cwd=tmp_path, env=env_with_root(), capture_output=True, text=True, timeout=120)
    spawned = [int(p) for p in spawned_file.read_text().split()] if spawned_file.exists() else []
    left = _stop(spawned + [int(f.read_text()) for f in run_dir.glob("*.pid")])
    assert "Traceback" not in up.stderr, up.stderr
    assert up.returncode == 130, up.stdout + up.stderr
    assert "interrupted; stopped the brokers it had started" in up.stderr
    assert len(spawned) == 2  # no broker is started after the Ctrl-C
    assert not left, f"brokers {left} were left running after Ctrl-C"
    assert not list(run_dir.glob("*.pid"))


def test_a_second_up_in_a_directory_an_up_is_still_starting_is_refused(tmp_path):
    """Nothing kept two `up`s in one run directory apart: started together, both could find no
    broker running and start brokers over the same pid files. Now the second is refused at once,
    before it starts anything. (The first is played by this test, holding the directory's lock.)"""
    import fcntl

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    port = free_port_block(1)
    with open(run_dir / ".up.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        up = eventpy("overlay", "up", "--brokers", "1", "--port", str(port), "--run-dir", str(run_dir),
                     cwd=tmp_path, env=env_with_root())
    pids = [int(f.read_text()) for f in run_dir.glob("*.pid")]
    left = _stop(pids)
    assert up.returncode == 1, up.stdout + up.stderr
    assert "another 'eventpy overlay up' is starting an overlay in" in up.stderr, up.stderr
    assert not pids and not left
