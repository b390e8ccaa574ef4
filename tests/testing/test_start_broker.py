"""eventpy.testing.start_broker: a real broker process on a free port, its files in one directory."""

import socket

import pytest

import eventpy
from eventpy.testing import _broker, start_broker

Quote = eventpy.EventType("testing.BQuote", firm=str, price=float)


@pytest.fixture
def stopped_after():
    started = []
    yield started.append
    eventpy.shutdown()
    for b in started:
        b.stop()


def test_a_client_reaches_it_and_stop_reaps_it(tmp_path, stopped_after):
    broker = start_broker(tmp_path / "run", mode="resub")
    stopped_after(broker)
    assert broker.url == f"tcp://127.0.0.1:{broker.port}"
    node = eventpy.connect(broker.url)
    assert node.mode == "resub"
    got = []
    node.subscribe(Quote, "price < 10", on_event=got.append)
    node.advertise(Quote)
    eventpy.drain(5)
    node.publish(Quote, firm="IBM", price=1.0)
    eventpy.drain(5)
    assert [e["price"] for e in got] == [1.0]
    assert f"127.0.0.1:{broker.port}" in broker.log_text()  # where it listens
    eventpy.shutdown()
    broker.stop()
    assert broker.proc.returncode is not None  # reaped, not left running
    broker.stop()  # again: nothing


def test_a_port_taken_meanwhile_is_retried_on_another(tmp_path, monkeypatch, stopped_after):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = [taken.getsockname()[1]]
        real = _broker.free_port
        monkeypatch.setattr(_broker, "free_port", lambda: ports.pop() if ports else real())
        broker = start_broker(tmp_path / "run")
        stopped_after(broker)
        assert broker.port != taken.getsockname()[1]
        assert "in use" in broker.log_text()  # the first attempt's refusal
        with eventpy.connect(broker.url):
            pass


def test_a_broker_that_cannot_start_says_why(tmp_path, stopped_after):
    with pytest.raises(RuntimeError, match=r"(?s)broker b0 exited with status .*its log .*matcher"):
        stopped_after(start_broker(tmp_path / "run", matcher="quick"))
