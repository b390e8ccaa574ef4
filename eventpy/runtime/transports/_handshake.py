"""What every TCP link of EventPy begins with: HELLO (node name, role, protocol version, the
overlay's mode) and, when a shared secret is set (EVENTPY_SECRET), a mutual HMAC challenge-response.
Used by the broker processes (eventpy.runtime.transports.tcp) and by clients
(eventpy.runtime.transports.tcp_client)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
from typing import Any

from ..._version import __version__
from ..messages import Auth, Bye, Hello
from ..wire import FrameDecoder, WireError, encode
from ._protocol import PROTOCOL  # (its history is there)
_READ = 65536


class ProtocolMismatch(WireError):
    """The peer's HELLO is of another protocol version: `node`, `role` ("client" or "broker") and
    `version` are the peer's."""

    def __init__(self, node: str, role: str, version: object) -> None:
        super().__init__(f"the peer speaks EventPy protocol version {version!r}; this one speaks {PROTOCOL}")
        self.node, self.role, self.version = node, role, version


class ClosedBeforeHello(ConnectionError):
    """The peer closed the connection before its HELLO came. An EventPy broker before the
    version refusal (eventpy 0.1.0 of protocols 1 to 4) did so to a peer of another protocol
    version, and one of any version does so when it cannot finish a handshake in time or stops."""


def refusal(me: str, peer: str, peer_role: str, peer_version: object) -> str:
    """What a broker answers (BYE) to a HELLO of another protocol version: both versions, and
    what the operator or the user does about it. Old and new peers alike show a BYE's reason."""
    mine = f"broker {me} speaks EventPy protocol {PROTOCOL} (eventpy {__version__})"
    theirs = f"{peer_role} {peer} speaks protocol {peer_version!r}"
    # by protocol, not by version number: eventpy 0.1.0 spoke protocols 1 to 4 (`eventpy --version`
    # names both)
    if peer_role == "broker":
        todo = ("the brokers of one overlay must speak one protocol: run the same eventpy on all of them "
                "(README: Upgrading); this link stays down until then")
    elif isinstance(peer_version, int) and peer_version < PROTOCOL:
        todo = (f"upgrade eventpy where the client runs (pip install -U) to one of protocol {PROTOCOL}, "
                "as `eventpy --version` says")
    else:
        todo = (f"upgrade the overlay's brokers to the client's eventpy, or run the client with one of "
                f"protocol {PROTOCOL}, as `eventpy --version` says")
    return f"{mine}; {theirs}: {todo}"


class Refusal(WireError):
    """The peer answered the HELLO with a BYE saying why it will not take this connection."""


def secret_from_env() -> bytes | None:
    """EVENTPY_SECRET: when set, every link authenticates with it (HMAC challenge-response)."""
    value = os.environ.get("EVENTPY_SECRET")
    return value.encode() if value else None


def _proof(secret: bytes, nonce: str, name: str) -> str:
    return hmac.new(secret, f"eventpy|{nonce}|{name}".encode(), hashlib.sha256).hexdigest()


class Early(list):
    """The messages that arrived behind the peer's HELLO, in the reads of the handshake. `error`:
    the bad frame that ended those reads (None if none). The link handles the messages, then
    raises it, as it does with a bad frame once established: a HELLO coalesced with a bad frame
    in one read is honoured, not refused (the frames' split into reads is the network's, not the
    peer's)."""

    error: WireError | None = None


async def _read_more(reader: asyncio.StreamReader, decoder: FrameDecoder, early: Early, timeout: float,
                     closed: str) -> None:
    """One read into `early`; a bad frame keeps the messages before it and becomes `early.error`
    (the decoder's stream ends there: nothing more is read)."""
    if early.error is not None:
        raise early.error
    if timeout <= 0:
        raise asyncio.TimeoutError()
    data = await asyncio.wait_for(reader.read(_READ), timeout)
    if not data:
        raise ConnectionError(closed)
    try:
        early.extend(decoder.feed(data))
    except WireError as e:
        early.extend(e.before)
        e.before = ()  # they are in `early` now: handled once, in order
        early.error = e


def _deadline(timeout: float) -> float:
    """When a handshake step given `timeout` seconds must be over (the loop's clock). One deadline
    for all its reads, not `timeout` each: a peer that sent a byte every few seconds (a
    slow-loris) held its connection for ever. The remaining time goes to each read's wait_for
    (an outer asyncio.timeout is not enough on Python 3.11: wait_for can swallow its
    cancellation when the read completes at the same moment)."""
    return asyncio.get_running_loop().time() + timeout


def _left(deadline: float) -> float:
    return deadline - asyncio.get_running_loop().time()


async def _next(reader: asyncio.StreamReader, decoder: FrameDecoder, early: Early, deadline: float) -> Any:
    while not early:
        await _read_more(reader, decoder, early, _left(deadline), "closed during authentication")
    return early.pop(0)


async def authenticate(secret: bytes | None, me: str, peer: str, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter, decoder: FrameDecoder, early: Early,
                       timeout: float = 10.0) -> None:
    """Mutual challenge-response after HELLO (both sides run it, symmetric): send a nonce, answer
    the peer's nonce with a proof, check the peer's proof. Raises WireError on any mismatch, and
    asyncio.TimeoutError if it is not over within `timeout` seconds."""
    if secret is None:
        return
    deadline = _deadline(timeout)
    mine = secrets.token_hex(16)
    writer.write(encode(Auth(nonce=mine)))
    theirs = await _next(reader, decoder, early, deadline)
    if not isinstance(theirs, Auth) or not theirs.nonce:
        raise WireError("authentication required: the peer sent no challenge")
    writer.write(encode(Auth(proof=_proof(secret, theirs.nonce, me))))
    answer = await _next(reader, decoder, early, deadline)
    if not isinstance(answer, Auth) or not hmac.compare_digest(answer.proof, _proof(secret, mine, peer)):
        raise WireError(f"authentication of {peer!r} failed")


async def _hello(reader: asyncio.StreamReader, decoder: FrameDecoder,
                 timeout: float = 10.0) -> tuple[Hello, Early]:
    """The peer's HELLO, and whatever arrived right behind it (up to a bad frame: `Early.error`);
    asyncio.TimeoutError if it is not complete within `timeout` seconds."""
    deadline = _deadline(timeout)
    early = Early()
    try:
        while not early:
            await _read_more(reader, decoder, early, _left(deadline), "closed before HELLO")
    except ConnectionError:
        raise ClosedBeforeHello("it closed the connection before sending its HELLO") from None
    first = early.pop(0)
    if isinstance(first, Bye):
        raise Refusal(first.reason)
    if not isinstance(first, Hello):
        raise WireError(f"a connection must open with a HELLO of protocol version {PROTOCOL}")
    if first.version != PROTOCOL:
        raise ProtocolMismatch(first.node, first.role, first.version)
    return first, early
