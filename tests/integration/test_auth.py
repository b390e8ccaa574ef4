"""An optional shared secret authenticates every link at handshake (HMAC challenge-response)."""

from __future__ import annotations

import os

import pytest

import eventpy

from ._procs import ROOT, eventpy as run_eventpy, free_port_block


def test_links_authenticate_with_a_shared_secret(tmp_path, monkeypatch):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVENTPY_SECRET": "s3cret"}
    port = free_port_block(2)
    run_dir = tmp_path / "run"
    up = run_eventpy("overlay", "up", "--brokers", "2", "--port", str(port), "--run-dir", str(run_dir),
                     cwd=tmp_path, env=env)
    assert up.returncode == 0, up.stderr  # the two brokers authenticated each other
    try:
        eventpy.shutdown()
        Q = eventpy.EventType("auth.Quote", firm=str, price=float)
        monkeypatch.setenv("EVENTPY_SECRET", "s3cret")
        sub = eventpy.connect(f"tcp://127.0.0.1:{port + 1}")
        pub = eventpy.connect(f"tcp://127.0.0.1:{port}")
        got = []
        sub.subscribe(Q, "price < 10", on_event=got.append)
        pub.advertise(Q)
        eventpy.drain(10)
        pub.publish(Q, firm="IBM", price=5.0)
        eventpy.drain(10)
        assert [e.price for e in got] == [5.0]
        eventpy.shutdown()
        monkeypatch.setenv("EVENTPY_SECRET", "wrong")
        with pytest.raises(ConnectionError, match="authentication"):
            eventpy.connect(f"tcp://127.0.0.1:{port}")
        monkeypatch.delenv("EVENTPY_SECRET")
        with pytest.raises(ConnectionError, match="requires authentication"):
            eventpy.connect(f"tcp://127.0.0.1:{port}")
        assert "authentication of" in (run_dir / "b0.log").read_text()  # the refusal, logged
    finally:
        eventpy.shutdown()
        run_eventpy("overlay", "down", "--run-dir", str(run_dir), cwd=tmp_path, env=env)
