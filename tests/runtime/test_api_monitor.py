"""The update monitor through the public API: `connect(rum=...)` and `subscribe(..., rum=...)`."""

from __future__ import annotations

import time

import pytest

import eventpy

Quote = eventpy.EventType("stocks.Quote", firm=str, price=float)


pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def rising_updates(sub, n=60):
    for i in range(n):  # a limit rising 100 times a second: far above freq_approx
        sub.update(limit=10.0 + i * 0.1)
        time.sleep(0.01)


def test_a_monitored_subscription_sends_fewer_updates_and_stays_strict():
    node = eventpy.connect(rum={"window": 0.5})
    got = []
    sub = node.subscribe(Quote, "price < limit", params={"limit": 10.0}, on_event=got.append)
    rising_updates(sub)
    eventpy.drain(timeout=5.0)
    stats = node.stats()
    assert 0 < stats["upd_sent"] < 60 and stats["rum_suppressed"] > 0
    for price in (15.0, 15.85, 15.95, 20.0):  # the exact limit is 15.9; the broker's may be higher
        node.publish(Quote, firm="X", price=price)
    eventpy.drain(timeout=5.0)
    assert [e.price for e in got] == [15.0, 15.85]  # the local filter keeps delivery strict


def test_the_exact_subscription_is_reinstated_after_a_calm_window():
    node = eventpy.connect()
    sub = node.subscribe(Quote, "price < limit", params={"limit": 10.0}, rum={"window": 0.3})
    rising_updates(sub, 40)
    deadline = time.monotonic() + 5.0
    while sub._state.wire != sub._state.values and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sub._state.wire == sub._state.values
    assert node.stats()["rum_settled"] >= 1


def test_without_rum_every_update_is_sent_and_false_turns_a_node_default_off():
    node = eventpy.connect(rum=True)
    sub = node.subscribe(Quote, "price < limit", params={"limit": 10.0}, rum=False)
    rising_updates(sub, 20)
    eventpy.drain(timeout=5.0)
    assert node.stats()["rum_suppressed"] == 0
    assert sub._state.monitor is None


def test_a_bad_rum_argument_is_a_clear_error():
    with pytest.raises(TypeError, match="rum= takes"):
        eventpy.connect(rum="fast")
    node = eventpy.connect()
    with pytest.raises(ValueError, match="window"):
        node.subscribe(Quote, "price < limit", params={"limit": 1.0}, rum={"window": -1})


def test_the_exact_subscription_is_back_once_the_rate_falls_below_freq_approx():
    # The node's timer is set for the moment the count of changes within the window falls below
    # freq_approx (at least min_history changes, 4, within the 0.5 s window), so the
    # exact limit is back then, not up to a window later.
    node = eventpy.connect()
    sub = node.subscribe(Quote, "price < limit", params={"limit": 10.0}, rum={"window": 0.5})
    sent = []
    for i in range(30):
        sub.update(limit=10.0 + 5.0 * (i % 2))  # oscillating 100 times a second
        sent.append(time.time())  # the node's clock
        time.sleep(0.01)
    assert node.stats()["rum_suppressed"] > 0
    fell = sent[-4] + 0.5  # fewer than 4 changes within the window from here on
    while sub._state.wire != sub._state.values and time.time() < fell + 2.0:
        time.sleep(0.005)
    back = time.time()
    assert sub._state.wire == sub._state.values
    assert back < fell + 0.1, back - fell


def test_confirm_with_the_monitor_swallowing_updates_and_after_close():
    # 000 §9.3 with the monitor: an update the approximation already covers sends nothing, and
    # confirm then vouches for what the brokers hold, which covers the exact guard; delivery stays
    # strict. After the node's close there is nothing to confirm.
    node = eventpy.connect(rum={"window": 2.0})
    pub = eventpy.connect()
    pub.advertise(Quote)
    got = []
    sub = node.subscribe(Quote, "price < limit", params={"limit": 10.0}, on_event=lambda e: got.append(e.price))
    sub.confirm(timeout=5.0)
    for i in range(20):
        sub.update(limit=10.0 + (i % 2))  # oscillating far above freq_approx
    sub.confirm(timeout=5.0)  # while the approximation is in force
    assert node._local.core.approximating(sub._state)
    swallowed = node.stats()["rum_suppressed"]
    sub.update(limit=10.5)  # inside the approximation: nothing to send
    assert node.stats()["rum_suppressed"] == swallowed + 1
    sub.confirm(timeout=5.0)
    for price in (10.2, 10.7, 11.5):
        pub.publish(Quote, firm="X", price=price)
    eventpy.drain(timeout=5.0)
    assert got == [10.2]  # the exact limit is 10.5 whatever the broker holds
    sub.close()
    sub.confirm(timeout=5.0)  # the UNSUB is in force
    node.close()
    with pytest.raises(RuntimeError, match="closed"):
        eventpy.confirm(sub, timeout=1.0)


