"""`start_broker()`: a real `eventpy broker` process on a free port of 127.0.0.1, for a test.

A port found free and then given to a broker can be taken in between by another test run (two
pytest-xdist workers, two checkouts on one machine); a broker that cannot listen exits at once,
and the next free port is tried. Everything the broker writes (its configuration, pid file,
status and log) is in the directory given, so tests running in parallel share nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ..runtime._ports import free_port

_IN_USE = "in use"  # what a broker that cannot listen says (EADDRINUSE's strerror)


class BrokerProcess:
    """A broker started by `start_broker`: `url` (`tcp://127.0.0.1:PORT`), `port`, `name`,
    `run_dir` (its overlay.toml, NAME.pid, NAME.status.json and NAME.log), `log_text()`, and
    `stop()`, which a test may call itself (to see what its clients do without a broker)."""

    def __init__(self, proc: subprocess.Popen, name: str, port: int, run_dir: Path) -> None:
        self.proc = proc
        self.name = name
        self.port = port
        self.run_dir = run_dir
        self.url = f"tcp://127.0.0.1:{port}"

    @property
    def log(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after `timeout` s) and reap it; again does nothing."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "BrokerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.proc.poll() is None else f"exited {self.proc.returncode}"
        return f"<BrokerProcess {self.name} {self.url} {state}>"


def _write_config(run_dir: Path, name: str, port: int, settings: dict[str, str]) -> Path:
    lines = [f'{k} = "{v}"' for k, v in settings.items()]  # the names are checked by the broker
    lines += ["links = []", "", f"[brokers.{name}]", 'host = "127.0.0.1"', f"port = {port}", ""]
    config = run_dir / "overlay.toml"
    config.write_text("\n".join(lines))
    return config


def _listening(proc: subprocess.Popen, pid_file: Path, deadline: float) -> bool | None:
    """True once the broker listens (its pid file names it), False if it exited, None at the deadline."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if pid_file.read_text().strip() == str(proc.pid):
                return True
        except OSError:
            pass
        time.sleep(0.02)  # polling a process that starts in about half a second
    return None


def start_broker(run_dir: str | os.PathLike, *, name: str = "b0", mode: str | None = None,
                 matcher: str | None = None, summary: str | None = None, timeout: float = 30.0,
                 attempts: int = 5) -> BrokerProcess:
    """Start one broker (`eventpy broker`) on a free port of 127.0.0.1, its files in `run_dir`
    (created), and return once it listens. A port taken meanwhile is retried on another, up to
    `attempts` times; a broker that fails otherwise, or is not listening within `timeout`
    seconds, is stopped and raises RuntimeError with its log."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in (("mode", mode), ("matcher", matcher), ("summary", summary)) if v}
    log_path = run_dir / f"{name}.log"
    for _ in range(attempts):
        port = free_port()
        config = _write_config(run_dir, name, port, settings)
        with open(log_path, "ab") as log:  # the broker holds its own copy
            proc = subprocess.Popen([sys.executable, "-m", "eventpy", "broker", "--config", str(config), "--id", name],
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        broker = BrokerProcess(proc, name, port, run_dir)
        up = _listening(proc, run_dir / f"{name}.pid", time.monotonic() + timeout)
        if up:
            return broker
        broker.stop()
        if up is None:
            raise RuntimeError(f"broker {name} did not listen on 127.0.0.1:{port} within {timeout:g}s; "
                               f"its log ({log_path}):\n{broker.log_text()}")
        said = broker.log_text().strip().splitlines()
        if not said or _IN_USE not in said[-1]:  # not a port taken meanwhile: trying again would not help
            raise RuntimeError(f"broker {name} exited with status {proc.returncode}; its log ({log_path}):\n"
                               f"{broker.log_text()}")
    raise RuntimeError(f"broker {name} found no free port of 127.0.0.1 in {attempts} attempts; its log "
                       f"({log_path}):\n{BrokerProcess(proc, name, port, run_dir).log_text()}")
