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

from ..messages import Auth, Bye, Hello
from ..wire import FrameDecoder, WireError, encode

PROTOCOL = 1
_READ = 65536


class ProtocolMismatch(WireError):
    """The peer's HELLO is of another protocol version."""


class Refusal(WireError):
    """The peer answered the HELLO with a BYE saying why it will not take this connection."""


def secret_from_env() -> bytes | None:
    """EVENTPY_SECRET: when set, every link authenticates with it (HMAC challenge-response)."""
    value = os.environ.get("EVENTPY_SECRET")
    return value.encode() if value else None


def _proof(secret: bytes, nonce: str, name: str) -> str:
    return hmac.new(secret, f"eventpy|{nonce}|{name}".encode(), hashlib.sha256).hexdigest()


async def _next(reader: asyncio.StreamReader, decoder: FrameDecoder, early: list,
                timeout: float = 10.0) -> Any:
    while not early:
        data = await asyncio.wait_for(reader.read(_READ), timeout)
        if not data:
            raise ConnectionError("closed during authentication")
        early.extend(decoder.feed(data))
    return early.pop(0)


async def authenticate(secret: bytes | None, me: str, peer: str, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter, decoder: FrameDecoder, early: list) -> None:
    """Mutual challenge-response after HELLO (both sides run it, symmetric): send a nonce, answer
    the peer's nonce with a proof, check the peer's proof. Raises WireError on any mismatch."""
    if secret is None:
        return
    mine = secrets.token_hex(16)
    writer.write(encode(Auth(nonce=mine)))
    theirs = await _next(reader, decoder, early)
    if not isinstance(theirs, Auth) or not theirs.nonce:
        raise WireError("authentication required: the peer sent no challenge")
    writer.write(encode(Auth(proof=_proof(secret, theirs.nonce, me))))
    answer = await _next(reader, decoder, early)
    if not isinstance(answer, Auth) or not hmac.compare_digest(answer.proof, _proof(secret, mine, peer)):
        raise WireError(f"authentication of {peer!r} failed")


async def _hello(reader: asyncio.StreamReader, decoder: FrameDecoder,
                 timeout: float = 10.0) -> tuple[Hello, list]:
    """The peer's HELLO, and whatever messages arrived right behind it."""
    while True:
        data = await asyncio.wait_for(reader.read(_READ), timeout)
        if not data:
            raise ConnectionError("closed before HELLO")
        msgs = decoder.feed(data)
        if msgs:
            first = msgs[0]
            if isinstance(first, Bye):
                raise Refusal(first.reason)
            if not isinstance(first, Hello):
                raise WireError(f"a connection must open with a HELLO of protocol version {PROTOCOL}")
            if first.version != PROTOCOL:
                raise ProtocolMismatch(f"the peer speaks EventPy protocol version {first.version!r}; "
                                       f"this one speaks {PROTOCOL}")
            return first, msgs[1:]
