"""`overlay up` and `overlay status` list the brokers as they are numbered: b2 before b10. They
were sorted as text (b0, b1, b10, b11, b2 ...), so an overlay of more than ten brokers read out
of order in the launch line, the status table and the lines under it."""

from __future__ import annotations

import json
import re

from eventpy.runtime import _overlay_status, _overlay_up

NAMES = [f"b{i}" for i in range(12)]


def _status(name: str, i: int, **more) -> dict:
    return {"pid": 999_999_000 + i, "host": "127.0.0.1", "port": 18_000 + i, "ready": True, "uptime": 1.0,
            "stats": {"received": 0, "sent": 0, "refused": 1}, "connected": {}, **more}


def _run_dir(tmp_path, **more):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "overlay.toml").write_text("".join(f"[brokers.{n}]\nport = {18_000 + i}\n"
                                                  for i, n in enumerate(NAMES)))
    for i, n in enumerate(NAMES):
        (run_dir / f"{n}.status.json").write_text(json.dumps(_status(n, i, **more)))
    return run_dir


def _order(text: str, pattern: str) -> list[str]:
    return re.findall(pattern, text)


def test_overlay_up_says_where_the_brokers_listen_in_their_order(tmp_path, capsys):
    run_dir = _run_dir(tmp_path)
    cfg = {"brokers": {n: {} for n in NAMES}}
    assert _overlay_up._wait_ready(run_dir, cfg, {}, timeout=10.0) == 0
    said = capsys.readouterr().out
    assert _order(said, r"(b\d+) on 127") == NAMES, said


def test_overlay_status_lists_the_brokers_in_their_order(tmp_path, capsys):
    # the pids are not running: every broker shows dead, with a line each under the table
    run_dir = _run_dir(tmp_path, types={"t.Q": {"client_subscriptions": 1}})
    assert _overlay_status.show_status(run_dir) == _overlay_status.NOT_SERVING
    out = capsys.readouterr().out
    table = out[:out.index("broker b")]
    assert _order(table, r"│ (b\d+) +│") == NAMES, table
    assert _order(out, r"broker (b\d+) refused") == NAMES, out


def test_the_lines_about_live_brokers_list_them_in_their_order(tmp_path, capsys, monkeypatch):
    run_dir = _run_dir(tmp_path, types={"t.Q": {"client_subscriptions": 1}}, down={"bX": "not connected"},
                      connected={"b10": "broker", "b2": "broker"})
    monkeypatch.setattr(_overlay_status, "_alive", lambda pid_file: True)  # as if each one ran
    assert _overlay_status.show_status(run_dir) == _overlay_status.NOT_SERVING  # (its links are down)
    out = capsys.readouterr().out
    (types,) = [line for line in out.splitlines() if line.startswith("  t.Q: 12 subscriptions")]
    assert _order(types, r"(b\d+): 1") == NAMES, types
    assert _order(out, r"broker (b\d+): its link to bX is down") == NAMES, out
    assert out.count("b2 (broker), b10") == len(NAMES), out  # the links column (wrapped by its width)


def test_a_brokers_listening_line_names_its_neighbors_in_their_order(caplog):
    """The broker's first log line ("listening on ... (neighbors: ...)") sorted them as text."""
    import logging

    from eventpy.runtime._ports import free_port
    from eventpy.runtime.broker import Broker
    from eventpy.runtime.transports.tcp import BrokerServer

    closed = free_port()  # nobody listens there: the dials fail and retry until the stop
    neighbors = {n: ("127.0.0.1", closed) for n in ("b10", "b2", "b1")}
    with caplog.at_level(logging.INFO, logger="eventpy.tcp"):
        stop = BrokerServer(Broker("b0"), "127.0.0.1", 0, neighbors).start_in_thread()
        stop()
    (line,) = [r.getMessage() for r in caplog.records if "listening on" in r.getMessage()]
    assert re.findall(r"(b\d+) at", line) == ["b1", "b2", "b10"], line
