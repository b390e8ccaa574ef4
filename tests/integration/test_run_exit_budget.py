"""`eventpy run` drained for 5 s when the program returned, then the exit drain waited another 5 s
for the same callback: a program with a callback still running took 15 s to end (systemd's stop
too) instead of the README's "up to 5 s in all" for the deliveries owed, then 5 s for the
callbacks. The two drains now share one budget."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import eventpy
from eventpy.runtime import _exit

from ._procs import env_with_root

_STUCK = textwrap.dedent("""
    import threading, time, eventpy
    started = threading.Event()

    class W:
        def __init__(self):
            self.limit = 10.0

        event def quote(self, price: float) when price < self.limit:
            started.set()
            time.sleep(600)

    w = W()
    W.quote(1.0)
    started.wait(60)
""")


def test_a_callback_still_running_is_waited_for_once_at_the_end_of_eventpy_run(tmp_path):
    (tmp_path / "stuck.epy").write_text(_STUCK)
    done = subprocess.run([sys.executable, "-m", "eventpy", "run", "stuck.epy"], cwd=tmp_path, env=env_with_root(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (said,) = [line for line in done.stderr.splitlines() if line.startswith("at exit, not waited for: drain")]
    ran = float(re.search(r"has run for ([\d.]+)s", said).group(1))
    assert 5.0 <= ran < 9.0, said  # 10 s before: the drain at the program's end, then the exit drain


def test_what_the_drain_at_the_programs_end_spent_is_not_waited_again(fresh_overlay, monkeypatch):
    now = [0.0]
    asked: list[float] = []

    def drain(timeout: float, took: float, raises: bool) -> None:
        asked.append(timeout)
        now[0] += took
        if raises:
            raise TimeoutError("drain: callbacks still running")

    monkeypatch.setattr(_exit, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(_exit, "_spent", 0.0)
    eventpy.connect()  # an embedded node: the exit drain has something to drain
    monkeypatch.setattr(_exit, "drain", lambda t: drain(t, 2.0, False))
    _exit.drain_at_program_end()
    _exit.drain_at_exit()
    assert asked == [5.0, 3.0]  # what was left of the 5 s
    asked.clear()
    _exit._spent = 0.0  # another program's end
    monkeypatch.setattr(_exit, "drain", lambda t: drain(t, t, True))
    _exit.drain_at_program_end()
    _exit.drain_at_exit()
    assert asked == [5.0]  # timed out and said so: not waited for a second time
