"""The TCP transport, broker side (asyncio streams): the same sans-I/O `Broker` as in the embedded
overlay, with frames of `eventpy.runtime.wire` on sockets. Clients attach with
eventpy.runtime.transports.tcp_client; both open every link with eventpy.runtime.transports._handshake.

A broker process serves clients and neighbor brokers and dials the neighbors it is configured to
dial (the one whose name sorts first), retrying with backoff. One reader task and one writer task
per link; links are FIFO. A malformed frame closes that link with a logged reason (after the good
messages that came before it); the broker keeps running.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from ..._version import __version__
from .._log_limit import LogLimit
from .._natural_order import natural
from ..broker import Broker
from ..messages import Bye, Hello, Limits, Pub
from ..wire import DEFAULT_MAX_FRAME, FrameDecoder, WireError, encode, pub_frame_for
from ._backoff import Backoff
from ._link import BEHIND_SECONDS, DEFAULT_MAX_PENDING, HARD_FACTOR, STALL_SECONDS, _Link
from ._handshake import (PROTOCOL, _READ, ClosedBeforeHello, Early, ProtocolMismatch, _hello, authenticate,
                         refusal, secret_from_env)

log = logging.getLogger("eventpy.tcp")


def tune_gc_for_server() -> None:
    """For a broker process (not for applications, whose heaps are theirs): every message
    allocates a few short-lived containers, so the default generation-0 threshold (700) runs the
    cyclic collector every few hundred messages, about 10% of a broker's CPU per forwarded PUB
    (tools/bench/overlay.py). Freeze what startup built and collect less often; memory stays
    bounded (the threshold counts objects, and messages form no cycles)."""
    gc.freeze()
    gc.set_threshold(50_000, 50, 50)


HANDSHAKE_SECONDS = 10.0  # a new connection's HELLO (and authentication) must be complete by then
SLICE_SECONDS = 0.01  # the longest a link's messages hold the loop before the other links get a turn


class _Peer(NamedTuple):
    """The other end of a connection (accepted, or dialed to a neighbor), read from its socket once."""
    host: str  # keys the refusal log's bound (eventpy/runtime/_log_limit.py)
    address: str  # host:port, for the log


def _peer_of(writer: asyncio.StreamWriter) -> _Peer:
    peer = writer.get_extra_info("peername")
    if not (isinstance(peer, tuple) and peer):
        return _Peer("?", "an unknown address")
    return _Peer(str(peer[0]), f"{peer[0]}:{peer[1]}" if len(peer) >= 2 else "an unknown address")


class BrokerServer:
    """One broker process: a listening socket, dialed neighbors, a status file."""

    def __init__(self, broker: Broker, host: str, port: int, neighbors: dict[str, tuple[str, int]],
                 status_file: Path | None = None, max_frame: int = DEFAULT_MAX_FRAME,
                 max_pending: int = DEFAULT_MAX_PENDING, stall: float = STALL_SECONDS,
                 handshake_timeout: float = HANDSHAKE_SECONDS, behind: float = BEHIND_SECONDS) -> None:
        self.max_pending = max_pending
        self.behind = behind
        self.handshake_timeout = handshake_timeout
        self._refusals_logged = LogLimit()  # per peer host: a flood of bad connections does not flood the log
        self.stall = stall
        self.broker = broker
        broker.max_summary = max_frame // 2  # a summary, with the rest of its SUB, fits a frame
        self.host, self.port = host, port
        self.neighbors = neighbors  # broker name -> (host, port)
        self.status_file = status_file
        self.max_frame = max_frame
        self.links: dict[str, _Link] = {}
        self.roles: dict[str, str] = {}
        self.started = time.time()
        self.secret = secret_from_env()
        self._stop = asyncio.Event()
        self._stop_reason = ""
        self._conns: set[asyncio.Task] = set()  # the handlers of accepted connections
        self._refused: set[tuple[str, Any]] = set()  # (peer, protocol) refused for its version: logged once
        self.link_down: dict[str, str] = {}  # neighbor -> why its link is down, when known (status)

    def _refusal(self, peer: _Peer, what: str, *args: object, said_before: bool = False) -> None:
        """A refused connection (or one closed for a bad frame), logged within the peer host's
        bound (eventpy/runtime/_log_limit.py): each can be made again at once by reconnecting.
        Each is counted (`refused_connections`, which `overlay status` shows): past the bound the
        log is silent for the rest of the minute, and the count is what says the flood goes on.
        `said_before`: its reason was logged already (a peer of another protocol version, which
        re-dials for ever): a DEBUG line, outside the bound."""
        self.broker._stats["refused_connections"] += 1
        if said_before:
            log.debug("%s: " + what, self.broker.name, *args)
            return
        say, note = self._refusals_logged.allow(peer.host)
        if say:
            log.warning("%s: " + what + "%s", self.broker.name, *args, note)

    def shutdown(self, reason: str) -> None:
        """Stop serving (on the loop's thread: a signal handler of the loop): `run` closes every
        link and returns, and logs `NAME: stopped (reason)`."""
        self._stop_reason = reason
        self._stop.set()

    async def run(self, started: Any = None) -> None:
        """Serve until `shutdown`; `started.set()` is called once the socket listens (a
        threading.Event, or the launcher's pid file)."""
        server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = server.sockets[0].getsockname()[1]  # the real port when asked for port 0
        log.info("%s: listening on %s:%d (neighbors: %s)", self.broker.name, self.host, self.port,
                 ", ".join(f"{n} at {h}:{p}" for n, (h, p) in sorted(self.neighbors.items(), key=lambda item: natural(item[0]))) or "none")
        if started is not None:
            started.set()
        helpers = [asyncio.create_task(self._dial(name, host, port))
                   for name, (host, port) in self.neighbors.items() if self.broker.name < name]
        if self.status_file is not None:
            helpers.append(asyncio.create_task(self._status_loop()))
        helpers.append(asyncio.create_task(self._timer_loop()))
        try:
            await self._stop.wait()  # start_server already serves
        finally:  # also when cancelled (start_in_thread's stop)
            await self._close(server, helpers)
        log.info("%s: stopped (%s)", self.broker.name, self._stop_reason)

    async def _close(self, server: asyncio.Server, helpers: list[asyncio.Task]) -> None:
        """Accept no more connections, then end every task: each link's `_serve` closes its socket
        and tells the broker the link is gone, as when a peer leaves."""
        self._stop.set()  # also when cancelled (start_in_thread's stop): the links' log says why they end
        server.close()
        tasks = [*helpers, *self._conns]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def start_in_thread(self, timeout: float = 10.0) -> Callable[[], None]:
        """Serve on a loop of its own in a daemon thread (embedding, tests); returns `stop`."""
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.create_task(self.run(started))
            loop.run_forever()

        thread = threading.Thread(target=serve, name=f"broker-{self.broker.name}", daemon=True)
        thread.start()
        if not started.wait(timeout):
            raise RuntimeError(f"broker {self.broker.name} did not start listening")

        async def cancel_all() -> None:
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in others:
                t.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        def stop() -> None:
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(timeout)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if not thread.is_alive():
                loop.close()  # its selector and self-pipe, left to the garbage collector before

        return stop

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """An accepted connection, until it closes or the server stops."""
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        try:
            await self._open_link(reader, writer, _peer_of(writer))
        except asyncio.CancelledError:
            # the server stops. This task must end normally: on Python 3.11 start_server calls
            # exception() on it when it ends, which raises for a cancelled task, and asyncio
            # logs that as an ERROR with a traceback
            writer.close()
        finally:
            self._conns.discard(task)

    async def _open_link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: _Peer) -> None:
        decoder = FrameDecoder(self.max_frame)
        try:  # one deadline for all the reads: a slow-loris held its connection, and a descriptor, for ever
            hello, early = await _hello(reader, decoder, self.handshake_timeout)
        except ProtocolMismatch as e:  # said to the peer too, which would otherwise see a closed link
            why = refusal(self.broker.name, e.node, e.role, e.version)
            # once per peer and version: a broker of another version re-dials every 5 s for ever
            said_before = (e.node, e.version) in self._refused
            if len(self._refused) >= 1024:  # peers that make up names cannot grow it without bound
                self._refused.clear()
            self._refused.add((e.node, e.version))
            if e.node in self.neighbors:
                self.link_down[e.node] = why
            self._refusal(peer, "refused %s %r from %s: %s", e.role, e.node, peer.address, why,
                          said_before=said_before)
            writer.write(encode(Bye(why)))
            writer.close()
            return
        except (WireError, ConnectionError, asyncio.TimeoutError, OSError) as e:
            timed_out = isinstance(e, asyncio.TimeoutError)
            why = f"no complete HELLO within {self.handshake_timeout:g} s" if timed_out else e
            self._refusal(peer, "refused a connection from %s: %s", peer.address, why)
            writer.close()
            return
        if hello.node in self.links:  # said before our HELLO, so that the peer can tell the user why
            self._refusal(peer, "refused %s %r from %s: a link of that name is attached", hello.role, hello.node,
                          peer.address)
            writer.write(encode(Bye(f"a node named {hello.node!r} is already attached to broker "
                                    f"{self.broker.name}; give each node its own name")))
            writer.close()
            return
        writer.write(encode(Hello(self.broker.name, "broker", PROTOCOL, self.broker.mode,
                                  self.secret is not None)))
        try:
            await authenticate(self.secret, self.broker.name, hello.node, reader, writer, decoder, early,
                               self.handshake_timeout)
        except (WireError, ConnectionError, asyncio.TimeoutError, OSError) as e:
            timed_out = isinstance(e, asyncio.TimeoutError)
            why = f"authentication not complete within {self.handshake_timeout:g} s" if timed_out else e
            self._refusal(peer, "refused %r from %s: %s", hello.node, peer.address, why)
            writer.close()
            return
        await self._serve(hello.node, hello.role, reader, writer, decoder, early, peer)

    async def _dial(self, name: str, host: str, port: int) -> None:
        backoff = Backoff()  # re-dial a neighbor that went away; reset once a link stayed up
        unreachable = ""  # why the neighbor cannot be reached, once said (until it changes)
        refused = ""  # why the neighbor last refused the link, once said (until it changes)
        while True:
            why = None
            try:
                try:
                    reader, writer = await asyncio.open_connection(host, port)
                except OSError as e:  # said once an outage (the wait grows to seconds meanwhile)
                    self.link_down[name] = f"cannot reach it at {host}:{port}: {os.strerror(e.errno) if e.errno else e}"
                    if str(e) != unreachable:
                        unreachable = str(e)
                        log.warning("%s: cannot reach neighbor %s at %s:%d: %s; retrying", self.broker.name,
                                    name, host, port, os.strerror(e.errno) if e.errno else e)
                    raise
                unreachable = ""
                writer.write(encode(Hello(self.broker.name, "broker", PROTOCOL, self.broker.mode,
                                          self.secret is not None)))
                decoder = FrameDecoder(self.max_frame)
                try:
                    hello, early = await _hello(reader, decoder)
                except ProtocolMismatch as e:  # a broker of another version that answered
                    writer.write(encode(Bye(refusal(self.broker.name, e.node, "broker", e.version))))
                    raise
                except ClosedBeforeHello as e:  # e.g. an older broker refusing our version
                    raise WireError(f"{e}: a broker of another EventPy protocol version does so (this one "
                                    f"speaks {PROTOCOL}, eventpy {__version__}; see its log)") from None
                await authenticate(self.secret, self.broker.name, hello.node, reader, writer, decoder, early)
                backoff.connected()
                await self._serve(hello.node, "broker", reader, writer, decoder, early, _peer_of(writer))
                backoff.lost()
            except WireError as e:
                backoff.lost()
                why = e
            except (ConnectionError, OSError, asyncio.TimeoutError):
                backoff.lost()
            delay, escalated = backoff.next()
            if why is not None:  # said as the wait grows, and when the reason changes, not at every attempt
                self.link_down[name] = str(why)
                # (a neighbor restarted on another version after an outage finds the wait at its cap:
                # by the growth alone, its refusal was never said)
                log.log(logging.WARNING if escalated or str(why) != refused else logging.DEBUG,
                        "%s: link to %s refused: %s (again in %.2g s)", self.broker.name, name, why, delay)
                refused = str(why)
            await asyncio.sleep(delay)

    async def _serve(self, link: str, role: str, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter, decoder: FrameDecoder, early: Early, peer: _Peer) -> None:
        if role not in ("client", "broker") or link in self.links:
            self._refusal(peer, "refused %s %r (duplicate or unknown role)", role, link)
            writer.close()
            return
        out = self.links[link] = _Link(writer, self.max_pending, self.stall, self.behind)
        self.link_down.pop(link, None)
        self.roles[link] = role
        log.info("%s: %s %r attached from %s", self.broker.name, role, link, peer.address)
        ended = "the connection closed"  # why the link ended, for the log
        pump = asyncio.create_task(out.pump())
        if role == "client":  # first of all (protocol 5): the client checks its calls against them
            out.send(encode(Limits(self.broker.caps.to_wire())))
        self._route(self.broker.connect(link, role))
        try:
            for msg in early:
                self._route(self.broker.handle(link, msg))
            if early.error is not None:  # a bad frame read with the handshake: as one read later
                raise early.error
            handle, route = self.broker.handle, self._route
            clock = time.perf_counter
            while True:
                data = await reader.read(_READ)
                if not data:
                    decoder.close()
                    break
                batch: dict[str, list[bytes]] = {}
                try:
                    began = clock()
                    for msg, frame in decoder.feed_frames(data):
                        route(handle(link, msg), msg, frame, batch)
                        if clock() - began > SLICE_SECONDS:
                            # one read can hold thousands of messages, and a message can be
                            # costly (a 26-byte UPD adding one member to a 50,000-member set
                            # takes 3 ms: a flood of them kept the other links, and SIGTERM,
                            # waiting 35 s); the other links get their turn between slices,
                            # this link's messages stay in order
                            self._send_batch(batch)
                            batch = {}
                            await asyncio.sleep(0)
                            began = clock()
                finally:  # what was routed is sent, also when a later message fails
                    self._send_batch(batch)
        except WireError as e:
            ended = "it sent a bad frame"
            self._refusal(peer, "closing %r: %s", link, e)  # (a peer that reconnects to do it again)
            try:  # the link is FIFO: what came before the bad frame is handled, then it closes
                for msg, frame in e.before:
                    self._route(self.broker.handle(link, msg), msg, frame)
            except WireError as again:  # a message we cannot send on: logged, the link closes anyway
                log.warning("%s: %s", self.broker.name, again)
        except (ConnectionError, OSError) as e:
            ended = f"connection lost: {e.strerror or e}"
        finally:
            if self._stop.is_set():
                ended = "this broker is stopping"
            elif out.overflowed:
                ended = "it did not read" if out.overflowed == "stalled" else "it read too slowly"
            log.info("%s: %s %r detached (%s)", self.broker.name, role, link, ended)
            if out.overflowed == "stalled":
                log.warning("%s: closed %r: more than %d bytes waited for it and nothing could be "
                            "written for %g s (a peer that does not read)", self.broker.name, link,
                            self.max_pending, self.stall)
            elif out.overflowed == "behind":
                log.warning("%s: closed %r: more than %d bytes waited for it for %g s without a break (a peer "
                            "that reads more slowly than its events arrive)", self.broker.name, link,
                            self.max_pending, self.behind)
            elif out.overflowed:
                log.warning("%s: closed %r: more than %d bytes waited for it (a peer that does not read, or "
                            "reads more slowly than its events arrive)", self.broker.name, link,
                            HARD_FACTOR * self.max_pending)
            out.closed = True
            out.ready.set()
            pump.cancel()
            writer.close()
            self.links.pop(link, None)
            self.roles.pop(link, None)
            self._route(self.broker.disconnect(link))

    def _route(self, sends: list, received: Any = None, frame: bytes = b"",
               batch: dict[str, list[bytes]] | None = None) -> None:
        """Encode `sends` (link, message) into frames. With `batch`, the frames are appended to it
        per link and the caller sends them (`_send_batch`) once it has routed a whole read: one
        send per link and read instead of one per message (the order per link is kept, and no
        other task runs in between: there is no await)."""
        own = batch is None
        if own:
            batch = {}
        encoded: dict[int, bytes] | None = None  # a message sent to several links is encoded once
        for link, msg in sends:
            if link not in self.links:
                continue
            if msg is received and frame:  # forwarded as it came
                data = frame
            elif type(msg) is Pub and type(received) is Pub and msg.values is received.values \
                    and msg.seq == received.seq and msg.sids and frame \
                    and (data := pub_frame_for(frame, msg.sids)) is not None \
                    and len(data) - 4 <= self.max_frame:
                pass  # the event to a client: spliced from the received frame
            else:
                data = encoded.get(id(msg)) if encoded is not None else None
                if data is None:
                    try:
                        data = encode(msg, self.max_frame)
                    except WireError as e:  # ours to send: the link that caused it did no wrong
                        # (closing it made its client reconnect and re-send the same, for ever)
                        log.error("%s: cannot send a %s to %r: %s", self.broker.name, type(msg).__name__.upper(),
                                  link, e)
                        self.broker._stats["unsendable"] += 1
                        continue
                    if encoded is None:
                        encoded = {}
                    encoded[id(msg)] = data
            frames = batch.get(link)
            if frames is None:
                batch[link] = [data]
            else:
                frames.append(data)
        if own:
            self._send_batch(batch)

    def _send_batch(self, batch: dict[str, list[bytes]]) -> None:
        for link, frames in batch.items():
            out = self.links.get(link)
            if out is not None:
                out.send(frames[0] if len(frames) == 1 else b"".join(frames))

    def status(self) -> dict:
        d = self.broker.describe()
        d.update(pid=os.getpid(), host=self.host, port=self.port, uptime=time.time() - self.started,
                 connected={k: self.roles[k] for k in sorted(self.links)},
                 ready=all(n in self.links for n in self.neighbors), version=__version__, protocol=PROTOCOL,
                 down={n: self.link_down.get(n, "not connected") for n in sorted(self.neighbors)
                       if n not in self.links})
        return d

    async def _timer_loop(self) -> None:
        """The broker's timers (acknowledgement budgets, 000 §9.3), checked ten times a second."""
        while True:
            await asyncio.sleep(0.1)
            if self.broker.next_deadline() is not None:
                self._route(self.broker.tick())

    async def _status_loop(self) -> None:
        assert self.status_file is not None
        tmp = self.status_file.with_suffix(".tmp")
        last: tuple[float, int] | None = None  # (when, messages received) at the previous write
        while True:
            status = self.status()
            now, received = time.monotonic(), status.get("stats", {}).get("received", 0)
            if last is not None and now > last[0]:  # the rate since the previous write (~1 s)
                status["msgs_per_s"] = (received - last[1]) / (now - last[0])
            last = (now, received)
            tmp.write_text(json.dumps(status, default=str))
            os.replace(tmp, self.status_file)
            # often while links are still coming up (`overlay up` waits for ready), then once a
            # second: the write and rename cost the event loop ~2-5% of a busy broker at 5 Hz
            await asyncio.sleep(1.0 if status["ready"] else 0.2)
