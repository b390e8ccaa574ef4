"""The overlay's messages (004 Algorithm 1) and what a peer tells others about itself.

A message is (kind, src, dst, payload); payloads by kind:
CONNECT (dz, Δ of the child, its Desc); ACK (dz, the parent's Desc); DISCONNECT (dz, "parent" if the
parent lets the child go, "child" if the child leaves); HINT, the paper's POTENTIALPARENT (dz, a
Desc or None, the sender's Desc); DETECTCYCLE (originator, the new parent, dz, Δ).
"""

from __future__ import annotations

from typing import NamedTuple

CONNECT, ACK, DISCONNECT, HINT, CYCLE = "CONNECT", "ACK", "DISCONNECT", "HINT", "DETECTCYCLE"


class Desc(NamedTuple):
    """What gossip says about a peer: its id, Δ, peer-level subscription (a publisher: its
    advertisement), whether it publishes, its depth (the hops events take to reach it, by its
    parents' depths; None while an expression has no parent) and the event rate it measured per
    dz-expression (events per cycle)."""

    id: int
    delay: int
    dz: tuple[str, ...]
    publisher: bool
    depth: int | None
    rates: tuple[tuple[str, float], ...]
