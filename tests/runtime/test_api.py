"""The public API contract on the embedded overlay."""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
import traceback

import pytest

import eventpy

Quote = eventpy.EventType("stocks.Quote", firm=str, price=float)


pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def test_the_contract_example():
    node = eventpy.connect()
    got = []
    sub = node.subscribe(Quote, "firm == 'IBM' and price < limit", params={"limit": 10.0}, on_event=got.append)
    node.publish(Quote, firm="IBM", price=9.5)
    node.publish(Quote, firm="IBM", price=11.0)
    node.publish(Quote, firm="ORCL", price=1.0)
    eventpy.drain(timeout=5.0)
    assert [(e.firm, e.price) for e in got] == [("IBM", 9.5)]
    assert got[0]["price"] == 9.5 and dict(got[0]) == {"firm": "IBM", "price": 9.5}
    sub.update(limit=12.0)
    node.publish(Quote, firm="IBM", price=11.0)
    eventpy.drain(timeout=5.0)
    assert [e.price for e in got] == [9.5, 11.0]
    sub.close()
    eventpy.drain(timeout=5.0)
    node.publish(Quote, firm="IBM", price=1.0)
    eventpy.drain(timeout=5.0)
    assert len(got) == 2
    s = eventpy.stats()
    for key in ("published", "delivered", "spurious", "sub_sent", "unsub_sent", "upd_sent"):
        assert key in s
    assert s["published"] == 5 and s["delivered"] == 2
    assert (s["sub_sent"], s["unsub_sent"], s["upd_sent"]) == (1, 1, 1)  # one UPD, no re-subscription


def test_resub_mode_updates_by_resubscribing():
    node = eventpy.connect(mode="resub")
    got = []
    sub = node.subscribe(Quote, "price < limit", params={"limit": 10.0}, on_event=got.append)
    sub.update(limit=20.0)
    node.publish(Quote, firm="X", price=15.0)
    eventpy.drain(timeout=5.0)
    assert [e.price for e in got] == [15.0]
    s = eventpy.stats()
    assert (s["sub_sent"], s["unsub_sent"], s["upd_sent"]) == (2, 1, 0)


def test_events_cross_nodes_and_each_subscription_gets_one_copy():
    a, b = eventpy.connect(), eventpy.connect()
    got_a, got_b = [], []
    a.subscribe(Quote, "price < 5 or firm == 'IBM'", on_event=got_a.append)  # both disjuncts match
    b.subscribe(Quote, "True", on_event=got_b.append)
    b.publish(Quote, firm="IBM", price=1.0)
    eventpy.drain(timeout=5.0)
    assert len(got_a) == 1 and len(got_b) == 1


def test_guard_names_are_resolved_against_schema_and_params():
    node = eventpy.connect()
    with pytest.raises(eventpy.GuardError, match="neither an attribute of stocks.Quote"):
        node.subscribe(Quote, "price < limit")
    with pytest.raises(eventpy.GuardError, match="both an attribute"):
        node.subscribe(Quote, "price < 3", params={"price": 1.0})
    with pytest.raises(eventpy.GuardError, match="cannot be compared with 'IBM'"):
        node.subscribe(Quote, "'IBM' < price")
    with pytest.raises(eventpy.GuardError, match="takes no arguments"):
        node.subscribe(Quote, "elapsed(3) < 3")


def test_publish_checks_the_schema():
    node = eventpy.connect()
    with pytest.raises(TypeError, match="^stocks.Quote: attribute 'price' must be float, got str"):
        node.publish(Quote, firm="IBM", price="cheap")
    with pytest.raises(TypeError, match="unknown attribute"):
        node.publish(Quote, firm="IBM", price=1.0, volume=3)
    with pytest.raises(TypeError, match="missing attribute"):
        node.publish(Quote, firm="IBM")
    node.publish(Quote, firm="IBM", price=3)  # an int is a valid float


