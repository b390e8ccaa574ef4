"""`--out` of an existing directory: a run replaces only what a replay wrote there."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventpy.replay import outdir
from eventpy.replay.cli import replay


def earlier_run(out):
    """The files an earlier (failed) run left, as Spark and the report write them."""
    for sub in ("deliveries", "truth", "metrics.parquet", "brokers.parquet", "traces/events", "traces/updates"):
        (out / sub).mkdir(parents=True)
        (out / sub / "part-00000-abc-c000.snappy.parquet").write_bytes(b"PAR1")
        (out / sub / ".part-00000-abc-c000.snappy.parquet.crc").write_bytes(b"")
        (out / sub / "_SUCCESS").write_bytes(b"")
    (out / "deliveries" / "_temporary" / "0").mkdir(parents=True)  # of an interrupted job
    for name in ("report.md", "error.log", "calibration.json"):
        (out / name).write_text("old")


def test_only_what_a_replay_wrote_is_removed(tmp_path):
    earlier_run(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "traces" / "README").write_text("mine")  # beside the tables: not in Spark's way
    outdir.clear(tmp_path)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["notes.txt", "traces", "traces/README"]  # error.log of the failed run is gone too


@pytest.mark.parametrize("stray,named", [("truth/NOTES.txt", "truth/NOTES.txt"),
                                         ("deliveries/sub/x", "deliveries/sub"),
                                         ("traces/events/mine.csv", "traces/events/mine.csv")])
def test_a_users_file_where_spark_writes_is_refused_not_deleted(tmp_path, stray, named):
    earlier_run(tmp_path)
    path = tmp_path / stray
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("mine")
    with pytest.raises(outdir.OutDirError, match=f"^cannot write results to {tmp_path}: {tmp_path / named} was "
                                                  "not written by eventpy replay"):
        outdir.clear(tmp_path)
    assert path.read_text() == "mine"


def test_the_cli_refuses_in_one_line_before_spark_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("eventpy.replay.spark.session", lambda *a, **k: pytest.fail("Spark must not start"))
    config = tmp_path / "c.toml"
    config.write_text('[replay]\nworkload = "micro"\n')
    (tmp_path / "out" / "truth").mkdir(parents=True)
    (tmp_path / "out" / "truth" / "NOTES.txt").write_text("mine")
    assert replay(str(config), str(tmp_path / "out"), quiet=True) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert replay(str(config), "", quiet=True) == 2
    assert capsys.readouterr().err == "eventpy replay: --out is empty; give a directory for the results\n"


def test_the_grid_clears_through_the_same_check(tmp_path):
    # run_grid removed traces/, deliveries/ and truth/ whole, a user's files with them
    from eventpy.replay.config import parse
    from eventpy.replay.grid import run_grid
    (tmp_path / "truth").mkdir()
    (tmp_path / "truth" / "NOTES.txt").write_text("mine")
    with pytest.raises(outdir.OutDirError):
        run_grid(None, parse({"replay": {"workload": "micro"}}), tmp_path)  # refused before Spark is used
    assert (tmp_path / "truth" / "NOTES.txt").read_text() == "mine"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc (a directory no one can write, root too)")
def test_an_existing_directory_that_takes_no_files_is_refused_before_spark_starts(tmp_path, capsys, monkeypatch):
    def no_spark(*args, **kwargs):
        raise AssertionError("Spark must not start")
    monkeypatch.setattr("eventpy.replay.spark.session", no_spark)
    config = tmp_path / "tiny.toml"
    config.write_text('[replay]\nworkload = "micro"\nupdate_rates = [0]\nsubscribers = [3]\nservice = "model"\n')
    assert replay(str(config), "/proc/self", quiet=True) == 2
    err = capsys.readouterr().err
    assert err.startswith("eventpy replay: cannot write results to /proc/self: ") and err.count("\n") == 1


def test_an_out_that_is_no_directory_says_so(tmp_path, capsys):
    config = tmp_path / "tiny.toml"
    config.write_text('[replay]\nworkload = "micro"\nupdate_rates = [0]\nsubscribers = [3]\nservice = "model"\n')
    assert replay(str(config), "/dev/null", quiet=True) == 2
    assert capsys.readouterr().err == "eventpy replay: cannot write results to /dev/null: it is not a directory\n"
