"""The lines `eventpy overlay status` prints under its table about what flows through the
overlay: each event type's subscriptions and publishers, and the messages a broker refused.
They answer "why did my subscriber get nothing?" where the table cannot: a subscriber and a
publisher that spell the type differently (or sit on two overlays) each show alone, and a
refusal (a schema other than the overlay's, a malformed message) is counted and points at the
broker's log, which has the reason."""

from __future__ import annotations

from pathlib import Path

from ._natural_order import natural

MAX_TYPES = 30  # an overlay with many types (classes made on the fly) lists the first ones


def type_lines(states: dict[str, dict], alive: set[str]) -> list[str]:
    """One line per event type the live brokers know: where its subscribers and publishers are
    attached, and what is missing for an event to travel."""
    subs: dict[str, dict[str, int]] = {}
    pubs: dict[str, list[str]] = {}
    for broker, s in sorted(states.items(), key=lambda item: natural(item[0])):
        if broker not in alive:
            continue
        for name, t in s.get("types", {}).items():
            n = t.get("client_subscriptions", 0)
            subs.setdefault(name, {})
            pubs.setdefault(name, [])
            if n:
                subs[name][broker] = n
            pubs[name] += [f"{client} at {broker}" for client in t.get("client_publishers", ())]
    if not subs:
        return []
    lines = ["event types (subscriptions and publishers of the clients attached now):"]
    for name in sorted(subs)[:MAX_TYPES]:
        where = subs[name]
        total = sum(where.values())
        said = (f"{total} subscription{'s' * (total != 1)} ({', '.join(f'{b}: {n}' for b, n in where.items())})"
                if total else "no subscription")
        said += f"; published by {', '.join(pubs[name])}" if pubs[name] else "; no publisher has advertised it"
        if total and not pubs[name]:
            said += " (a publisher of another type name, or on another overlay, reaches none of them)"
        lines.append(f"  {name}: {said}")
    if len(subs) > MAX_TYPES:
        lines.append(f"  ... and {len(subs) - MAX_TYPES} more")
    return lines


def refused_lines(run_dir: Path, states: dict[str, dict]) -> list[str]:
    """A line for each broker that refused messages or connections: how many, and the log that
    says why (within its bound: the first 10 a minute per link or peer host, then how many it
    left out, eventpy/runtime/_log_limit.py)."""
    lines = []
    for broker, s in sorted(states.items(), key=lambda item: natural(item[0])):
        stats = s.get("stats", {})
        log = run_dir / f"{broker}.log"
        n = stats.get("refused", 0)
        if n:
            lines.append(f"broker {broker} refused {n} message{'s' * (n != 1)} (a schema other than the "
                         f"overlay's, a malformed or unknown message): the reasons are WARNING lines in "
                         f"{log} (the first 10 a minute per link)")
        lines += limit_lines(broker, s)
        n = stats.get("refused_connections", 0)
        if n:
            lines.append(f"broker {broker} refused {n} connection{'s' * (n != 1)} (a bad frame, a name in "
                         f"use, a failed authentication, another protocol version): the reasons are WARNING "
                         f"lines in {log} (the first 10 a minute per peer host; a peer of another protocol "
                         f"version once)")
    return lines


def limit_lines(broker: str, s: dict) -> list[str]:
    """The broker's per-client limits, if it has any, and a line per client that hit one (the
    clients that hit them last, up to broker/_caps.py's bound): who to talk to."""
    limits = s.get("limits") or {}
    if not limits:
        return []
    lines = [f"broker {broker} limits each client to " + ", ".join(f"{k} = {v:,}" for k, v in limits.items())]
    for who, hits in (s.get("limit_hits") or {}).items():
        said = ", ".join(f"{k} ({limits.get(k, '?'):,}) {n} time{'s' * (n != 1)}" if isinstance(limits.get(k), int)
                         else f"{k} {n} time{'s' * (n != 1)}" for k, n in hits.items())
        lines.append(f"  client {who} at {broker} was refused past {said}")
    return lines