@pytest.mark.parametrize("knobs, error, message", [
    ({"window": float("inf")}, ValueError, "window must be positive and finite, not inf"),
    ({"freq_approx": float("inf")}, ValueError, "freq_approx must be positive and finite"),
    ({"window": 1e200, "freq_approx": 1e200}, ValueError, "times freq_approx"),
    ({"min_history": 4.5}, TypeError, "min_history is a whole number of changes, not float 4.5"),
    ({"min_history": float("nan")}, TypeError, "min_history is a whole number"),
    ({"window": "1"}, TypeError, "window is a number, not str '1'"),
    ({"window": None}, TypeError, "window is a number, not NoneType"),
    ({"window": True}, TypeError, "window is a number, not bool"),
    ({"windw": 1.0}, TypeError, "rum= knows window, freq_approx and min_history, not windw"),
])
def test_every_monitor_knob_it_cannot_use_is_refused_when_given(knobs, error, message):
    # Before, an infinite window or a fractional min_history was taken, and the subscription's
    # first update raised (OverflowError, an index error) after the exact value was stored
    # locally and before it was sent: the broker kept the old limit and the events under the new
    # one were never delivered. A string window raised "'>' not supported between ...".
    node = eventpy.connect()
    with pytest.raises(error, match=message):
        node.subscribe(Quote, "price < limit", params={"limit": 1.0}, rum=knobs)
    with pytest.raises(error, match=message):
        eventpy.connect(rum=knobs)
    assert not node._local.core.subs  # nothing was subscribed


def test_a_large_but_usable_monitor_is_taken_and_updates_reach_the_broker():
    node = eventpy.connect()
    got = []
    sub = node.subscribe(Quote, "price < limit", params={"limit": 1.0}, on_event=got.append,
                         rum={"window": 1e6, "freq_approx": 1e-3, "min_history": 10**6})
    for i in range(10):
        sub.update(limit=float(i))
    node.publish(Quote, firm="X", price=8.5)
    eventpy.drain(timeout=5.0)
    assert [e.price for e in got] == [8.5]


def test_closed_monitored_subscriptions_are_not_kept_by_the_node():
    # A game makes and drops objects quickly on a node with the monitor on. Before, the node's
    # timer bookkeeping kept every subscription ever updated (with its callback and what that
    # reaches) until a timer fired, which never happens while nothing is approximated.
    import gc
    import weakref

    class Player:
        def seen(self, event):
            pass

    node = eventpy.connect(rum=True)
    players = []
    for i in range(200):
        player = Player()
        sub = node.subscribe(Quote, "price < limit", params={"limit": 1.0}, on_event=player.seen)
        sub.update(limit=2.0)  # one change: far below freq_approx, sent exactly
        sub.close()
        players.append(weakref.ref(player))
    del player, sub
    gc.collect()
    assert sum(p() is not None for p in players) == 0


def test_eventpy_rum_turns_the_monitor_on_for_the_process_and_its_epy_objects(monkeypatch):
    """An .epy program does not make the node its objects use, so it had no way to turn the
    monitor on (000 §6 'per process'): EVENTPY_RUM does, for every connect() that does not say."""
    import sys
    import textwrap
    import traceback

    from eventpy.compiler import compile_source

    def load(text: str, name: str) -> dict:
        ns = {"__name__": name}
        exec(compile(compile_source(textwrap.dedent(text), f"{name}.epy", name), f"{name}.epy", "exec"), ns)
        return ns

    monkeypatch.setenv("EVENTPY_RUM", "window=0.5,freq_approx=8")
    node = eventpy.connect()
    assert (node._rum.window, node._rum.freq_approx, node._rum.min_history) == (0.5, 8.0, 4)
    assert eventpy.connect(rum=False)._rum is None  # a program's own choice wins
    ns = load('''
        class Band:
            def __init__(self, limit: float):
                self.limit = limit
                self.got = []

            event def quote(self, firm: str, price: float) when price < self.limit:
                self.got.append(price)
    ''', name="band_rum")
    band = ns["Band"](10.0)
    for i in range(60):  # far above freq_approx
        band.limit = 10.0 + i * 0.1
        time.sleep(0.01)
    eventpy.drain(timeout=5.0)
    [sub] = eventpy.runtime.lang.subscriptions_of(band)
    assert sub._state.monitor is not None and sub._node.stats()["rum_suppressed"] > 0
    for price in (15.0, 15.85, 15.95):  # the exact limit is 15.9
        ns["Band"].quote("X", price)
    eventpy.drain(timeout=5.0)
    assert band.got == [15.0, 15.85]  # strict whatever the brokers hold

    for text, words in (("fast", "EVENTPY_RUM='fast': use 1"), ("window=x", "EVENTPY_RUM: window='x' is not"),
                        ("windw=2", "EVENTPY_RUM: the knobs are window, freq_approx, min_history, not 'windw'"),
                        ("window=-1", "EVENTPY_RUM='window=-1': the monitor's window must be positive"),
                        ("min_history=2", "EVENTPY_RUM='min_history=2': a cubic spline needs at least 4")):
        monkeypatch.setenv("EVENTPY_RUM", text)
        line = sys._getframe().f_lineno + 2
        with pytest.raises((TypeError, ValueError)) as info:
            eventpy.connect()
        assert str(info.value).startswith(words), str(info.value)
        assert traceback.extract_tb(info.value.__traceback__)[-1][:2] == (__file__, line)
    monkeypatch.setenv("EVENTPY_RUM", "0")
    assert eventpy.connect()._rum is None
