"""The examples compile and print what their docstrings promise."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(name: str) -> str:
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(EXAMPLES / name)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_stock():
    out = run("stock.epy")
    assert out.splitlines()[:4] == ["m1 buys IBM at 99.0", "m1 buys IBM at 98.0", "m1 buys IBM at 97.5",
                                    "m1 buys IBM at 120.0"]


def test_traffic():
    out = run("traffic.epy")
    assert "car at mile 1.0: local move only" in out and "car at mile 2.5: subscription moved" in out
    assert out.strip().endswith("5 reports; 2 UPD messages")


def test_radar():
    out = run("radar.epy")
    assert "blip at (4.0, 4.0)" not in out and "blip at (12.0, 1.0)" in out
    assert "spurious 0" in out


def test_patrol():
    out = run("patrol.epy")
    assert "hears Aurora" in out and "hears Borealis, 3 miles ahead" in out
    assert "Borealis, at mile 30" not in out and "Corona" not in out
    assert "delivered 2, updates sent 0" in out


@pytest.mark.parametrize("name", ["stock.epy", "traffic.epy", "radar.epy", "patrol.epy"])
def test_docstring(name):
    text = (EXAMPLES / name).read_text()
    assert text.startswith('"""') and len(text.split('"""')[1]) > 100
