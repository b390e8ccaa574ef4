"""`eventpy replay` on the command line, with Spark replaced by stand-ins (no JVM): what the user
sees when the master is wrong or unreachable, and on Ctrl-C."""

from __future__ import annotations

import io
import sys
import types

import pytest

from eventpy.replay.cli import replay

TINY = """[replay]
workload = "micro"
modes = ["parametric"]
update_rates = [0]
subscribers = [3]
service = "model"
"""


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture
def spark_says(monkeypatch):
    """Make the Spark session raise `exc` (as pyspark does for an unreachable master)."""
    def install(exc: BaseException | None) -> None:
        def session(master=None, app="x"):
            if exc is not None:
                raise exc
            return types.SimpleNamespace(sparkContext=types.SimpleNamespace(master=master or "local[*]"))
        monkeypatch.setattr("eventpy.replay.spark.session", session)
    return install


def test_a_master_that_is_no_spark_url_is_refused_before_spark_starts(config, tmp_path, capsys, spark_says):
    spark_says(AssertionError("Spark must not start"))
    assert replay(str(config), str(tmp_path / "out"), master="nonsense://x", quiet=True) == 2
    err = capsys.readouterr().err
    assert err == ("eventpy replay: --master 'nonsense://x' is not a Spark master URL; allowed: local[*], "
                   "local[N], spark://HOST:PORT, yarn, mesos://HOST:PORT, k8s://HOST:PORT\n")


def test_an_unreachable_master_is_one_line_not_a_traceback(config, tmp_path, capsys, spark_says):
    spark_says(RuntimeError("An error occurred while calling None.org.apache.spark.sql.SparkSession.\n"
                            ": java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext.\n"
                            "\tat org.apache.spark.SparkContext.assertNotStopped"))
    out = tmp_path / "out"
    assert replay(str(config), str(out), master="spark://127.0.0.1:1", quiet=True) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["eventpy replay: the run failed: Spark did not start: is the master spark://127.0.0.1:1 "
                   "reachable, and does it have workers?", f"  (the whole error is in {out / 'error.log'})"]


def test_a_session_that_does_not_start_says_why_in_one_line(config, tmp_path, capsys, spark_says, monkeypatch):
    spark_says(RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number."))
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "bin" / "java").touch()  # Java is there (also on a machine without it)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert replay(str(config), str(tmp_path / "out"), quiet=True) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first == ("eventpy replay: the run failed: Spark did not start with master local[*]: "
                     "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")


def test_ctrl_c_is_one_line_and_exit_130(config, tmp_path, capsys, spark_says, monkeypatch):
    spark_says(None)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # what pyspark's SIGINT handler raises in the driver

    monkeypatch.setattr("eventpy.replay.grid.run_grid", interrupted)
    out = tmp_path / "out"
    assert replay(str(config), str(out), quiet=True) == 130
    assert capsys.readouterr().err == f"eventpy replay: interrupted; {out} is incomplete\n"
    assert "incomplete" in (out / "error.log").read_text()  # the directory says so too


def test_error_log_holds_the_whole_traceback(config, tmp_path, capsys, spark_says, monkeypatch):
    spark_says(None)

    def deep_inside_the_grid(*args, **kwargs):
        return 1 // 0

    monkeypatch.setattr("eventpy.replay.grid.run_grid", deep_inside_the_grid)
    out = tmp_path / "out"
    assert replay(str(config), str(out), quiet=True) == 1
    assert capsys.readouterr().err.splitlines()[0] == "eventpy replay: the run failed: ZeroDivisionError"
    log = (out / "error.log").read_text()
    assert log.startswith("Traceback (most recent call last):") and "in deep_inside_the_grid" in log
    assert log.endswith("ZeroDivisionError: integer division or modulo by zero\n")


