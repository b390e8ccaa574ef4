"""Per-client limits of a broker shared by several teams' services (README: *A real overlay*,
**Per-client limits**). The protocol bounds (_sub_limits, the frame) bound one message; these
bound what one client connection may make a broker hold: a loop that subscribes without closing
grew a broker by about 2.5 KB a subscription (160,000 from one client: 412 MB, kept until it
leaves; another client's events waited up to 1.5 s while it went on, tools/bench/client_caps.py),
and a set parameter grown member by member costs the broker time in proportion to the whole set
at every update.

An operator sets them on the broker (`eventpy broker --max-subscriptions N`, `overlay up
--max-set-members N`, or the overlay's TOML file); the broker tells each client its limits
when it attaches (a LIMITS message, protocol 5), so `subscribe` and `update` raise
`LimitExceeded` in the program, naming the limit and its value, before anything is sent. A client
that does not check (another implementation, a raw socket) is refused by the broker all the same:
the message changes nothing, is counted and logged (within runtime/_log_limit.py's bound), and
the client is told (a REFUSED naming the subscription), so its program hears of it.

Off by default: the protocol bounds already keep each message small, and a number picked here
would be wrong for most machines (the right one depends on the broker's memory and how many
services share it); an overlay upgraded in place must not start refusing what it took before.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterable


# name -> (the broker's command-line flag, what it bounds). The names are the TOML settings, the
# LIMITS message's keys and the `limit` of LimitExceeded.
LIMITS = {
    "max_subscriptions": ("--max-subscriptions", "subscriptions one client connection holds at the broker"),
    "max_set_members": ("--max-set-members", "set members one subscription holds (its set literals and "
                                             "set parameters, as the broker holds them)"),
    "max_event_types": ("--max-event-types", "event types one client connection tells the broker of (those "
                                             "it publishes and those it subscribes to)"),
}
LARGEST = (1 << 63) - 1  # a limit travels as a 64-bit int


class LimitExceeded(ValueError):
    """A subscription or an update past a per-client limit of the broker; nothing of it was sent
    (or the broker refused it: then it changed nothing there). `limit` is the setting's name
    (`max_subscriptions`, `max_set_members`), `value` its value, `broker` the broker's name."""

    __module__ = "eventpy"  # as a traceback names it: eventpy.LimitExceeded (its public name)

    def __init__(self, message: str, limit: str = "", value: int = 0, broker: str = "") -> None:
        super().__init__(message)
        self.limit, self.value, self.broker = limit, value, broker


@dataclass(frozen=True)
class ClientCaps:
    """A broker's per-client limits; None: no limit."""

    max_subscriptions: int | None = None
    max_set_members: int | None = None
    max_event_types: int | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) is not None:
                check_limit(f.name, getattr(self, f.name))

    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def to_wire(self) -> list:
        """[[name, value], ...] of the limits set (what a LIMITS message carries)."""
        return [[f.name, getattr(self, f.name)] for f in fields(self) if getattr(self, f.name) is not None]

    @classmethod
    def from_wire(cls, pairs: Iterable[tuple[str, int]]) -> "ClientCaps":
        """What a broker announced; names this client does not know (a newer broker's) are left
        to the broker, which still enforces them."""
        known = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in pairs if name in known})

    def describe(self) -> str:
        set_ = [f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name) is not None]
        return ", ".join(set_) or "none"


NO_CAPS = ClientCaps()


def check_limit(name: str, value: Any) -> int:
    """A limit as an operator gives it (a command line's, a TOML file's): ValueError naming it."""
    if type(value) is not int or not 1 <= value <= LARGEST:
        raise ValueError(f"{name} is the most {LIMITS[name][1]}, a whole number of at least 1, not {value!r}")
    return value


def set_members(values: Iterable[Any]) -> int:
    """The members of the sets among a subscription's variable values (ValueSets of `in`/`not in`
    constraints and set-valued parameters), counted as the broker holds them: a parameter that
    several predicates read is held once per variable."""
    from .model import ValueSet  # (here: the launcher reads LIMITS, and `overlay status` loads no model)

    n = 0
    for v in values:
        if type(v) is ValueSet:
            n += len(v.values)
        elif isinstance(v, (set, frozenset)):
            n += len(v)
    return n


def too_many_subscriptions(caps: ClientCaps, held: int, who: str, broker: str) -> LimitExceeded | None:
    """The error for a new subscription of a client that holds `held` at the broker, or None."""
    cap = caps.max_subscriptions
    if cap is None or held < cap:
        return None
    return LimitExceeded(
        f"{who} holds {held:,} subscriptions at broker {broker}, its limit per client connection "
        f"(max_subscriptions = {cap:,}, `eventpy broker {LIMITS['max_subscriptions'][0]}`): close some, "
        "or ask the overlay's operator for more", "max_subscriptions", cap, broker)


def too_many_types(caps: ClientCaps, told: int, who: str, etype: str, broker: str) -> LimitExceeded | None:
    """The error for a new event type of a client that told the broker of `told`, or None."""
    cap = caps.max_event_types
    if cap is None or told < cap:
        return None
    return LimitExceeded(
        f"{who} has told broker {broker} of {told:,} event types, its limit per client connection "
        f"(max_event_types = {cap:,}, `eventpy broker {LIMITS['max_event_types'][0]}`), so it cannot use "
        f"{etype!r} as well: a program that makes types on the fly (a class per request) reuses them "
        "instead, or asks the overlay's operator for more", "max_event_types", cap, broker)


def too_many_members(caps: ClientCaps, members: int, what: str, broker: str) -> LimitExceeded | None:
    """The error for a subscription that would hold `members` set members, or None."""
    cap = caps.max_set_members
    if cap is None or members <= cap:
        return None
    return LimitExceeded(
        f"{what} would hold {members:,} set members at broker {broker}, above its limit per "
        f"subscription (max_set_members = {cap:,}, `eventpy broker {LIMITS['max_set_members'][0]}`): "
        "keep large sets elsewhere, or ask the overlay's operator for more", "max_set_members", cap, broker)
