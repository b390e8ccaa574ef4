"""`eventpy overlay` tells its own brokers from other processes by /proc; right after a process
starts, its /proc/<pid>/cmdline can read empty for a moment (measured: 3 reads in 300 right after
Popen returned). A live broker was then taken for one that had exited: `up` failed and, since
`down` only signals its own brokers, the broker was left running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from eventpy.runtime import launcher


def test_a_broker_whose_cmdline_still_reads_empty_counts_as_ours(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = run_dir / "overlay.toml"
    config.write_text("")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "broker", "--config",
                             str(config), "--id", "b0"])
    try:
        real = Path.read_bytes
        empty_reads = [2]

        def read_bytes(path: Path) -> bytes:
            if path.name == "cmdline" and empty_reads[0]:
                empty_reads[0] -= 1
                return b""  # as while the process is still being exec'd
            return real(path)

        monkeypatch.setattr(Path, "read_bytes", read_bytes)
        assert launcher._broker_of(proc.pid, run_dir)
        assert empty_reads == [0]
        assert not launcher._broker_of(proc.pid, tmp_path / "elsewhere")  # another run directory's
    finally:
        proc.kill()
        proc.wait()


def test_a_topology_file_sets_the_evolution_horizon_of_its_brokers(tmp_path):
    topo = tmp_path / "topo.toml"
    topo.write_text('evolve_horizon = 0.5\n[brokers.b0]\nport = 7999\n')
    assert launcher.read_config(topo)["evolve_horizon"] == 0.5
    topo.write_text('evolve_horizon = "fast"\n[brokers.b0]\nport = 7999\n')
    try:
        launcher.read_config(topo)
    except SystemExit as e:
        assert "evolve_horizon is the seconds between recomputations" in str(e) and "'fast'" in str(e)
    else:
        raise AssertionError("a horizon that is not a number was taken")


def test_a_topology_file_chooses_the_evolving_engine_and_the_cache_ttl_of_its_brokers(tmp_path):
    topo = tmp_path / "topo.toml"
    topo.write_text('evolving_engine = "clees"\ncache_ttl = 0.25\n[brokers.b0]\nport = 7999\n')
    cfg = launcher.read_config(topo)
    assert (cfg["evolving_engine"], cfg["cache_ttl"]) == ("clees", 0.25)
    for bad, words in (('evolving_engine = "cached"', "unknown evolving_engine 'cached'; choose ves, lees, clees"),
                       ("cache_ttl = -1", "cache_ttl is the seconds a CLEES version of an evolving subscription "
                                          "is used, a number above 0, not -1")):
        topo.write_text(bad + '\n[brokers.b0]\nport = 7999\n')
        try:
            launcher.read_config(topo)
        except SystemExit as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError(f"{bad} was taken")


def test_up_where_an_overlay_runs_says_so_as_every_overlay_message_does(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "b0.pid").write_text("12345")
    monkeypatch.setattr(launcher, "_alive", lambda pid_file: True)  # as if b0 still ran
    assert launcher.overlay_up(run_dir, "line", None, None, None, None, None, None) == 1
    assert capsys.readouterr().err == (f"eventpy overlay: an overlay is already up in {run_dir} "
                                       "(eventpy overlay down first)\n")
