"""The drain barrier at a broker (`eventpy.drain`).

A node's FLUSH travels behind everything it sent (links are FIFO) and is answered once every
message it sent before has been processed by every broker and client it reached. So a broker
forwards a FLUSH from a link to the links that the messages from that link were sent to since its
previous FLUSH, and to those that a FLUSH of that link still awaits (they have not confirmed the
older messages yet); it answers once all of them have. What it sent back to the FLUSH's origin
needs no asking: the answer travels behind it. Before, a FLUSH went to every link, so one attached
peer that never answered (a stuck program) held every drain at that broker, and the drain's
TimeoutError named the broker, not the peer.

A FLUSH carries a budget, as an AckReq does (_acks): a broker waits that long, gives each broker
it asks a share of it, and then answers naming the links that stayed silent; the broker next to a
silent peer gives up first, so the answer that travels back names that peer. A silent link stays
owed: the next FLUSH of the same origin asks it again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Hashable

from ..messages import Flush, FlushAck
from ._acks import HOP_SHARE, Waits
from ._state import MessageError

Link = Hashable
Sends = list


@dataclass
class FlushWait:
    origin: Link | None  # who asked (None: the broker itself)
    waiting: set  # links that have not answered yet
    deadline: float | None  # None: no budget (a peer that sent none waits as long as it takes)
    failed: list = field(default_factory=list)  # who did not answer in time, as said to the user


class FlushTracker(Waits):
    def __init__(self, broker: Any) -> None:
        self.broker = broker
        # link -> the links the messages from it were sent to since its last FLUSH (the PUB path
        # adds to it: `note`)
        self.reached: dict[Link, set[Link]] = {}
        self.waits: dict[tuple, FlushWait] = {}
        # origin -> how many of its pending FLUSHes await each link: what a new FLUSH of the same
        # origin must ask too, found without a pass over every pending FLUSH (10,000 FLUSHes of
        # one client, held by a peer that never answers, took that broker 16 s, growing as the
        # square of their number)
        self.owed: dict[Link, Counter] = {}

    def note(self, link: Link, out: Sends) -> None:
        reached = self.reached.get(link)
        if reached is None:
            reached = self.reached[link] = set()
        for target, _ in out:
            reached.add(target)

    def on_flush(self, link: Link | None, msg: Flush, out: Sends) -> None:
        if msg.token in self.waits:
            raise MessageError(f"flush {msg.token!r} seen twice: the overlay has a cycle")
        links = self.broker.links
        waiting = self.reached.pop(link, set())
        waiting.update(self.owed.get(link, ()))
        waiting = {t for t in waiting if t != link and t in links}
        budget = msg.budget
        deadline = None if budget is None else self.broker.clock() + budget
        self.waits[msg.token] = FlushWait(link, waiting, deadline)
        if waiting:
            self.owed.setdefault(link, Counter()).update(waiting)
        if waiting:
            to_broker = Flush(msg.token, None if budget is None else budget * HOP_SHARE)
            to_client = Flush(msg.token)  # a client answers when its deliveries are done: no budget
            for target in sorted(waiting, key=str):
                out.append((target, to_broker if links[target] == "broker" else to_client))
        else:
            self._finish(msg.token, out)

    def on_flush_ack(self, link: Link, msg: FlushAck, out: Sends) -> None:
        wait = self.waits.get(msg.token)
        if wait is not None and link in wait.waiting:
            self._settled(wait.origin, (link,))
        self._answered(msg.token, link, msg.failed, out)

    def _settled(self, origin: Link | None, links: Any) -> None:
        """`links` no longer awaited by one pending FLUSH of `origin` (answered, gone, or out of
        budget)."""
        owed = self.owed.get(origin)
        if owed is None:
            return
        for t in links:
            owed[t] -= 1
            if owed[t] <= 0:
                del owed[t]
        if not owed:
            del self.owed[origin]

    def expire(self, now: float) -> Sends:
        out: Sends = []
        for token, wait in list(self.waits.items()):
            if wait.deadline is not None and wait.deadline <= now:
                wait.failed.extend(self._name(t) for t in sorted(wait.waiting, key=str))
                if wait.origin is not None:  # they still owe the origin an answer for its messages
                    self.reached.setdefault(wait.origin, set()).update(wait.waiting)
                self._settled(wait.origin, wait.waiting)
                wait.waiting.clear()
                self._finish(token, out)
        return out

    def disconnect(self, link: Link, out: Sends) -> None:
        """A link that went cannot answer, and what was sent to it is lost: not waited for."""
        self.reached.pop(link, None)
        self.owed.pop(link, None)
        for reached in self.reached.values():
            reached.discard(link)
        for token, wait in list(self.waits.items()):
            if wait.origin == link:
                del self.waits[token]
            elif link in wait.waiting:
                self._settled(wait.origin, (link,))
                wait.waiting.discard(link)
                if not wait.waiting:
                    self._finish(token, out)

    def _name(self, link: Link) -> str:
        if self.broker.links.get(link) == "broker":
            return f"broker {link}"
        return f"client {link} at broker {self.broker.name}"

    def _finish(self, token: tuple, out: Sends) -> None:
        wait = self.waits.pop(token)
        if wait.origin is not None and wait.origin in self.broker.links:
            out.append((wait.origin, FlushAck(token, ", ".join(wait.failed))))