@pytest.mark.parametrize("attrs, error", [
    ({"firm": "IBM", "price": "cheap"}, TypeError),
    ({"firm": "IBM"}, TypeError),
    ({"firm": "IBM", "price": float("nan")}, ValueError),
])
def test_a_publish_the_schema_refuses_is_raised_from_the_callers_line(attrs, error):
    # the mistake is the caller's: the traceback ends on its line, not 3-4 frames inside eventpy
    node = eventpy.connect()
    line = sys._getframe().f_lineno + 2
    with pytest.raises(error) as info:
        node.publish(Quote, **attrs)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (__file__, line)
    with pytest.raises(TypeError) as info:
        node.publish("stocks.Quote", firm="IBM", price=1.0)
    assert traceback.extract_tb(info.value.__traceback__)[-1].filename == __file__


def test_publish_refuses_integers_the_wire_cannot_carry_on_every_overlay():
    node = eventpy.connect()
    big = eventpy.EventType("Big", n=int)
    with pytest.raises(ValueError, match=r"attribute 'n' is 18446744073709551616, outside the 64-bit"):
        node.publish(big, n=2 ** 64)
    with pytest.raises(ValueError, match="64-bit"):
        node.publish(big, n=-(2 ** 63) - 1)
    node.publish(big, n=2 ** 64 - 1)
    node.publish(big, n=-(2 ** 63))


def test_integer_parameters_the_wire_cannot_carry_are_refused_at_the_call():
    # an evolving bound ships its parameters as they are: k = 2**64 made the SUB unencodable,
    # logged and dropped over TCP after subscribe had returned
    node = eventpy.connect()
    with pytest.raises(ValueError, match=r"parameter 'k' is 18446744073709551616, outside the 64-bit"):
        node.subscribe(Quote, "price < k + elapsed()", params={"k": 2 ** 64})
    sub = node.subscribe(Quote, "price < k + elapsed()", params={"k": 2 ** 64 - 1})
    with pytest.raises(ValueError, match="64-bit"):
        sub.update(k=-(2 ** 63) - 1)
    assert sub.params == {"k": 2 ** 64 - 1}  # refused before anything changed
    sub.update(k=-(2 ** 63))


def test_update_checks_parameters():
    node = eventpy.connect()
    sub = node.subscribe(Quote, "price < limit", params={"limit": 10.0})
    with pytest.raises(TypeError, match="unknown parameter 'limt'"):
        sub.update(limt=3.0)
    with pytest.raises(TypeError, match="must stay a number"):
        sub.update(limit="high")
    sub.update(limit=3)  # int for a number parameter is fine


def test_set_parameters_are_checked_against_the_attribute_their_members_are_tested_with():
    node = eventpy.connect()
    with pytest.raises(TypeError, match=r"parameter 'names': member 3 \(int\) can never equal attribute 'firm'"):
        node.subscribe(Quote, "firm in names", params={"names": {"IBM", 3}})
    sub = node.subscribe(Quote, "firm in names", params={"names": {"IBM"}})
    with pytest.raises(TypeError, match="member 1.5"):
        sub.update(names={"HP", 1.5})
    sub.update(names={"HP"})
    assert sub.params["names"] == frozenset({"HP"})


def test_callbacks_run_in_order_per_subscription():
    node = eventpy.connect()
    seen: list[int] = []
    node.subscribe(eventpy.EventType("t.Seq", i=int), "True", on_event=lambda e: seen.append(e.i))
    T = eventpy.EventType("t.Seq", i=int)
    for i in range(500):
        node.publish(T, i=i)
    eventpy.drain(timeout=10.0)
    assert seen == list(range(500))


def test_a_failing_callback_is_logged_and_isolated(caplog):
    node = eventpy.connect()
    got = []

    def boom(ev):
        if ev.price == 1.0:
            raise RuntimeError("subscriber bug")
        got.append(ev.price)

    node.subscribe(Quote, "True", on_event=boom)
    with caplog.at_level(logging.ERROR, logger="eventpy.delivery"):
        node.publish(Quote, firm="A", price=1.0)
        node.publish(Quote, firm="A", price=2.0)
        eventpy.drain(timeout=5.0)
    assert got == [2.0]
    assert any("subscriber bug" in (r.exc_text or "") or r.exc_info for r in caplog.records)
    # the log names the callback and the event, and its traceback starts in the callback
    assert ("the event callback 'test_a_failing_callback_is_logged_and_isolated.<locals>.boom' raised; the "
            "event stocks.Quote(firm='A', price=1.0) is dropped for this subscriber") in caplog.text
    record = next(r for r in caplog.records if r.exc_info)
    assert traceback.extract_tb(record.exc_info[2])[0].name == "boom"


