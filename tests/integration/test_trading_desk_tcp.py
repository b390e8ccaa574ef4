"""The trading desk of test_trading_desk.py on the real overlay, as the README starts it: three
brokers in a line (`eventpy overlay up`), the subscriber process on one edge (b2), the exchange
process on the other (b0); every monitor's deliveries against the centralized oracle."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ._procs import ROOT

TRADING = ROOT / "tests" / "integration" / "trading"
sys.path.insert(0, str(TRADING))
import desk  # noqa: E402  (trading/desk.py: the scenario and the oracle)

sys.path.remove(str(TRADING))


class _Process:
    """A desk process answering one JSON line per command."""

    def __init__(self, script: str, overlay, port: int) -> None:
        env = {**overlay.env, "PYTHONPATH": f"{TRADING}:{ROOT}", "EVENTPY_BROKER": f"tcp://127.0.0.1:{port}"}
        self.proc = subprocess.Popen([sys.executable, str(TRADING / script)], cwd=overlay.dir, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the process ended: {self.proc.stderr.read()}")
        return json.loads(line)

    def __call__(self, *cmd):
        self.proc.stdin.write(json.dumps(list(cmd)) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> str:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.stderr.read()


@pytest.mark.parametrize("confirm", [True, False])
def test_each_monitor_gets_what_its_guard_admits_across_processes(overlay, confirm):
    sub = _Process("sub.py", overlay, overlay.port + 2)
    pub = None
    try:
        sub("confirm")  # the subscriber's node is attached before the exchange advertises
        pub = _Process("pub.py", overlay, overlay.port)
        assert pub.read() == "ready"
        problems = desk.run(sub, pub, rounds=10, seed=3, confirm=confirm)
        assert problems == []
        got = sub("report")
        assert sum(map(len, got.values())) > 20  # the oracle was not satisfied by silence
    finally:
        errors = [p.close() for p in (sub, pub) if p is not None]
    assert errors == [""] * len(errors)  # no callback failed, nothing was logged
