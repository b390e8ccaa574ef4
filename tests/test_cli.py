import subprocess
import sys


def test_demo_runs_and_prints_the_comparison():
    out = subprocess.run([sys.executable, "-m", "eventpy", "demo", "--subscribers", "20", "--span", "0.1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "stocks.Quote(firm='IBM', price=9.5)" in out.stdout
    assert "parametric" in out.stdout and "resub" in out.stdout and "ratio p/r" in out.stdout


def test_unknown_command_is_a_usage_error():
    out = subprocess.run([sys.executable, "-m", "eventpy", "fly"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "invalid choice" in out.stderr
