import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_and_prints_the_comparison():
    out = subprocess.run([sys.executable, "-m", "eventpy", "demo", "--subscribers", "20", "--span", "0.1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "stocks.Quote(firm='IBM', price=9.5)" in out.stdout
    assert "parametric" in out.stdout and "resub" in out.stdout and "ratio p/r" in out.stdout


def test_demo_refuses_sizes_that_are_not_above_zero():
    for args in (["--subscribers", "-5"], ["--span", "0"], ["--rate", "x"]):
        out = subprocess.run([sys.executable, "-m", "eventpy", "demo", *args], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 2 and "eventpy demo: error: argument" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


def test_unknown_command_is_a_usage_error():
    out = subprocess.run([sys.executable, "-m", "eventpy", "fly"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_run_of_a_missing_file_or_a_directory_says_so_in_one_line(tmp_path):
    for target, words in ((tmp_path / "nosuch.epy", "no such file"), (tmp_path, "a directory, not an .epy file")):
        out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(target)], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 1 and out.stderr == f"{target}: error: {words}\n", out.stderr


def test_run_imports_the_modules_beside_the_program_as_python_does(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "helpers.py").write_text("LIMIT = 3.0\n")
    (app / "market.epy").write_text("import eventpy\nclass M:\n    def __init__(self):\n        self.l = 5.0\n"
                                    "    event def q(self, px: float) when px < self.l:\n        print('got', px)\n")
    (app / "main.epy").write_text("import eventpy, helpers, market\nm = market.M()\nmarket.M.q(helpers.LIMIT)\n"
                                  "eventpy.drain(5)\n")
    out = subprocess.run([sys.executable, "-m", "eventpy", "run", str(app / "main.epy")], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout == "got 3.0\n", out.stderr


def test_replay_refuses_an_out_it_cannot_write_before_starting_spark(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for out, words in ((a_file, "it is a file, not a directory"), (Path("/proc/eventpy-x"), "No such file")):
        done = subprocess.run([sys.executable, "-m", "eventpy", "replay", "examples/replay/htm-small.toml",
                               "--out", str(out)], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 2 and f"cannot write results to {out}: {words}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_a_broker_whose_port_is_taken_says_so_in_one_line(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "overlay.toml"
        config.write_text(f'links = []\n\n[brokers.b0]\nhost = "127.0.0.1"\nport = {port}\n')
        done = subprocess.run([sys.executable, "-m", "eventpy", "broker", "--config", str(config), "--id", "b0"],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1, done.stderr
    assert f"broker b0 cannot listen on 127.0.0.1:{port}:" in done.stderr and "Traceback" not in done.stderr


def test_a_spark_context_that_stopped_is_reported_as_an_unreachable_master():
    from eventpy.replay.cli import _failure_reason

    error = RuntimeError("An error occurred while calling z:org.apache.spark...\n: java.lang.IllegalStateException: "
                         "Cannot call methods on a stopped SparkContext.\nThis stopped SparkContext was created at:")
    assert _failure_reason(error, "spark://h:7077") == ("Spark stopped before the job could run: is the master "
                                                        "spark://h:7077 reachable, and does it have workers?")
    assert _failure_reason(ValueError("x"), "local[*]") == "ValueError"


def test_a_failed_spark_job_is_reported_as_its_python_error():
    from eventpy.replay.cli import _python_error

    spark_error = (
        "An error occurred while calling o62.parquet.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 1247, in main\n    process()\n'
        '  File "/x/at.py", line 73, in price_at\n    return mid[et][i]\n'
        "IndexError: list index out of range\n\n"
        "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(...)\n"
        "\tat java.base/java.lang.Thread.run(Thread.java:840)\n")
    assert _python_error(spark_error) == "IndexError: list index out of range"
    assert _python_error("Py4JError: no traceback here") == ""


def test_overlay_up_refuses_what_cannot_work_before_starting_anything(tmp_path):
    """One line naming the problem, exit status 1, no broker process and no pid file."""
    import socket

    def up(*args):
        out = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "up", "--run-dir", str(tmp_path / "run"),
                              *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert not list((tmp_path / "run").glob("*.pid"))
        return out.stderr.strip()

    assert "nosuch.toml: cannot read the overlay configuration" in up("--topology", "nosuch.toml")
    assert "ports 65535..65536 are not all between 1 and 65535" in up("--brokers", "2", "--port", "65535")
    # --port 0 is new (free ports): a refused --port says so, -1 did not
    assert up("--port", "-1").endswith("are not all between 1 and 65535 (--port 0: free ports the launcher picks)")
    (tmp_path / "bad.toml").write_text('[brokers]\nb0 = {host = "127.0.0.1", port = "x"}\n')
    assert "broker 'b0' needs a port between 1 and 65535, not 'x'" in up("--topology", str(tmp_path / "bad.toml"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (tmp_path / "busy.toml").write_text(f'[brokers]\nb0 = {{host = "127.0.0.1", port = {port}}}\n')
        assert f"broker b0: port {port} on 127.0.0.1 is already in use; nothing was started" in up(
            "--topology", str(tmp_path / "busy.toml"))


def test_overlay_down_stops_only_brokers_it_started(tmp_path):
    """A pid file whose pid now belongs to another program (pids are reused) is removed without
    signalling that program."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "overlay.toml").write_text('[brokers]\nb0 = {host = "127.0.0.1", port = 7100}\n')
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run_dir / "b0.pid").write_text(str(other.pid))
        out = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "down", "--run-dir", str(run_dir)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "stopped 0 broker(s); 1 had already exited" in out.stdout
        assert other.poll() is None  # still running: not ours
        assert not (run_dir / "b0.pid").exists()
    finally:
        other.kill()
        other.wait()


def test_overlay_up_refuses_a_topology_file_with_bad_links_or_settings_before_starting_anything(tmp_path):
    """Each mistake in one line naming the file, the bad value and what is allowed; no broker is
    started (QA found an unpacking error for a short link, and brokers that started and died with
    tracebacks for an unknown mode)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    brokers = f'[brokers.b0]\nhost = "127.0.0.1"\nport = {port}\n'
    link = 'links = [["b0", "b1"]]\n'
    brokers += f'[brokers.b1]\nhost = "127.0.0.1"\nport = {port + 1}\n'
    cases = {
        'links = [["b0"]]\n': "a link is a pair of broker names like [\"b0\", \"b1\"], not ['b0']",
        'links = "b0-b1"\n': "links must be a list of pairs of broker names like [[\"b0\", \"b1\"]], not 'b0-b1'",
        'links = [["b0", 1]]\n': "a link is a pair of broker names like [\"b0\", \"b1\"], not ['b0', 1]",
        link + 'mode = "bogus"\n': "unknown mode 'bogus'; choose parametric, resub",
        link + 'matcher = "bogus"\n': "unknown matcher 'bogus'; choose naive, poset, fastint",
        link + 'summary = 3\n': "unknown summary 3; choose attribute, poset",
        link + 'modes = "resub"\n': "unknown setting 'modes'; a topology file has brokers, links, mode, matcher, "
                                     "summary, evolve_horizon, evolving_engine, cache_ttl, max_subscriptions, "
                                     "max_set_members, max_event_types",
        link + 'evolving_engine = "cached"\n': "unknown evolving_engine 'cached'; choose ves, lees, clees",
        link + 'evolve_horizon = 0\n': "evolve_horizon is the seconds between recomputations of evolving "
                                        "subscriptions' summaries, a number above 0, not 0",
        "": "broker 'b1' is not linked to 'b0', so no event could cross between them; the brokers must form one "
            "tree (add links = [[\"A\", \"B\"], ...] before the [brokers.NAME] tables)",
        "TAIL" + link: "broker 'b1' has unknown setting 'links' (a broker has host and port; top-level settings go "
                       "before the first [brokers.NAME] table)",
    }
    for i, (head, words) in enumerate(cases.items()):
        topo = tmp_path / f"topo{i}.toml"
        tail = head.startswith("TAIL")  # written after the last broker table: TOML puts it inside it
        topo.write_text(brokers + head[4:] if tail else head + brokers)
        out = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "up", "--topology", str(topo), "--run-dir",
                              str(tmp_path / "run")], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert out.returncode == 1 and out.stderr == f"{topo}: {words}\n", out.stderr
        assert not list((tmp_path / "run").glob("*.pid")) and not list((tmp_path / "run").glob("*.log"))


def test_overlay_up_with_a_topology_file_refuses_a_flag_that_disagrees_with_it(tmp_path):
    topo = tmp_path / "topo.toml"
    topo.write_text('mode = "parametric"\n[brokers.b0]\nhost = "127.0.0.1"\nport = 7999\n')
    out = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "up", "--topology", str(topo), "--mode",
                          "resub", "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr == (f"eventpy overlay: {topo} sets mode = 'parametric' but --mode asks "
                                                  "for 'resub'; change one of them\n"), out.stderr
    assert not list((tmp_path / "run").glob("*.pid"))


def test_overlay_down_and_status_where_there_is_no_overlay_say_so(tmp_path):
    for action in ("down", "status"):
        out = subprocess.run([sys.executable, "-m", "eventpy", "overlay", action, "--run-dir",
                              str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and out.stderr == f"eventpy overlay: no overlay in {tmp_path / 'none'}\n", (action, out.stderr)


def test_an_unknown_topology_name_says_a_toml_file_is_accepted_too(tmp_path):
    out = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "up", "--topology", "ring", "--run-dir",
                          str(tmp_path / "run")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert out.stderr == ("eventpy overlay: unknown topology 'ring'; choose line, star, tree, random, "
                          "or the path of a TOML file (NAME.toml)\n")


def test_overlay_up_with_a_topology_file_refuses_brokers_host_and_port_flags(tmp_path):
    """The file names the brokers and their addresses: --brokers 5 beside it was silently ignored."""
    topo = tmp_path / "topo.toml"
    topo.write_text('[brokers.b0]\nhost = "127.0.0.1"\nport = 7999\n')
    try:
        for flag, value in (("--brokers", "5"), ("--port", "7200"), ("--host", "0.0.0.0")):
            out = subprocess.run([sys.executable, "-m", "eventpy", "overlay", "up", "--topology", str(topo), flag,
                                  value, "--run-dir", str(tmp_path / "run")], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 1 and out.stderr == (
                f"eventpy overlay: {topo} names the brokers and their addresses; {flag} is for line, star, tree "
                "and random (leave it out, or edit the file)\n"), out.stderr
            assert not list((tmp_path / "run").glob("*.pid"))
    finally:  # a broker started by mistake is not left running
        subprocess.run([sys.executable, "-m", "eventpy", "overlay", "down", "--run-dir", str(tmp_path / "run")],
                       capture_output=True, timeout=60)


def test_every_option_of_every_command_says_what_it_is():
    """`eventpy SUBCOMMAND -h` lists no bare option: each has a help text (QA found --brokers,
    --host, run's file and args, and demo's --subscribers without one)."""
    import argparse

    from eventpy.__main__ import parser

    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [f"eventpy {name} {action.dest}" for name, p in sub.choices.items() for action in p._actions
            if not isinstance(action, argparse._HelpAction) and not action.help]
    assert bare == []


def test_ctrl_c_while_overlay_up_waits_stops_the_brokers_it_started(tmp_path):
    """Interrupted before the brokers were linked, `overlay up` stops them (it left them running,
    with a KeyboardInterrupt traceback)."""
    import os
    import signal
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = tmp_path / "run"
    up = subprocess.Popen([sys.executable, "-m", "eventpy", "overlay", "up", "--brokers", "2", "--port", str(port),
                           "--run-dir", str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while len(pids) < 2 and time.monotonic() < deadline and up.poll() is None:
            pids = [int(f.read_text()) for f in run.glob("*.pid") if f.read_text().strip()]
            time.sleep(0.005)
        assert len(pids) == 2, "the brokers did not start"
        up.send_signal(signal.SIGINT)
        out, err = up.communicate(timeout=60)
        if "overlay up: 2 brokers" in out:  # linked before the signal came: nothing to check here
            return
        assert up.returncode == 130 and "Traceback" not in err, err
        assert err == f"eventpy overlay: interrupted; stopped the brokers it had started in {run}\n", err
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            raise AssertionError(f"broker {pid} still runs")
    finally:
        up.kill()
        up.wait()
        subprocess.run([sys.executable, "-m", "eventpy", "overlay", "down", "--run-dir", str(run)],
                       capture_output=True, timeout=60)


def test_both_commands_say_their_version():
    import eventpy
    from importlib.metadata import version

    assert version("eventpy") == eventpy.__version__  # pyproject reads it from the package
    for command in (["-m", "eventpy"], ["-c", "import sys; from eventpy.compiler.cli import main; sys.exit(main())"]):
        out = subprocess.run([sys.executable, *command, "--version"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.splitlines()[0].split()[-1] == eventpy.__version__, out


def test_version_says_what_an_upgrade_or_a_bug_report_needs():
    """The protocol a client or broker speaks and the interface of generated code decide what works
    together across versions; --version named the package's version only."""
    import platform

    from eventpy._version import GENERATED_INTERFACE
    from eventpy.runtime.transports._handshake import PROTOCOL

    for command in (["-m", "eventpy"], ["-m", "eventpy.compiler.cli"]):
        out = subprocess.run([sys.executable, *command, "--version"], capture_output=True, text=True, timeout=60)
        lines = out.stdout.splitlines()
        assert out.returncode == 0 and lines[1:3] == [
            f"wire protocol {PROTOCOL} (the brokers and clients of one overlay speak one)",
            f"generated-code interface {GENERATED_INTERFACE} (what eventpyc writes calls it)"], out
        assert lines[3].startswith(f"Python {platform.python_version()} ({sys.executable}); package in "), out


def test_version_piped_to_a_reader_that_stops_early_is_quiet():
    """`eventpy --version | head -1`: --version prints several lines now; a reader that closes the
    pipe after the first must not get a BrokenPipeError traceback on stderr."""
    import os

    for command in (["-m", "eventpy"], ["-m", "eventpy.compiler.cli"]):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before anything is written
        try:
            out = subprocess.run([sys.executable, *command, "--version"], stdout=write, stderr=subprocess.PIPE,
                                 text=True, timeout=60)
        finally:
            os.close(write)
        assert out.returncode == 0 and out.stderr == "", out.stderr


def test_run_and_broker_help_say_how_they_end():
    """`eventpy run -h` said nothing of SIGTERM (README: status 143, a second one ends it at once)
    nor of Ctrl-C's 130, and `eventpy broker -h` not where it logs: a user writing a systemd unit
    looks there first."""
    import argparse
    import signal

    from eventpy.__main__ import parser

    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    run_help = " ".join(sub.choices["run"].format_help().split())
    assert f"exits with status {128 + signal.SIGTERM}" in run_help and "second SIGTERM" in run_help
    assert f"status {128 + signal.SIGINT}" in run_help
    assert "logging to stderr" in " ".join(sub.choices["broker"].format_help().split())