def test_sys_exit_in_a_callback_is_logged_and_later_events_are_delivered(caplog):
    node = eventpy.connect()
    got = []

    def leave(ev):
        got.append(ev.price)
        if ev.price == 1.0:
            sys.exit("the handler wants to stop")

    node.subscribe(Quote, "True", on_event=leave)
    with caplog.at_level(logging.ERROR, logger="eventpy.delivery"):
        for price in (0.0, 1.0, 2.0, 3.0):
            node.publish(Quote, firm="A", price=price)
        eventpy.drain(timeout=5.0)  # before, the subscription stalled and every drain timed out
    assert got == [0.0, 1.0, 2.0, 3.0]
    assert "raised SystemExit; a delivery thread cannot stop the process" in caplog.text


def test_drain_from_a_callback_says_it_cannot_wait_for_itself():
    node = eventpy.connect()
    errors = []

    def inner(ev):
        try:
            eventpy.drain(timeout=30.0)
        except RuntimeError as e:
            errors.append(str(e))

    node.subscribe(Quote, "True", on_event=inner)
    node.publish(Quote, firm="A", price=1.0)
    eventpy.drain(timeout=5.0)  # would wait out the inner drain's 30 s before
    assert len(errors) == 1 and "not from an event callback" in errors[0]


def test_drain_returns_when_a_node_is_closed_while_it_waits():
    a, p = eventpy.connect(), eventpy.connect()
    T = eventpy.EventType("t.Closing", n=int)
    got = []

    def cb(ev):
        got.append(ev.n)
        if ev.n == 10:
            a.close()  # the flush of a's drain would never be answered: its link is gone

    a.subscribe(T, "True", on_event=cb)
    eventpy.drain(5.0)
    for n in range(100):
        p.publish(T, n=n)
    eventpy.drain(5.0)  # was a TimeoutError after 5 s
    assert got[:11] == list(range(11))


def test_drain_waits_for_the_running_callback_of_a_closed_subscription():
    node = eventpy.connect()
    running, finished = threading.Event(), threading.Event()

    def slow(ev):
        running.set()
        time.sleep(0.5)
        finished.set()

    sub = node.subscribe(Quote, "True", on_event=slow)
    node.publish(Quote, firm="A", price=1.0)
    assert running.wait(5.0)
    sub.close()
    eventpy.drain(5.0)  # "every delivered event's callback has returned"
    assert finished.is_set()


def test_argument_mistakes_are_named():
    node = eventpy.connect()
    with pytest.raises(TypeError, match="the guard is the text of a condition"):
        node.subscribe(Quote, 42)
    with pytest.raises(TypeError, match="params is a mapping of parameter names to values, not a list"):
        node.subscribe(Quote, "price < x", params=[("x", 1.0)])
    with pytest.raises(ValueError, match="confirm needs a positive timeout in seconds, not '1'"):
        node.confirm("1")
    node.close()
    with pytest.raises(RuntimeError, match="is closed"):
        node.confirm(5.0)  # at once, not after the timeout


def test_drain_waits_for_callbacks_and_times_out():
    node = eventpy.connect()
    release = threading.Event()
    done = []
    node.subscribe(Quote, "True", on_event=lambda e: (release.wait(5), done.append(e)))
    node.publish(Quote, firm="A", price=1.0)
    with pytest.raises(TimeoutError):
        eventpy.drain(timeout=0.3)
    release.set()
    eventpy.drain(timeout=5.0)
    assert len(done) == 1


