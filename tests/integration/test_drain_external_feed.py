"""drain() waits for the chains of events this process started (a rally of event methods), not
for what its callbacks send on events from other processes: a trading monitor that publishes an
alert on every quote of an external feed can still drain what it sent itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import eventpy

Quote = eventpy.EventType("feed.Quote", price=float)
Alert = eventpy.EventType("feed.Alert", price=float)

FEED = textwrap.dedent('''
    import sys, time, eventpy
    Quote = eventpy.EventType("feed.Quote", price=float)
    node = eventpy.connect(sys.argv[1])
    node.advertise(Quote)
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        node.publish(Quote, price=1.0)
        time.sleep(0.0002)
    eventpy.drain(10)
''')


def test_drain_returns_while_callbacks_answer_a_feed_from_another_process(broker_server):
    server = broker_server("b0")
    url = f"tcp://127.0.0.1:{server.port}"
    node = eventpy.connect(url)
    node.advertise(Alert)
    alerts = []
    node.subscribe(Quote, "price > 0", on_event=lambda ev: node.publish(Alert, price=ev.price))
    node.subscribe(Alert, "price > 0", on_event=alerts.append)
    eventpy.drain(10)
    feed = subprocess.Popen([sys.executable, "-c", FEED, url, "20"])
    try:
        deadline = time.monotonic() + 30
        while not alerts and time.monotonic() < deadline:  # the feed runs, the callbacks answer it
            time.sleep(0.05)
        assert alerts
        node.publish(Alert, price=2.0)
        eventpy.drain(5)  # before: TimeoutError, the callbacks never stopped sending
        assert any(a.price == 2.0 for a in alerts)
        assert feed.poll() is None  # the feed was still running all along
    finally:
        feed.kill()
        feed.wait(10)


Page = eventpy.EventType("feed.Page", price=float)


def test_drain_returns_while_a_second_node_passes_on_what_the_feed_caused(broker_server):
    # quote (other process) -> alert (this process, node) -> page (this process, pager): the
    # page's origin is ours, but its chain began with the feed; before, pages kept drain() waiting
    server = broker_server("b0")
    url = f"tcp://127.0.0.1:{server.port}"
    node, pager = eventpy.connect(url), eventpy.connect(url)
    node.advertise(Alert)
    pager.advertise(Page)
    pages, rallies = [], []
    node.subscribe(Quote, "price > 0", on_event=lambda ev: node.publish(Alert, price=ev.price))
    pager.subscribe(Alert, "price > 0", on_event=lambda ev: pager.publish(Page, price=ev.price))
    pager.subscribe(Page, "price > 0", on_event=pages.append)
    # a chain this process starts is still followed to its end through both nodes
    node.subscribe(Alert, "price < 0 and price > -5", on_event=lambda ev: rallies.append(ev.price) or
                   pager.publish(Alert, price=ev.price - 1))
    eventpy.drain(10)
    feed = subprocess.Popen([sys.executable, "-c", FEED, url, "20"])
    try:
        deadline = time.monotonic() + 30
        while not pages and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pages
        node.publish(Alert, price=-1.0)
        eventpy.drain(5)  # before: TimeoutError, the pager's callbacks never stopped sending
        assert rallies == [-1.0, -2.0, -3.0, -4.0]
        assert feed.poll() is None
    finally:
        feed.kill()
        feed.wait(10)
