"""What a broker's log tells an operator: where it listens, who attaches and leaves and why, and
a neighbor it cannot reach. Before, a broker logged nothing until it stopped: after a broker was
killed, its neighbors' logs were empty, and `overlay up` failing with "see run/*.log" pointed at
empty files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import eventpy



def _log_has(path, text: str, times: int = 1, timeout: float = 30.0) -> bool:
    """Has the file said `text` `times` times (waiting up to `timeout` s)?"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.read_text().count(text) >= times:
            return True
        time.sleep(0.05)
    return path.read_text().count(text) >= times


def test_a_brokers_log_says_where_it_listens_who_attaches_and_why_a_link_ended(overlay):
    logs = {b: overlay.run_dir / f"{b}.log" for b in ("b0", "b1", "b2")}
    assert _log_has(logs["b0"], f"b0: listening on 127.0.0.1:{overlay.port} (neighbors: b1 at 127.0.0.1:"
                                f"{overlay.port + 1})"), logs["b0"].read_text()
    assert _log_has(logs["b1"], "b1: broker 'b0' attached from 127.0.0.1:"), logs["b1"].read_text()
    assert _log_has(logs["b1"], "b1: broker 'b2' attached from 127.0.0.1:"), logs["b1"].read_text()

    node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}", name="ops-client")
    assert _log_has(logs["b2"], "b2: client 'ops-client' attached from 127.0.0.1:"), logs["b2"].read_text()
    node.close()
    assert _log_has(logs["b2"], "b2: client 'ops-client' detached (the connection closed)"), \
        logs["b2"].read_text()

    # b1 dials b2 (the name that sorts first dials): killed, b2 is first gone, then unreachable
    os.kill(int((overlay.run_dir / "b2.pid").read_text()), signal.SIGKILL)
    assert _log_has(logs["b1"], "b1: broker 'b2' detached ("), logs["b1"].read_text()
    assert _log_has(logs["b1"], f"b1: cannot reach neighbor b2 at 127.0.0.1:{overlay.port + 2}: Connection refused; retrying"), \
        logs["b1"].read_text()
    before = logs["b1"].read_text().count("b1: broker 'b2' attached")
    with open(logs["b2"], "ab") as log:
        b2 = subprocess.Popen([sys.executable, "-m", "eventpy", "broker", "--config",
                               str(overlay.run_dir / "overlay.toml"), "--id", "b2"], stdout=log,
                              stderr=subprocess.STDOUT, env=overlay.env, cwd=overlay.dir, start_new_session=True)
    try:
        assert _log_has(logs["b1"], "b1: broker 'b2' attached", times=before + 1), logs["b1"].read_text()
        assert _log_has(overlay.run_dir / "b2.pid", str(b2.pid))  # `overlay down` stops it
    except BaseException:  # the fixture's `down` would not find it without its pid file
        b2.kill()
        b2.wait()
        raise


def test_a_brokers_log_can_be_rotated_by_truncating_it_in_place(overlay):
    """README: a broker's log grows for as long as it runs; logrotate's `copytruncate` (or
    `truncate -s 0`) rotates it under a running broker, which appends (O_APPEND): its next lines
    start the emptied file, with no hole of the old size in front of them."""
    log = overlay.run_dir / "b0.log"
    assert _log_has(log, "b0: listening on")
    os.truncate(log, 0)
    node = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}", name="after-rotation")
    assert _log_has(log, "client 'after-rotation' attached"), log.read_bytes()[:200]
    node.close()
    data = log.read_bytes()
    assert not data.startswith(b"\0") and len(data) < 4096, data[:200]