def test_a_drain_held_by_another_nodes_callback_names_that_node():
    """The embedded broker times a drain's budget as a broker process does: the node whose
    callback does not return is named, not the broker."""
    publisher, subscriber = eventpy.connect(name="pub"), eventpy.connect(name="slow-sub")
    release = threading.Event()
    subscriber.subscribe(Quote, "True", on_event=lambda e: release.wait(10))
    publisher.publish(Quote, firm="A", price=1.0)
    try:
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="client slow-sub at broker embedded did not answer") as raised:
            eventpy.drain(timeout=1.0)
        waited = time.monotonic() - start
    finally:
        release.set()
    eventpy.drain(timeout=5.0)  # answered once the callback returned
    # the time it gave up after, which is less than the timeout (the broker's share of it;
    # before, the message said "within 1.0s" after about 0.5 s)
    said = float(re.search(r"within ([0-9.]+)s of the drain's 1s", str(raised.value)).group(1))
    assert said < 1.0 and abs(said - waited) < 0.2


def test_sets_and_switches_as_parameters():
    node = eventpy.connect()
    got = []
    sub = node.subscribe(Quote, "on and firm in watch", params={"on": True, "watch": {"IBM"}}, on_event=got.append)
    node.publish(Quote, firm="IBM", price=1.0)
    eventpy.drain(timeout=5.0)
    sub.update(watch={"ORCL"})
    node.publish(Quote, firm="IBM", price=2.0)
    node.publish(Quote, firm="ORCL", price=3.0)
    eventpy.drain(timeout=5.0)
    sub.update(on=False)
    node.publish(Quote, firm="ORCL", price=4.0)
    eventpy.drain(timeout=5.0)
    assert [e.price for e in got] == [1.0, 3.0]


def test_a_numeric_in_whose_set_cannot_be_computed_holds_for_no_element_until_it_can():
    """Python computes `{limit, limit / d}` whole before testing membership: with d == 0 it
    raises, so the guard holds for no price (not even limit), at the broker and locally; once d
    changes, both elements count again."""
    node = eventpy.connect()
    got = []
    sub = node.subscribe(Quote, "price in {limit, limit / d}", params={"limit": 4.0, "d": 0}, on_event=got.append)
    node.publish(Quote, firm="A", price=4.0)
    eventpy.drain(timeout=5.0)
    sub.update(d=2)
    for price in (4.0, 2.0, 3.0):
        node.publish(Quote, firm="A", price=price)
    eventpy.drain(timeout=5.0)
    assert [e.price for e in got] == [4.0, 2.0]
    assert eventpy.stats()["spurious"] == 0  # the broker filtered the first one, not the client


def test_context_managers_unsubscribe_and_close():
    got = []
    with eventpy.connect() as node:
        with node.subscribe(Quote, "True", on_event=got.append):
            node.publish(Quote, firm="A", price=1.0)
            eventpy.drain(timeout=5.0)
        eventpy.drain(timeout=5.0)
        node.publish(Quote, firm="A", price=2.0)
        eventpy.drain(timeout=5.0)
    assert [e.price for e in got] == [1.0]


def test_drain_needs_a_positive_timeout():
    for timeout in (-1, 0, "5", None, True):
        with pytest.raises(ValueError, match="drain needs a positive timeout in seconds"):
            eventpy.drain(timeout)


def test_unknown_broker_urls_are_refused_clearly(monkeypatch):
    for url in ("udp://127.0.0.1:7100", "tcp://127.0.0.1:71OO", "tcp://127.0.0.1:99999", "tcp://127.0.0.1"):
        monkeypatch.setenv("EVENTPY_BROKER", url)
        with pytest.raises(ValueError, match="use tcp://HOST:PORT with a port in 1..65535"):
            eventpy.connect()
    monkeypatch.setenv("EVENTPY_BROKER", "tcp://127.0.0.1:1")  # nothing listens there
    with pytest.raises(ConnectionError, match="cannot attach to tcp://127.0.0.1:1"):
        eventpy.connect()


