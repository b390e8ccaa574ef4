"""Cascading acknowledgements at a broker (000 §9.3).

A client that wants to know its changes are in force sends an AckReq behind them on its FIFO link.
The broker acknowledges at once when the SUB/UNSUB/UPD messages it received from that link since
the previous AckReq had only local effects; otherwise it sends its own AckReq to every broker it
forwarded them to (behind them, on the same FIFO links) and answers once all of those have, or
when the budget runs out, naming the brokers that stayed silent. Each hop gives the next one a
share of its own budget, so the broker next to a silent one times out first and the answer that
travels back names the silent broker, not a healthy one in between.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count
from typing import Any, Hashable

from ..messages import Ack, AckReq, Sub, Unsub, Upd

Link = Hashable
Sends = list
_CHANGES = (Sub, Unsub, Upd)
HOP_SHARE = 0.8  # of its own budget a broker gives the next hop


@dataclass
class AckWait:
    origin: Link  # who asked
    token: tuple  # their token
    waiting: set  # brokers that have not answered yet
    failed: list  # names of brokers that did not acknowledge in time
    deadline: float


class Waits:
    """What AckTracker and FlushTracker share: waits by token, each for the answers of a set of
    links, finished (`_finish`) when the last one answers or the budget runs out."""

    waits: dict

    def _answered(self, token: tuple, link: Link, failed: str, out: Sends) -> None:
        wait = self.waits.get(token)
        if wait is None or link not in wait.waiting:
            return  # late (already answered as failed) or not ours
        wait.waiting.discard(link)
        if failed:
            wait.failed.append(failed)
        if not wait.waiting:
            self._finish(token, out)

    def _finish(self, token: tuple, out: Sends) -> None:
        raise NotImplementedError

    def next_deadline(self) -> float | None:
        return min((w.deadline for w in self.waits.values() if w.deadline is not None), default=None)


class AckTracker(Waits):
    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.forwarded: dict[Link, set[Link]] = {}  # link -> brokers its changes went to
        self.waits: dict[tuple, AckWait] = {}
        self._tokens = count(1)

    def note_forwarded(self, link: Link, out: Sends) -> None:
        brokers = self.broker.broker_links
        targets = [t for t, m in out if type(m) in _CHANGES and t in brokers]
        if targets:
            self.forwarded.setdefault(link, set()).update(targets)

    def on_request(self, link: Link, msg: AckReq, out: Sends) -> None:
        waiting = {t for t in self.forwarded.pop(link, set()) if t in self.broker.links}
        if not waiting:  # the effect stayed local
            out.append((link, Ack(msg.token, "")))
            return
        token = (self.broker.name, next(self._tokens))
        self.waits[token] = AckWait(link, msg.token, waiting, [], self.broker.clock() + msg.budget)
        for target in sorted(waiting, key=str):
            out.append((target, AckReq(token, msg.budget * HOP_SHARE)))

    def on_ack(self, link: Link, msg: Ack, out: Sends) -> None:
        self._answered(msg.ref, link, msg.failed, out)

    def expire(self, now: float) -> Sends:
        out: Sends = []
        for token, wait in list(self.waits.items()):
            if wait.deadline <= now:
                wait.failed.extend(sorted(str(x) for x in wait.waiting))
                self._finish(token, out)
        return out

    def disconnect(self, link: Link, out: Sends) -> None:
        self.forwarded.pop(link, None)
        for other in [o for o, targets in self.forwarded.items() if link in targets]:
            # what went to it is lost with it, and a link of that name that comes back owes nothing
            # of it (before, every link whose changes had gone there kept the name until its next
            # AckReq, which then asked the new link for changes it never saw)
            targets = self.forwarded[other]
            targets.discard(link)
            if not targets:
                del self.forwarded[other]
        for token, wait in list(self.waits.items()):
            if wait.origin == link:
                del self.waits[token]
            elif link in wait.waiting:  # it cannot answer any more: name it
                wait.waiting.discard(link)
                wait.failed.append(str(link))
                if not wait.waiting:
                    self._finish(token, out)

    def _finish(self, token: tuple, out: Sends) -> None:
        wait = self.waits.pop(token)
        if wait.origin in self.broker.links:
            out.append((wait.origin, Ack(wait.token, ",".join(wait.failed))))
