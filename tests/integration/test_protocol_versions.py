"""Peers of another protocol version, as in an overlay upgraded one broker at a time: each side is
told both versions and what to do, at connect time. Before, a broker closed such a connection
without a word, and the client saw `closed before HELLO (is a broker running there?)`; a broker
dialing an older one retried in silence."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

import eventpy
from eventpy import __version__
from eventpy.runtime.broker import Broker
from eventpy.runtime.messages import Bye, Hello
from eventpy.runtime.transports import tcp_client
from eventpy.runtime.transports._handshake import PROTOCOL
from eventpy.runtime.transports.tcp import BrokerServer
from eventpy.runtime.wire import FrameDecoder, encode


@pytest.fixture
def closing_server():
    """A port where a server accepts each connection and closes it without a word, as a broker
    of eventpy 0.1.0 (protocols 1 to 4) did to a peer of another protocol version."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return  # closed at teardown
            conn.recv(65536)  # the peer's HELLO, unanswered
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _answer(port: int, hello: Hello) -> list:
    """What a broker answers to `hello`, until it closes the connection."""
    decoder, got = FrameDecoder(), []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(encode(hello))
        while data := s.recv(65536):
            got.extend(decoder.feed(data))
    return got


def test_a_client_of_an_older_protocol_is_refused_naming_both_versions_and_the_upgrade(broker_server,
                                                                                       monkeypatch):
    server = broker_server("b0")
    monkeypatch.setattr(tcp_client, "PROTOCOL", PROTOCOL - 1)
    with pytest.raises(ConnectionError) as e:
        eventpy.connect(f"tcp://127.0.0.1:{server.port}", name="old-one")
    assert str(e.value) == (
        f"cannot attach to tcp://127.0.0.1:{server.port}: the broker refused it: broker b0 speaks EventPy "
        f"protocol {PROTOCOL} (eventpy {__version__}); client old-one speaks protocol {PROTOCOL - 1}: upgrade "
        f"eventpy where the client runs (pip install -U) to one of protocol {PROTOCOL}, as `eventpy --version` "
        "says")


def test_a_client_of_a_newer_protocol_is_told_to_upgrade_the_brokers(broker_server, monkeypatch):
    server = broker_server("b0")
    monkeypatch.setattr(tcp_client, "PROTOCOL", PROTOCOL + 1)
    with pytest.raises(ConnectionError, match=f"client [^ ]+ speaks protocol {PROTOCOL + 1}: upgrade the "
                                              "overlay's brokers to the client's eventpy"):
        eventpy.connect(f"tcp://127.0.0.1:{server.port}")


def test_a_broker_that_closes_without_a_hello_is_said_to_maybe_speak_another_version(closing_server):
    eventpy.shutdown()
    try:
        with pytest.raises(ConnectionError) as e:
            eventpy.connect(f"tcp://127.0.0.1:{closing_server}")
    finally:
        eventpy.shutdown()
    assert str(e.value) == (
        f"cannot attach to tcp://127.0.0.1:{closing_server}: it closed the connection before sending "
        f"its HELLO (an older EventPy broker does so to a client of another protocol version: this "
        f"client speaks {PROTOCOL}, eventpy {__version__}; the broker's log says which it speaks)")


def test_a_broker_of_another_protocol_gets_a_bye_saying_so_logged_once(broker_server, caplog):
    server = broker_server("b1")
    caplog.set_level(logging.DEBUG, logger="eventpy.tcp")
    for _ in range(3):  # an older broker re-dials, again and again
        answer = _answer(server.port, Hello("b0", "broker", PROTOCOL - 1, "parametric"))
        assert answer == [Bye(f"broker b1 speaks EventPy protocol {PROTOCOL} (eventpy {__version__}); broker "
                              f"b0 speaks protocol {PROTOCOL - 1}: the brokers of one overlay must speak "
                              "one protocol: run the same eventpy on all of them (README: Upgrading); "
                              "this link stays down until then")]
    refusals = [r for r in caplog.records if "refused broker 'b0'" in r.getMessage()]
    assert [r.levelno for r in refusals] == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_a_broker_dialing_an_older_broker_says_it_may_speak_another_version(closing_server, caplog):
    caplog.set_level(logging.DEBUG, logger="eventpy.tcp")
    server = BrokerServer(Broker("b0"), "127.0.0.1", 0, {"b9": ("127.0.0.1", closing_server)})
    stop = server.start_in_thread()
    try:
        wanted = (f"b0: link to b9 refused: it closed the connection before sending its HELLO: a "
                  f"broker of another EventPy protocol version does so (this one speaks {PROTOCOL}, "
                  f"eventpy {__version__}; see its log)")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(r.getMessage().startswith(wanted)
                                                      for r in caplog.records):
            time.sleep(0.05)
        said = [r for r in caplog.records if r.getMessage().startswith(wanted)]
        assert said and said[0].levelno == logging.WARNING
    finally:
        stop()