def test_a_refused_connection_stays_a_connection_refused_error(monkeypatch):
    """A program that retries on ConnectionRefusedError (a broker not up yet) can still catch
    it: the message gained the URL and a hint, the exception kept its class (it was a plain
    ConnectionError, and so was the EVENTPY_BROKER-prefixed one)."""
    with pytest.raises(ConnectionRefusedError, match="is a broker running there"):
        eventpy.connect("tcp://127.0.0.1:1")
    monkeypatch.setenv("EVENTPY_BROKER", "tcp://127.0.0.1:1")
    with pytest.raises(ConnectionRefusedError, match="^EVENTPY_BROKER: cannot attach"):
        eventpy.connect()


def test_conflicting_embedded_configuration_is_refused():
    eventpy.connect(matcher="poset")
    with pytest.raises(ValueError, match="already runs with"):
        eventpy.connect(matcher="naive")


def test_publish_returns_at_once_while_a_subscriber_is_slow():
    node = eventpy.connect()
    gate = threading.Event()
    node.subscribe(Quote, "True", on_event=lambda e: gate.wait(5))
    start = time.perf_counter()
    for _ in range(50):
        node.publish(Quote, firm="A", price=1.0)
    assert time.perf_counter() - start < 1.0
    gate.set()
    eventpy.drain(timeout=10.0)


