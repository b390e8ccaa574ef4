"""`eventpy replay --live` on the command line: a mistake in the arguments is one line and exit
status 2, before any engine runs (no traceback, no minutes of replay lost at the end)."""

from __future__ import annotations

import sys

import pytest

from eventpy.__main__ import main

LIVE = """[replay]
workload = "micro"
modes = ["parametric"]
update_rates = [0]
subscribers = [3]
service = "model"

[live]
engines = ["eventpy-parametric"]
update_rates = [0]
subscribers = 3
"""


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "live.toml"
    path.write_text(LIVE)
    def no_run(*a, **k):  # an engine must not start when the arguments are wrong
        raise AssertionError("the live replay started")
    monkeypatch.setattr("eventpy.replay.live.driver.run_live", no_run)
    return path


def test_out_that_is_a_file_is_one_line(config, tmp_path, capsys):
    out = tmp_path / "afile"
    out.write_text("mine")
    assert main(["replay", str(config), "--out", str(out), "--live"]) == 2
    err = capsys.readouterr().err
    assert err == f"eventpy replay: cannot write results to {out}: it is a file, not a directory\n"
    assert out.read_text() == "mine"


def test_bad_master_is_refused_before_the_engines_run(config, tmp_path, capsys):
    assert main(["replay", str(config), "--out", str(tmp_path / "o"), "--live", "--master", "host:7077"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("eventpy replay: --master 'host:7077' is not a Spark master URL")
    assert not (tmp_path / "o").exists()


def test_the_end_of_run_table_shows_a_delay_without_samples_as_a_dash_not_nan():
    # at update rate 0 no update delay is measured; the table printed `nan` where live.md says —
    import io
    import math

    from rich.console import Console

    from eventpy.replay.live.cli import summary_table

    row = {"update_rate": 0.0, "engine": "eventpy-parametric", "delay_ms": math.nan, "bytes_to_subscribers": 608285,
           "throughput": 41.1, "latency_p50_ms": 4.13, "latency_p99_ms": 16.0, "missed": 0, "spurious": 0,
           "sub_messages": 0, "lag_ms": 3.8}
    out = io.StringIO()
    Console(file=out, width=200).print(summary_table([row]))
    line = next(ln for ln in out.getvalue().splitlines() if "eventpy-parametric" in ln)
    cells = [c.strip() for c in line.strip("│ ").split("│")]
    assert cells == ["0", "eventpy-parametric", "—", "608,285", "41.1", "4.13", "16", "0", "0", "0", "3.8"]


def test_an_install_without_the_replay_extra_is_told_the_pip_command_before_the_engines_run(
        config, tmp_path, capsys, monkeypatch):
    """Without pyspark the live engines used to run for minutes, then fail writing live.parquet."""
    monkeypatch.setitem(sys.modules, "pyspark", None)
    assert main(["replay", str(config), "--out", str(tmp_path / "o"), "--live"]) == 2
    assert "eventpy replay: it needs pyspark, which the replay extra installs: pip install 'eventpy[replay]'" \
        in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("adapter, package", [("activemq", "stomp"), ("redispubsub", "redis")])
def test_a_live_engine_without_its_client_package_names_the_pip_command(monkeypatch, adapter, package):
    import importlib

    module = importlib.import_module(f"eventpy.replay.live.{adapter}")
    if adapter == "activemq":  # as if the server were installed
        monkeypatch.setattr(module.os, "access", lambda *a: True)
    monkeypatch.setattr(module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setitem(sys.modules, package, None)
    why = module.available()
    assert why.endswith("is missing (pip install 'eventpy[replay]'; in a checkout: pip install -e '.[replay]')")