def test_the_summary_tells_every_grid_point_apart_and_shows_no_nan():
    from rich.console import Console

    from eventpy.replay.cli import _summary
    rows = [{"update_rate": 50.0, "subscribers": 20, "mode": mode, "matcher": "fastint", "rum": rum, "seed": seed,
             "throughput": 3.5, "delay_ms": float("nan"), "spurious": 0, "missed": 1, "sub_messages": 1234}
            for mode in ("parametric", "resub") for rum in (False, True) for seed in (1, 2)]
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(_summary(rows))
    lines = [ln for ln in console.export_text().splitlines() if "fastint" in ln]
    assert len(lines) == len(set(lines)) == 8
    assert "nan" not in console.export_text() and all("—" in ln for ln in lines)
    assert all("parametric" in ln or "resub" in ln for ln in lines)  # not cut to "param…"


@pytest.mark.parametrize("master", ["localhost", "localhost:7077", "local7", "locals"])
def test_a_host_named_like_local_is_no_spark_url(master):
    from eventpy.replay.cli import _bad_master

    assert _bad_master(master).startswith(f"--master {master!r} is not a Spark master URL")


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[2,3]", "local-cluster[2,1,1024]",
                                    "spark://h:7077", "yarn", "k8s://h:443", "mesos://h:5050"])
def test_spark_master_urls_pass(master):
    from eventpy.replay.cli import _bad_master

    assert _bad_master(master) is None


def test_a_machine_without_java_is_told_spark_needs_it(config, tmp_path, capsys, spark_says, monkeypatch):
    # a newcomer without a JDK saw only "Java gateway process exited before sending its port number"
    spark_says(RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number."))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-java-here"))
    assert replay(str(config), str(tmp_path / "out"), quiet=True) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first == ("eventpy replay: the run failed: Spark did not start with master local[*]: it needs Java "
                     "(17, or 8 or 11): there is no `java` on the PATH and JAVA_HOME is not set")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert replay(str(config), str(tmp_path / "out"), quiet=True) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first == ("eventpy replay: the run failed: Spark did not start with master local[*]: it needs Java "
                     f"(17, or 8 or 11): JAVA_HOME is {tmp_path / 'jdk'}, which has no bin/java")


@pytest.mark.parametrize("absent", ["pyspark", "matplotlib"])
def test_an_install_without_the_replay_extra_is_told_the_pip_command(config, tmp_path, capsys, spark_says,
                                                                     monkeypatch, absent):
    """`pip install eventpy` (a wheel, no [replay]): the run used to create --out, print the grid and
    fail with `run make venv or pip install -e '.[replay]'`, commands of a checkout only."""
    spark_says(AssertionError("Spark must not start"))
    monkeypatch.setitem(sys.modules, absent, None)  # as if not installed: its import fails
    out = tmp_path / "out"
    assert replay(str(config), str(out), quiet=True) == 2
    assert capsys.readouterr().err == (f"eventpy replay: it needs {absent}, which the replay extra "
                                       "installs: pip install 'eventpy[replay]'; in a checkout: pip install -e "
                                       "'.[replay]'\n")
    assert not out.exists()


@pytest.mark.parametrize("live", [False, True])
def test_an_example_config_outside_a_checkout_says_where_the_examples_are(tmp_path, capsys, monkeypatch, live):
    """README's `eventpy replay examples/replay/htm-small.toml` run where eventpy was installed from
    a wheel (which holds no examples/) said only `no such file`."""
    from eventpy.__main__ import main

    monkeypatch.chdir(tmp_path)
    args = ["replay", "examples/replay/htm-small.toml", "--out", "runs/htm"] + (["--live"] if live else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("eventpy replay: examples/replay/htm-small.toml: no such file (the example configurations "
                          "of examples/replay/ come with EventPy's repository and sdist"), err
    assert not (tmp_path / "runs").exists()


def test_another_missing_config_is_just_missing(tmp_path, capsys):
    assert replay(str(tmp_path / "mine.toml"), str(tmp_path / "out"), quiet=True) == 2
    assert capsys.readouterr().err == f"eventpy replay: {tmp_path / 'mine.toml'}: no such file\n"
