"""examples/overlay works as its docstrings say: a compiled trader on one edge of a 3-broker
overlay, an exchange on the other; the trader buys exactly what its guard takes, and lowering its
limit from inside the event method reaches the brokers."""

from __future__ import annotations

import subprocess
import sys

from ._procs import ROOT

EXAMPLE = ROOT / "examples" / "overlay"


def test_the_overlay_example_trades_as_documented(overlay):
    def env(port: int) -> dict:
        return {**overlay.env, "PYTHONPATH": str(ROOT), "EVENTPY_BROKER": f"tcp://127.0.0.1:{port}"}

    sub = subprocess.Popen([sys.executable, str(EXAMPLE / "subscriber.py"), "6"], cwd=overlay.dir, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(overlay.port + 2))
    try:
        assert sub.stdout.readline().strip() == "alice waits for IBM below 100.0"
        pub = subprocess.run([sys.executable, str(EXAMPLE / "publisher.py")], cwd=overlay.dir, text=True,
                             capture_output=True, timeout=60, env=env(overlay.port))
        assert pub.returncode == 0 and pub.stderr == "", pub.stderr
        assert pub.stdout.count("published") == 5
        out, err = sub.communicate(timeout=60)
        assert sub.returncode == 0 and err == "", err
        assert out.splitlines() == ["alice buys IBM at 99.0; limit now 99.0",
                                    "alice buys IBM at 97.0; limit now 97.0",
                                    "alice bought at [99.0, 97.0]; final limit 97.0"]
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
