"""The messages of the broker protocol (paper 000 Fig. 5/6, 001 Algorithms 1/2), as plain
slotted records. `wire` (a later issue) maps them to msgpack frames; brokers and clients only
ever see these objects.

Variables are small integers local to a subscription `(link, sid)`: `Sub.values[var]` is the
current value of each (an Interval, a ValueSet, a bool switch or a parameter value); `Upd`
carries `(var, value, seq)` triples with a per-variable sequence number so that a stale update
is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


# The longest a Flush or an AckReq may let its receiver wait (seconds): a broker refuses a frame
# with more (wire), so a client asks for at most this however long its caller waits.
MAX_BUDGET = 3600.0


@dataclass(slots=True)
class Adv:
    etype: str
    schema: tuple  # ((attr, "int" | "float" | "str" | "bool"), ...)
    # False: the sender only subscribes to the type and tells its edge broker the schema the
    # subscriptions are checked against; it is no publisher, so no subscription is routed to it
    # (subscriptions follow advertisements, 000 Fig. 6 lines 7-9) and the ADV goes no further
    publishes: bool = True


@dataclass(slots=True)
class Unadv:
    etype: str


@dataclass(slots=True)
class Sub:
    etype: str
    sid: int
    spec: tuple  # conjunctions: (((attr, var), ...), switch var or -1, (tree, ...))
    values: list  # variable values, indexed by variable
    # a broker's summary that moves with time (it holds versions of evolving subscriptions, 003
    # §IV-A): the sender's evolution horizon, in seconds. The versions cover publication times from
    # about a horizon ago, so the receiver forwards an event published earlier than that (a late
    # one) whatever its values, and the brokers that hold the subscriptions check it exactly. 0.0:
    # the filters cover every publication time (a client's SUB, a summary of no evolving one)
    moving: float = 0.0


@dataclass(slots=True)
class Unsub:
    etype: str
    sid: int


@dataclass(slots=True)
class Upd:
    etype: str
    sid: int
    changes: dict = field(default_factory=dict)  # var -> (value, seq); merged while queued

    def items(self) -> list[tuple[int, Any, int]]:
        return [(var, value, seq) for var, (value, seq) in self.changes.items()]


@dataclass(slots=True)
class Pub:
    etype: str
    values: tuple
    origin: str  # publishing node
    seq: int  # per-origin sequence number: (origin, seq) identifies the event
    time: float  # publication time, on the clock of the overlay
    sids: tuple = ()  # to a client: the subscriptions the broker matched


@dataclass(slots=True)
class Flush:
    """The drain barrier: travels the acyclic overlay, FIFO behind everything sent before it, to
    where the sender's messages went. `budget`: how many seconds the receiver may wait for the
    links it asks in turn (None: as long as it takes)."""

    token: tuple
    budget: float | None = None


@dataclass(slots=True)
class FlushAck:
    """The answer to a Flush; `failed` names the links that did not answer in time
    (comma-separated, "client X at broker B" or "broker B"), empty when every one did."""

    token: tuple
    failed: str = ""


@dataclass(slots=True)
class AckReq:
    """Asks for a cascading acknowledgement (000 §9.3) of every SUB/UNSUB/UPD sent before it on
    this link: answered once their effects are in place at every broker they reached. `budget` is
    how many seconds the receiver may wait for the brokers it forwarded them to."""

    token: tuple
    budget: float


@dataclass(slots=True)
class Ack:
    """The answer to an AckReq; `failed` names the brokers that did not acknowledge in time
    (comma-separated), empty when every one did."""

    ref: tuple
    failed: str = ""


@dataclass(slots=True)
class Hello:
    node: str
    role: str  # "client" or "broker"
    version: int = 1
    mode: str = ""  # a broker tells its overlay's mode (parametric or resub)
    auth: bool = False  # the sender will challenge: an Auth exchange follows


@dataclass(slots=True)
class Auth:
    """Shared-secret challenge-response right after HELLO: a nonce to answer, or a proof
    (HMAC-SHA256 of the other side's nonce and the prover's name)."""

    nonce: str = ""
    proof: str = ""


@dataclass(slots=True)
class Bye:
    reason: str = ""


@dataclass(slots=True)
class Refused:
    """Broker to client: the client's advertisement of `etype` was refused (a schema other than
    the overlay's), so its events of that type go nowhere; the client says so to the program.
    With `sid` (protocol 5), the client's SUB or UPD of that subscription was refused instead (a
    per-client limit, _client_caps): the broker holds the subscription as before the message."""

    etype: str
    reason: str
    sid: int = -1  # -1: the advertisement


@dataclass(slots=True)
class Limits:
    """Broker to client, right after the handshake (protocol 5): the broker's per-client limits,
    `[[name, value], ...]` (runtime/_client_caps.py), so that the client refuses what the broker
    would, in the program's call, before sending it."""

    limits: list

