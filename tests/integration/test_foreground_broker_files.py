"""A broker run in the foreground (`eventpy broker --config FILE --id NAME`, as systemd runs it)
and stopped by SIGTERM or Ctrl-C left its pid file and status file behind: `overlay status` then
listed a broker stopped on purpose as one that had died, with a restart command, and exited 3.
It removes them as it stops (only its own: a broker started since keeps its files)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from eventpy.runtime import launcher

from ._procs import ROOT, free_port_block


def _wait_for(check, proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the broker did not start (exit status {proc.poll()})")
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_foreground_broker_stopped_by_a_signal_leaves_no_pid_or_status_file(tmp_path, sig):
    port = free_port_block(1)
    config = tmp_path / "overlay.toml"
    config.write_text(f'[brokers.b0]\nhost = "127.0.0.1"\nport = {port}\n')
    pid_file, status_file = tmp_path / "b0.pid", tmp_path / "b0.status.json"
    with open(tmp_path / "b0.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "eventpy", "broker", "--config", str(config), "--id", "b0"],
                                stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _wait_for(lambda: pid_file.exists() and status_file.exists(), proc)
        proc.send_signal(sig)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (tmp_path / "b0.log").read_text()
    assert code == 0 and "Traceback" not in text, text
    assert not pid_file.exists() and not status_file.exists(), sorted(p.name for p in tmp_path.iterdir())
    assert launcher.overlay_status(tmp_path) == 1  # no overlay there, rather than a dead broker


def test_a_stopping_broker_leaves_the_files_of_another_process_alone(tmp_path):
    """Between its listener's close and its exit, a broker restarted by hand can have written its
    own pid and status: those stay."""
    pid_file, status_file = tmp_path / "b0.pid", tmp_path / "b0.status.json"
    other = os.getpid() + 1
    pid_file.write_text(str(other))
    status_file.write_text(json.dumps({"pid": other}))
    launcher._PidFile(pid_file).release(status_file)
    assert pid_file.read_text() == str(other) and json.loads(status_file.read_text()) == {"pid": other}
    pid_file.write_text(str(os.getpid()))
    status_file.write_text(json.dumps({"pid": os.getpid()}))
    launcher._PidFile(pid_file).release(status_file)
    assert not pid_file.exists() and not status_file.exists()
