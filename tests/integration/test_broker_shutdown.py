"""`eventpy overlay down` sends SIGTERM to its brokers: a broker with links open (a client, a
connection still in its handshake, a neighbor it keeps dialing) stops cleanly, exit status 0,
with one log line and no traceback (QA found `SystemExit` and `CancelledError` tracebacks logged
as ERROR when a client was attached)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import eventpy

from ._procs import ROOT, free_port_block


def _wait_ready(status_file, proc, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if json.loads(status_file.read_text()).get("ready") is not None:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"the broker did not start (exit status {proc.poll()})")


def test_sigterm_stops_a_broker_with_open_links_cleanly(tmp_path):
    port = free_port_block(2)
    config = tmp_path / "overlay.toml"
    # b1 is never started: b0 keeps dialing it while it runs
    config.write_text(f'links = [["b0", "b1"]]\n[brokers.b0]\nhost = "127.0.0.1"\nport = {port}\n'
                      f'[brokers.b1]\nhost = "127.0.0.1"\nport = {port + 1}\n')
    log_file = tmp_path / "b0.log"
    with open(log_file, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "eventpy", "broker", "--config", str(config), "--id", "b0"],
                                stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _wait_ready(tmp_path / "b0.status.json", proc)
        eventpy.shutdown()
        eventpy.connect(f"tcp://127.0.0.1:{port}")
        with socket.create_connection(("127.0.0.1", port)):  # in its handshake: no HELLO yet
            time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        eventpy.shutdown()
    text = log_file.read_text()
    assert code == 0, text
    assert "Traceback" not in text and "ERROR" not in text, text
    assert text.splitlines()[-1].endswith("b0: stopped (SIGTERM)"), text