def test_a_neighbor_back_on_another_version_after_an_outage_is_said_at_once(monkeypatch, caplog):
    """A rolling upgrade: the neighbor is down a while (the re-dial's wait reaches its cap), then
    comes back speaking another version. The refusal was logged only when the wait grew: at DEBUG."""
    from eventpy.runtime.transports import tcp
    from eventpy.runtime.transports._backoff import Backoff

    at_cap = threading.Event()

    class Watched(Backoff):  # says when the wait has reached its cap (it grows no more)
        def next(self) -> tuple[float, bool]:
            delay, escalated = super().next()
            if self._step >= self.cap:
                at_cap.set()
            return delay, escalated

    monkeypatch.setattr(tcp, "Backoff", lambda: Watched(base=0.01, cap=0.04))
    caplog.set_level(logging.DEBUG, logger="eventpy.tcp")
    neighbor = socket.socket()
    neighbor.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    server = BrokerServer(Broker("b0"), "127.0.0.1", 0, {"b9": neighbor.getsockname()})
    stop = server.start_in_thread()
    try:
        def said(text: str) -> list:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if found := [r for r in caplog.records if text in r.getMessage()]:
                    return found
                time.sleep(0.02)
            return []

        assert at_cap.wait(30)
        neighbor.listen()

        def refuse() -> None:  # an older broker: reads the HELLO, closes without a word
            while True:
                try:
                    conn, _ = neighbor.accept()
                except OSError:
                    return
                conn.recv(65536)
                conn.close()

        threading.Thread(target=refuse, daemon=True).start()
        refusals = said("link to b9 refused: it closed the connection before sending its HELLO")
        assert refusals and refusals[0].levelno == logging.WARNING
    finally:
        stop()
        neighbor.close()


def test_a_broker_status_names_its_version_and_why_a_configured_link_is_down(closing_server):
    """Both brokers of a refused link run: `overlay status` showed them alive with no links and
    said nothing of the link of the configuration that was missing, or why."""
    server = BrokerServer(Broker("a1"), "127.0.0.1", 0, {"b9": ("127.0.0.1", closing_server)})
    stop = server.start_in_thread()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "HELLO" not in server.status()["down"].get("b9", ""):
            time.sleep(0.05)
        status = server.status()
    finally:
        stop()
    assert (status["version"], status["protocol"]) == (__version__, PROTOCOL)
    assert status["down"] == {"b9": f"it closed the connection before sending its HELLO: a broker of "
                                     f"another EventPy protocol version does so (this one speaks {PROTOCOL}, "
                                     f"eventpy {__version__}; see its log)"}


def test_overlay_status_shows_each_brokers_version_and_the_links_down(tmp_path, monkeypatch, capsys):
    import json

    from eventpy.runtime import _overlay_status

    (tmp_path / "overlay.toml").write_text('links = [["b0", "b1"]]\n[brokers.b0]\nhost = "127.0.0.1"\n'
                                           'port = 7000\n[brokers.b1]\nhost = "127.0.0.1"\nport = 7001\n')
    common = {"host": "127.0.0.1", "uptime": 10, "stats": {}, "types": {}, "connected": {}}
    old = dict(common, port=7000, pid=1)  # a broker of eventpy 0.1.0 before versions in its status
    new = dict(common, port=7001, pid=2, version="0.2.0", protocol=5,
               down={"b0": "broker b1 speaks EventPy protocol 5 (eventpy 0.2.0); broker b0 speaks protocol 4"})
    for name, status in (("b0", old), ("b1", new)):
        (tmp_path / f"{name}.pid").write_text(str(status["pid"]))
        (tmp_path / f"{name}.status.json").write_text(json.dumps(status))
    monkeypatch.setattr(_overlay_status, "_alive", lambda pid_file: True)
    monkeypatch.setattr(_overlay_status, "_silent_for", lambda status_file: 0.0)
    # exits as for a broker not serving: both run, but the overlay is cut in two
    assert _overlay_status.show_status(tmp_path) == _overlay_status.NOT_SERVING
    out = capsys.readouterr().out
    assert "│ 5 (0.2.0) │" in out and "│ ?         │" in out  # the last column
    assert ("broker b1: its link to b0 is down: broker b1 speaks EventPy protocol 5 (eventpy 0.2.0); broker b0 "
            "speaks protocol 4") in out


def test_a_node_whose_broker_came_back_on_another_protocol_does_not_say_there_is_no_broker(
        monkeypatch, caplog):
    """A broker upgraded under a running client refuses its reconnection (said once); the
    reconnection's later warnings said 'still no broker at HOST:PORT', though one answered."""
    eventpy.shutdown()
    first = BrokerServer(Broker("b0"), "127.0.0.1", 0, {})
    stop = first.start_in_thread()
    port = first.port
    again = None
    try:
        eventpy.connect(f"tcp://127.0.0.1:{port}", name="desk")
        eventpy.drain(10)
        caplog.set_level(logging.WARNING, logger="eventpy.tcp")
        monkeypatch.setattr(tcp_client, "PROTOCOL", PROTOCOL - 1)  # as if the broker were upgraded ...
        stop()
        again = BrokerServer(Broker("b0"), "127.0.0.1", port, {}).start_in_thread()  # ... and back

        refusal = (f"node desk: 127.0.0.1:{port} refuses to take it back: the broker refused it: broker b0 "
                   f"speaks EventPy protocol {PROTOCOL}")

        def said() -> tuple[list[str], list[str]]:
            """The node's refusals, and its messages after the first one."""
            messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("node desk: ")]
            at = [k for k, m in enumerate(messages) if m.startswith(refusal)]
            return [messages[k] for k in at], messages[at[0] + 1:] if at else []

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not said()[1]:  # a wait grew after the refusal
            time.sleep(0.05)
        refusals, later = said()
        assert len(refusals) == 1 and later, caplog.text
        assert all(m.startswith(f"node desk: 127.0.0.1:{port} still refuses it; reconnecting in ")
                   for m in later), later
    finally:
        eventpy.shutdown()
        if again is not None:
            again()
