"""eventpy.aio over the real overlay (`eventpy overlay up`, three broker processes in a line) and
Ctrl-C during a flood: the program's `finally` runs within seconds.

With the hand-off README used to show (one call_soon_threadsafe per event), a flood queued a
handle per event in the loop's ready queue; the cancellation Ctrl-C makes waited behind them,
30-190 s before the `finally` ran."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import eventpy
from eventpy import aio

from ._procs import ROOT

Q = eventpy.EventType("aio.TcpQ", n=int)


def test_a_flood_across_the_overlay_reaches_a_slow_consumer_complete_and_in_order(overlay):
    count = 5000

    async def main():
        subscriber = eventpy.connect(f"tcp://127.0.0.1:{overlay.port + 2}", name="aio-sub")
        publisher = eventpy.connect(f"tcp://127.0.0.1:{overlay.port}", name="aio-pub")
        publisher.advertise(Q)
        await aio.drain(30)
        sub = aio.subscribe(subscriber, Q, "n >= start", {"start": 0}, maxsize=16)
        await sub.confirm(30)

        async def flood():
            for i in range(count):
                await aio.publish(publisher, Q, n=i)
                if i % 200 == 0:
                    await asyncio.sleep(0)

        publishing = asyncio.create_task(flood())
        got = []
        async for event in sub:
            got.append(event.n)
            if len(got) % 100 == 0:
                await asyncio.sleep(0.01)  # slower than the flood: the inbox fills
            if len(got) == count:
                break
        await publishing
        await aio.drain(60)
        extra = sub.inbox.qsize()
        sub.close()
        return got, extra, sub.inbox.peak

    got, extra, peak = asyncio.run(main())
    assert got == list(range(count)) and extra == 0  # none lost, none twice, in order
    assert peak == 16


PROGRAM = textwrap.dedent('''
    import asyncio, sys
    import eventpy
    from eventpy import aio

    Q = eventpy.EventType("aio.Flood", n=int)

    async def main():
        node = eventpy.connect()
        sub = aio.subscribe(node, Q, "n >= 0", maxsize=64)
        node.advertise(Q)
        await sub.confirm(30)

        async def flood():
            i = 0
            while True:
                await aio.publish(node, Q, n=i)
                i += 1
                if i % 100 == 0:
                    await asyncio.sleep(0)

        publishing = asyncio.create_task(flood())
        taken = 0
        try:
            async for event in sub:
                taken += 1
                if taken == 300:
                    print("consuming", flush=True)
                await asyncio.sleep(0.002)
        finally:
            print("finally", flush=True)
            sub.close()

    asyncio.run(main())
''')


@pytest.mark.parametrize("where", ["embedded", "tcp"])
def test_ctrl_c_during_a_flood_reaches_finally_within_seconds(where, tmp_path, request):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVENTPY_BROKER", None)
    if where == "tcp":
        env["EVENTPY_BROKER"] = request.getfixturevalue("eventpy_broker").url
    (tmp_path / "flood.py").write_text(PROGRAM)
    proc = subprocess.Popen([sys.executable, "flood.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "consuming\n", proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(1.0)  # the flood goes on: the inbox is full, deliveries wait for room
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = proc.stdout.readline()
        to_finally = time.monotonic() - sent
        proc.wait(timeout=120)
        to_exit = time.monotonic() - sent
        stderr = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert line == "finally\n", stderr
    assert to_finally < 10, to_finally  # generous for a loaded machine; it takes milliseconds
    assert to_exit < 30, to_exit  # the end of the program (the exit drain: up to 5 s) included
    # asyncio.run's own KeyboardInterrupt, and nothing from eventpy: no error logged at exit, no
    # "Event loop is closed" for events still owed, no thread that died
    assert stderr.splitlines()[-1] == "KeyboardInterrupt", stderr
    for said in ("Event loop is closed", "Exception in thread", "at exit", "shutdown:", "lost"):
        assert said not in stderr, stderr
