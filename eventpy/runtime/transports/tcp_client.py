"""The TCP transport, client side: a process attaches its nodes to one broker over asyncio streams
(its own loop on a daemon thread), the same `ClientCore` as in the embedded overlay.

A client's messages stay in its node's outbox until the writer takes them, after the socket
drained, so a lagging broker lets UPDs coalesce (backpressure reaches the client; past
MAX_OUTBOX, publish waits). When its broker goes away the node reconnects with backoff and
re-establishes its advertisements and subscriptions with their current values.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
import time

from ..._version import __version__
from .._executor import DeliveryPool
from ..embedded import Batches, LocalNode
from .._client_caps import NO_CAPS, ClientCaps
from ..messages import Hello, Limits, Upd
from ..wire import DEFAULT_MAX_FRAME, FrameDecoder, WireError, encode, encode_many
from ._backoff import Backoff
from ._handshake import (PROTOCOL, _READ, ClosedBeforeHello, Early, ProtocolMismatch, Refusal, _hello,
                         _read_more, authenticate, secret_from_env)

log = logging.getLogger("eventpy.tcp")


_SLICE = 128  # messages decoded and handed on at a time
HELLO_TIMEOUT = 10.0  # seconds a broker has to answer a new connection with its HELLO
ATTACH_TIMEOUT = 15.0  # seconds `attach` waits for the whole first connection
# seconds a closed node whose broker is away keeps trying to send what it still holds, counted
# from its close(): the bound the end of a program has (`stop`), so a long-running service that
# closes a node does not keep it, and its retries, for ever while the broker stays away
CLOSE_BUDGET = 5.0


class AttachError(ConnectionError):
    """Why a connection to the broker could not be used, complete in itself: the peer is not an
    EventPy broker, or authentication failed (`eventpy.connect` adds no hint to start a broker)."""


def receive_read(node: LocalNode, decoder: FrameDecoder, data: bytes) -> None:
    """Hand what one read completed to the node: decoded _SLICE messages at a time, handed to
    the delivery threads once. A 64 KiB read holds ~1,400 events; decoded all at once, they (3
    tracked objects each) outlived several of the garbage collector's young collections and
    full collections followed (~0.3 us per event); one hand-off per slice instead of per read
    cost as much again in thread wake-ups."""
    batches: Batches = {}
    try:
        msgs = decoder.feed(data, _SLICE)
        while msgs:
            node.gather(msgs, batches)
            if len(msgs) < _SLICE:
                break
            msgs = decoder.feed(b"", _SLICE)
    finally:  # also before the messages ahead of a bad frame (WireError.before) are delivered
        node.submit(batches)


class TcpOverlay:
    """A process's attachment to a broker over TCP: one connection per node, one asyncio loop."""

    _names = itertools.count(1)

    def __init__(self, host: str, port: int, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.host, self.port = host, port
        self.max_frame = max_frame
        self.mode = "parametric"
        self.pool = DeliveryPool()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="eventpy-tcp", daemon=True)
        self._thread.start()
        # Keyed by the node itself, not by its name: a closed node still retrying under
        # CLOSE_BUDGET and a new node given its name live side by side (the broker, which had
        # lost the old one, takes the new one), and keyed by the name the new one was said to be
        # reconnecting and inherited the old one's close time
        self._events: dict[LocalNode, asyncio.Event] = {}  # wakes the node's writer
        self._writers: dict[LocalNode, asyncio.StreamWriter] = {}
        self._writing: dict[LocalNode, asyncio.Task] = {}  # each node's writer, while connected
        self._runs: dict[LocalNode, asyncio.Task] = {}  # each node's connection keeper (`_run`)
        self._lost_at: dict[LocalNode, float] = {}  # when it lost its connection (time.monotonic), until back
        # set (on the loop) by the node's close(), so that a reconnection wait ends at once; and
        # when the close came (time.monotonic), from which CLOSE_BUDGET counts
        self._closing: dict[LocalNode, asyncio.Event] = {}
        self._closed_at: dict[LocalNode, float] = {}
        self.edge = f"{self.host}:{self.port}"  # until the broker's HELLO names it

    def config(self) -> dict:
        return {"url": f"tcp://{self.host}:{self.port}", "mode": self.mode}

    def edge_name(self) -> str:
        """The broker this process is attached to (as it introduced itself)."""
        return self.edge

    def attach(self, name: str | None = None, mode: str | None = None) -> LocalNode:
        """A new node with its own connection. `mode`: the one the caller expects; the broker's
        HELLO says the overlay's, and another is a ValueError."""
        name = name or f"{os.uname().nodename}-{os.getpid()}-{next(self._names)}"
        fut = asyncio.run_coroutine_threadsafe(self._open(name, mode), self.loop)
        try:
            return fut.result(timeout=ATTACH_TIMEOUT)
        except TimeoutError:  # concurrent.futures': it says nothing of what was waited for
            fut.cancel()
            raise ConnectionError(f"no connection within {ATTACH_TIMEOUT:g} s") from None

    async def _connect(self, name: str) -> tuple:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        secret = secret_from_env()
        writer.write(encode(Hello(name, "client", PROTOCOL, auth=secret is not None)))
        decoder = FrameDecoder(self.max_frame)
        hello, early = await self._broker_hello(reader, writer, decoder)
        self.edge = hello.node
        if hello.mode:
            self.mode = hello.mode
        if secret is None and hello.auth:
            writer.close()
            raise AttachError("the broker requires authentication: set EVENTPY_SECRET")
        if secret is not None and not hello.auth:
            writer.close()
            raise AttachError("authentication with the broker failed: it has no secret")
        try:
            await authenticate(secret, name, hello.node, reader, writer, decoder, early)
        except (WireError, asyncio.TimeoutError) as e:
            writer.close()
            raise AttachError(f"authentication with the broker failed: {e}") from None
        caps = await self._broker_limits(reader, writer, decoder, early)
        return reader, writer, decoder, early, caps

    async def _broker_limits(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                             decoder: FrameDecoder, early: Early) -> ClientCaps:
        """The broker's per-client limits, its first message after the handshake (protocol 5):
        known before `connect` returns, so that the program's first `subscribe` is checked. A
        peer that sends something else first (a bad frame) tells none: the node checks nothing,
        and the link goes on to handle (or close on) what it sent, as before there were limits."""
        deadline = asyncio.get_running_loop().time() + HELLO_TIMEOUT
        try:
            while not early and early.error is None:
                await _read_more(reader, decoder, early, deadline - asyncio.get_running_loop().time(),
                                 "the broker closed the connection after its HELLO")
        except asyncio.TimeoutError:
            writer.close()
            raise AttachError(f"no LIMITS from the broker within {HELLO_TIMEOUT:g} s of its HELLO (a broker of "
                              "protocol 5 sends them at once)") from None
        except ConnectionError as e:  # e.g. a broker stopping: as a connection lost, retried
            writer.close()
            raise ConnectionError(f"{e} (before its LIMITS)") from None
        if not early or type(early[0]) is not Limits:
            return NO_CAPS
        return ClientCaps.from_wire(early.pop(0).limits)

    async def _broker_hello(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            decoder: FrameDecoder) -> tuple:
        """The broker's HELLO; a peer that answers anything else, or nothing, is not one."""
        try:
            return await _hello(reader, decoder, HELLO_TIMEOUT)
        except ProtocolMismatch as e:  # a broker that did not refuse us first (none does, today)
            writer.close()
            raise AttachError(f"{e} (eventpy {__version__}): run the client and the brokers with one "
                              "eventpy version") from None
        except ClosedBeforeHello as e:
            writer.close()
            raise AttachError(f"{e} (an older EventPy broker does so to a client of another protocol "
                              f"version: this client speaks {PROTOCOL}, eventpy {__version__}; the broker's log "
                              "says which it speaks)") from None
        except Refusal as e:
            writer.close()
            raise AttachError(f"the broker refused it: {e}") from None
        except WireError:  # e.g. an HTTP server's answer read as a frame length
            writer.close()
            raise AttachError("it is not an EventPy broker (it did not answer with a HELLO)") from None
        except asyncio.TimeoutError:
            writer.close()
            raise AttachError(f"timed out after {HELLO_TIMEOUT:g} s waiting for the broker's HELLO "
                              "(is it an EventPy broker?)") from None

    async def _open(self, name: str, mode: str | None = None) -> LocalNode:
        conn = await self._connect(name)  # the first connection fails loudly (ConnectionError)
        if mode is not None and mode != self.mode:
            conn[1].close()
            raise ValueError(f"the overlay at tcp://{self.host}:{self.port} runs in {self.mode} mode; connect "
                             f"asked for mode={mode!r} (the brokers choose the mode: eventpy overlay up --mode)")
        node = LocalNode(self, name)  # type: ignore[arg-type]
        node.core.caps, node.core.caps_broker = conn[4], self.edge
        self._events[node] = asyncio.Event()
        self._closing[node] = asyncio.Event()
        self._runs[node] = asyncio.get_running_loop().create_task(self._run(node, conn))
        return node

    def backoff(self) -> Backoff:
        """The reconnection backoff of one node (tests give a shorter one)."""
        return Backoff()

    async def _run(self, node: LocalNode, conn: tuple) -> None:
        """Keep the node connected: when its broker goes away, reconnect with backoff and
        re-establish its advertisements and subscriptions with their current values."""
        backoff = self.backoff()
        where = f"{self.host}:{self.port}"
        while True:
            reader, writer, decoder, early, caps = conn
            with node.lock:  # a broker restarted with other limits: the node checks the new ones
                node.core.caps, node.core.caps_broker = caps, self.edge
            for msg in early:
                node.receive(msg)
            self._writers[node] = writer
            self._events[node].set()
            backoff.connected()
            tasks = [asyncio.create_task(self._read(node, reader, decoder, early.error)),
                     asyncio.create_task(self._write(node, writer))]
            self._writing[node] = tasks[1]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            why = tasks[0].result() if tasks[0].done() and not tasks[0].cancelled() else None
            for t in tasks:
                t.cancel()
            writer.close()
            if node.closed and not node.has_output():
                self._forget(node)
                return
            # (closed, and the connection dropped before the writer sent all it held: it tries
            # again within CLOSE_BUDGET of the close, as a node closed while away, then says so)
            self._lost_at[node] = time.monotonic()
            backoff.lost()
            # said when the wait grows, not at every attempt: a broker that fails each session at
            # once (a bad frame after its HELLO) would fill the log at the cap's pace for ever
            said = None  # a refusal is logged once (and again if its reason changes), not every retry
            refusing = False  # the last attempt reached a broker that refused (not: no broker there)
            loud = False
            while True:
                delay, escalated = backoff.next()
                left = self._left_to_closed(node)
                if left is not None and left <= 0:
                    self._give_up_closed(node)
                    return
                if why is not None or escalated:
                    loud = loud or escalated
                    log.log(logging.WARNING if escalated else logging.DEBUG,
                            "node %s: %s; reconnecting in %.2g s", node.link,
                            why or (f"{where} still refuses it" if refusing else f"still no broker at {where}"),
                            delay)
                    why = None
                if left is not None:
                    delay = min(delay, left)
                closing = self._closing[node]
                if closing.is_set():  # closed: the backoff still spaces the attempts (within the budget)
                    await asyncio.sleep(delay)
                else:  # a close() meanwhile ends this wait, once: its budget counts from then
                    try:
                        await asyncio.wait_for(closing.wait(), delay)
                    except asyncio.TimeoutError:
                        pass
                left = self._left_to_closed(node)
                if left is not None and left <= 0:
                    continue  # given up at the top of the loop
                try:
                    # a closed node's attempt ends with its budget (a connection to a host that
                    # does not answer can take the system's SYN timeout, minutes)
                    conn = await asyncio.wait_for(self._connect(node.link), left)
                    break
                except (AttachError, WireError) as e:  # it answered and refused (a secret, a name, a version)
                    refusing = True
                    if str(e) != said:
                        said = str(e)
                        log.warning("node %s: %s refuses to take it back: %s; retrying", node.link, where, e)
                except (ConnectionError, OSError, asyncio.TimeoutError):
                    refusing = False
                    continue
            self._lost_at.pop(node, None)
            self._follow_mode(node)
            node.resync()
            log.log(logging.WARNING if loud else logging.DEBUG, "node %s: reconnected to %s", node.link, where)

    def _follow_mode(self, node: LocalNode) -> None:
        """A broker that came back in another mode (restarted with `--mode`): the node sends its
        updates the new way from its resynchronization on (which re-sends every subscription
        whole, so nothing of the old way is pending), and `node.mode` names it."""
        if node.core.mode == self.mode:
            return
        log.warning("node %s: %s:%s now runs in %s mode (it ran in %s mode); the node follows it",
                    node.link, self.host, self.port, self.mode, node.core.mode)
        with node.lock:
            node.core.mode = self.mode

    def _left_to_closed(self, node: LocalNode) -> float | None:
        """Seconds a closed node still has to send what it holds (None: it is not closed). A node
        that holds nothing has nothing to reconnect for."""
        if not node.closed:
            return None
        if not node.has_output():
            return 0.0
        closed_at = self._closed_at.setdefault(node, time.monotonic())
        return closed_at + CLOSE_BUDGET - time.monotonic()

    def _give_up_closed(self, node: LocalNode) -> None:
        """A closed node whose broker did not come back within CLOSE_BUDGET of its close(): what
        it still holds is logged as lost, and the node goes (no retry keeps it)."""
        if node.has_output():
            self._say_lost([node], f"were not sent within {CLOSE_BUDGET:g}s of its close()")
        self._lost_at.pop(node, None)
        self._forget(node)

    def _forget(self, node: LocalNode) -> None:
        """A closed node whose last messages are written: out of the overlay's tables, so that its
        client core, stream and delivery queue go (a process that reconnects now and then kept
        every node it had closed). A new node of the same name is another key: left alone."""
        for table in (self._runs, self._writing, self._writers, self._events, self._lost_at, self._closing,
                      self._closed_at):
            table.pop(node, None)

    async def _read(self, node: LocalNode, reader: asyncio.StreamReader, decoder: FrameDecoder,
                    error: WireError | None = None) -> str:
        """Until the connection ends; returns why (logged by `_run`, with the backoff). `error`: a
        bad frame that came in the reads of the handshake, behind the messages already received
        (Early.error): the connection closes on it as on one read here."""
        where = f"{self.host}:{self.port}"
        try:
            if error is not None:
                raise error
            while True:
                data = await reader.read(_READ)
                if not data:
                    return f"lost its broker {where} (the connection closed)"
                receive_read(node, decoder, data)
        except WireError as e:
            node.receive_many(e.before)  # FIFO: what came before the bad frame is delivered
            return f"closing the connection to {where}: {e}"
        except (ConnectionError, OSError) as e:
            return f"connection to {where} lost: {e}"

    async def _write(self, node: LocalNode, writer: asyncio.StreamWriter) -> None:
        event = self._events[node]
        try:
            while True:
                await event.wait()
                event.clear()
                node._flagged = False  # from here on, new output wakes the writer again
                while node.has_output():
                    msgs = node.take()
                    try:
                        data = encode_many(msgs, self.max_frame)
                    except WireError:
                        data = self._encode_each(node, msgs)
                    writer.write(data)
                    await writer.drain()  # messages not yet taken keep coalescing meanwhile
                if node.closed and not node.has_output():
                    return
        except (ConnectionError, OSError) as e:
            log.warning("node %s: cannot write to %s:%s: %s", node.link, self.host, self.port, e)

    def _encode_each(self, node: LocalNode, msgs: list) -> bytes:
        """The frames of the messages that can be sent; one that cannot (an event larger than a
        frame) is dropped with an error naming it, and the others still go (the connection
        would otherwise be lost with all of them)."""
        out = []
        for msg in msgs:
            try:
                out.append(encode(msg, self.max_frame))
            except WireError as e:
                if type(msg) is Upd and len(msg.changes) > 1:
                    # updates of several variables merged while queued (each was checked to fit
                    # when the program made it, not their sum): one UPD a variable, each with
                    # its own sequence number, is what the broker would have got unmerged
                    out.append(self._encode_each(node, [Upd(msg.etype, msg.sid, {var: change})
                                                        for var, change in msg.changes.items()]))
                    continue
                node.core._stats["unsendable"] += 1
                log.error("node %s: cannot send a %s of %s: %s", node.link, type(msg).__name__.upper(),
                          getattr(msg, "etype", "?"), e)
        return b"".join(out)

    def unreachable(self, node: LocalNode) -> str:
        """Why the broker cannot answer this node now ("" while it is connected): a drain or
        confirm that times out says it, rather than only that no answer came."""
        lost = self._lost_at.get(node)
        if lost is None:
            return ""
        return (f"node {node.link} has had no connection to {self.host}:{self.port} for "
                f"{time.monotonic() - lost:.0f}s and is reconnecting (is the broker running?)")

    def _say_lost(self, nodes: list[LocalNode], what: str) -> None:
        """Log, for each node, the messages it held that are given up (at exit, or after its close())."""
        for node in nodes:
            log.warning("node %s: %d message(s) it still held for %s:%s %s (%s); they are lost",
                        node.link, len(node.core.outbox), self.host, self.port, what,
                        "the broker was slow to take them" if self._connected(node) else "no broker answered there")

    def _connected(self, node: LocalNode) -> bool:
        """Has the node a connection now (its writer runs)?"""
        writing = self._writing.get(node)
        return writing is not None and not writing.done()

    def wake(self, node: LocalNode) -> None:
        if node._flagged:
            return  # the writer has been woken and has not started taking yet
        event = self._events.get(node)
        if event is not None:
            node._flagged = True
            try:
                self.loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the overlay was stopped (its loop closed): no writer is left to wake
                if not self.loop.is_closed():
                    raise

    def detach(self, node: LocalNode) -> None:
        """After the node's close(): its writer sends what is left, then closes; if the node is
        waiting to reconnect, it has CLOSE_BUDGET seconds from now to do so."""
        self.wake(node)
        closed_at = time.monotonic()

        def closing() -> None:
            if node in self._runs:  # (one forgotten already has nothing left to time)
                self._closed_at.setdefault(node, closed_at)
            event = self._closing.get(node)
            if event is not None:
                event.set()
        try:
            self.loop.call_soon_threadsafe(closing)
        except RuntimeError:  # the overlay was stopped (its loop closed): nothing waits any more
            if not self.loop.is_closed():
                raise

    def stop(self, flush_timeout: float = 5.0) -> None:
        """Stop the connections. A closed node's writer first sends what its outbox still holds
        (up to `flush_timeout` seconds in all): a program that publishes and exits loses nothing
        that a reachable broker could take."""
        async def close_all() -> None:
            # a closed node's `_run` ends once its writer has sent everything, also after a
            # reconnection: a node whose broker is away when the program ends waits for it (only
            # the writer was waited for, and it had ended with the connection: the process left
            # at once and what it held was lost without a word)
            owed = [(node, run) for node, run in self._runs.items()
                    if node.closed and not run.done() and (self._connected(node) or node.has_output())]
            if owed:
                _, late = await asyncio.wait([run for _, run in owed], timeout=flush_timeout)
                self._say_lost([node for node, run in owed if run in late],
                               f"were not sent within {flush_timeout:g}s at exit")
            for w in self._writers.values():
                w.close()
            for w in self._writers.values():  # the bytes already written leave before the loop stops
                try:
                    await asyncio.wait_for(w.wait_closed(), flush_timeout)
                except (asyncio.TimeoutError, ConnectionError, OSError):
                    pass
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(close_all(), self.loop).result(timeout=2 * flush_timeout + 5)
        except KeyboardInterrupt:  # Ctrl-C while it waits: say what is given up, stop, and let it end the program
            self._say_lost([node for node, run in list(self._runs.items()) if node.closed and not run.done()
                            and node.has_output()], "were not sent at exit: interrupted (Ctrl-C)")
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise
        except Exception:  # a loop that is already gone has nothing left to close
            pass
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # stopped and closed before
            pass
        self._thread.join(timeout=5)
        if not self._thread.is_alive() and not self.loop.is_closed():
            self.loop.close()  # its self-pipe sockets and selector: two descriptors per overlay, left to the GC before
        self.pool.shutdown()