def test_a_script_that_ends_without_drain_still_runs_its_callbacks():
    """publish returns at once; when the script ends right after, the exit hook drains the embedded
    overlay, so the callbacks owed for what it published run (in order, once each)."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent('''
        import eventpy
        node = eventpy.connect()
        Quote = eventpy.EventType("stocks.Quote", firm=str, price=float)
        node.subscribe(Quote, "price < 10.0", on_event=lambda ev: print(ev.price))
        for i in range(200):
            node.publish(Quote, firm="IBM", price=float(i % 20))
    ''')
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("EVENTPY_BROKER", None)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.split() == [str(float(i % 20)) for i in range(200) if i % 20 < 10]


def _script(text: str):
    import os
    import subprocess
    import textwrap
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("EVENTPY_BROKER", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(text)], capture_output=True, text=True,
                          timeout=60, env=env)


def test_callbacks_keep_running_after_the_main_thread_has_returned():
    # a worker thread keeps the program alive: its events are delivered (the delivery threads
    # were those of concurrent.futures, which refuse work once the main thread has returned)
    out = _script('''
        import threading, time, eventpy
        node = eventpy.connect()
        T = eventpy.EventType("t.N", n=int)
        got = []
        node.subscribe(T, "True", on_event=lambda ev: got.append(ev.n))

        def worker():
            time.sleep(0.3)  # the main thread has returned by now
            for n in range(500):
                node.publish(T, n=n)
            eventpy.drain(10)
            print(len(got))

        threading.Thread(target=worker).start()
    ''')
    assert out.returncode == 0 and out.stdout.split() == ["500"], out.stderr


def test_callbacks_that_publish_at_exit_run_to_the_end_of_their_chains():
    out = _script('''
        import eventpy
        node = eventpy.connect()
        T = eventpy.EventType("t.Chain", chain=int, depth=int)

        def step(ev):
            print(ev.chain, ev.depth)
            if ev.depth < 30:
                node.publish(T, chain=ev.chain, depth=ev.depth + 1)

        node.subscribe(T, "True", on_event=step)
        for chain in range(5):
            node.publish(T, chain=chain, depth=0)
    ''')  # ends without drain: the exit drain repeats while the callbacks publish
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert len(out.stdout.splitlines()) == 5 * 31


def test_advertise_takes_an_event_type_or_an_event_method_and_refuses_anything_else():
    node = eventpy.connect()
    node.advertise(eventpy.EventType("adv.Tick", n=int))
    with pytest.raises(TypeError, match="advertise needs an EventType or an event method of an .epy class, got int"):
        node.advertise(42)
    eventpy.shutdown()


def test_connect_arguments_of_the_wrong_type_or_unknown_names_are_one_line_errors():
    """Checked before anything is attached, for the embedded overlay and for a URL alike (QA found
    an AttributeError from urllib for connect(27200), and matcher="bogus" accepted over TCP)."""
    with pytest.raises(TypeError) as e:
        eventpy.connect(27200)
    assert str(e.value) == "connect: url must be a str such as 'tcp://127.0.0.1:7100', not int 27200"
    with pytest.raises(TypeError, match=r"^connect: name must be a str, not int 5$"):
        eventpy.connect(name=5)
    for url in (None, "tcp://127.0.0.1:1"):
        with pytest.raises(ValueError, match=r"^unknown matcher 'bogus'; choose naive, poset, fastint$"):
            eventpy.connect(url, matcher="bogus")
        with pytest.raises(ValueError, match=r"^unknown summary 'lub'; choose attribute, poset$"):
            eventpy.connect(url, summary="lub")
        with pytest.raises(ValueError, match=r"^unknown mode 'resubscribe'; choose parametric, resub$"):
            eventpy.connect(url, mode="resubscribe")


def test_a_broker_url_with_a_path_query_or_user_is_refused():
    for url, part in (("tcp://127.0.0.1:7100/some/path", "a path '/some/path'"),
                      ("tcp://127.0.0.1:7100?x=1", "a query 'x=1'"), ("tcp://me@127.0.0.1:7100", "a user 'me'"),
                      ("tcp://127.0.0.1:7100#f", "a fragment 'f'")):
        with pytest.raises(ValueError) as e:
            eventpy.connect(url)
        assert str(e.value) == f"cannot attach to {url!r}: a broker URL is tcp://HOST:PORT, without {part}"


Hop = eventpy.EventType("game.Hop", n=int)


def test_drain_waits_for_the_events_that_callbacks_publish_in_turn():
    # DESIGN §1: drain waits until the overlay is quiet; a barrier alone returned while the second
    # event of a rally was still on its way (a game read its score after one hop of ten)
    node = eventpy.connect()
    got = []

    def hop(e):
        got.append(e.n)
        if e.n < 10:
            node.publish(Hop, n=e.n + 1)

    node.subscribe(Hop, "n >= 0", on_event=hop)
    node.publish(Hop, n=1)
    eventpy.drain(5.0)
    assert got == list(range(1, 11))


def test_drain_says_when_callbacks_never_stop_publishing():
    node = eventpy.connect()
    stop = threading.Event()

    def rally(e):
        if not stop.is_set():
            node.publish(Hop, n=e.n + 1)

    node.subscribe(Hop, "n >= 0", on_event=rally)
    node.publish(Hop, n=0)
    with pytest.raises(TimeoutError, match="event callbacks were still publishing"):
        eventpy.drain(0.5)
    stop.set()
    eventpy.drain(5.0)


def test_shutdown_closes_what_a_remote_attachment_opened():
    """A TCP attachment's asyncio loop was stopped but never closed: its self-pipe sockets and
    selector stayed open until the garbage collector found them (a ResourceWarning under -W
    error), two or three descriptors for each overlay a long-running program had tried."""
    import os

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    eventpy.shutdown()
    before = fds()
    for _ in range(3):
        with pytest.raises(ConnectionRefusedError):
            eventpy.connect("tcp://127.0.0.1:1")
        eventpy.shutdown()
    assert fds() == before


def test_elapsed_reads_what_the_guard_reads_for_an_event_published_now():
    node = eventpy.connect()
    Pos = eventpy.EventType("api.elapsed.Pos", x=float)
    got = []
    sub = node.subscribe(Pos, "x <= elapsed()", on_event=lambda ev: got.append(ev.x))
    t = eventpy.elapsed(sub)
    assert t >= 0
    node.publish(Pos, x=t)          # published after the reading: its elapsed() is at least t
    node.publish(Pos, x=t + 30.0)   # not for another 30 s
    eventpy.drain(timeout=10)
    assert got == [t]
    plain = node.subscribe(Pos, "x < 1")
    with pytest.raises(ValueError, match="no guard of this subscription reads elapsed"):
        eventpy.elapsed(plain)
    sub.close()
    with pytest.raises(RuntimeError, match="closed") as info:
        eventpy.elapsed(sub)
    # the program's mistake: raised from its own line, no frame of eventpy below it
    assert not [f for f in traceback.extract_tb(info.value.__traceback__) if "/eventpy/" in f.filename]
