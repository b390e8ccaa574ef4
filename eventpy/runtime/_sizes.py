"""Whether a value fits the messages of the transport a node uses. Over TCP a message is one
frame of at most `max_frame` bytes (1 MiB by default); a value that cannot fit is refused where
the program gives it (publish, subscribe, update) with an error naming it, instead of being
dropped by the transport later, which the program could not notice (an update it believed sent).
Only strings and sets can be that large, so only they are measured, and exactly only when their
length alone comes near the limit (publish is the hot path)."""

from __future__ import annotations

from typing import Any, Iterable

from ..guards import SUBSCRIBED_AT
from .model import ValueSet

HEADROOM = 4096  # bytes for the rest of the message: names, ids, the other values


def _measured(v: Any) -> bool:
    return type(v) is str or isinstance(v, (set, frozenset))


def encoded_size(v: Any, limit: int) -> int:
    """About the bytes `v` takes in a message (at least its length); exact (msgpack, UTF-8) once
    4 bytes a character could reach `limit` (a limit of 0: always exact). At most 5 * (size + 1)."""
    if type(v) is str:
        n = len(v)
        return n if 4 * n + 5 < limit else len(v.encode("utf-8", "surrogatepass")) + 5
    if isinstance(v, (set, frozenset)):
        n = sum(len(x) + 1 if type(x) is str else 9 for x in v)
        if n * 4 < limit:
            return n
        return sum(len(x.encode("utf-8", "surrogatepass")) + 5 if type(x) is str else 9 for x in v) + 5
    return 9


def check_fits(max_frame: int | None, what: str, items: Iterable[tuple[str, Any]]) -> None:
    """ValueError if the (name, value) items, which travel in one message, cannot fit a message of
    `max_frame` bytes; it names the largest. A name may come more than once (a parameter that
    several predicates read travels in each of their variables)."""
    if max_frame is None:
        return
    room = max_frame - HEADROOM
    measured = [(name, v) for name, v in items if _measured(v)]
    sizes = [(encoded_size(v, room), name) for name, v in measured]
    total = sum(n for n, _ in sizes)
    if 5 * (total + len(sizes)) >= room:
        # each value's length proved only that value fits; together, at up to 4 bytes a character,
        # they may not (two strings of 200,000 emoji each passed as 400,000 "bytes"): exactly
        sizes = [(encoded_size(v, 0), name) for name, v in measured]
        total = sum(n for n, _ in sizes)
    if total > room:
        per_name: dict[str, list[int]] = {}
        for n, name in sizes:
            per_name.setdefault(name, []).append(n)
        name = max(per_name, key=lambda k: sum(per_name[k]))
        each = per_name[name]
        n = sum(each)
        copies = f" ({len(each)} times: every predicate that reads it carries it)" if len(each) > 1 else ""
        others = f" (with the others, {total})" if n != total else ""
        raise ValueError(f"{what} {name!r} takes {n} bytes{copies}{others}, and a message over TCP holds at "
                         f"most {max_frame}: it could not be sent (keep large data elsewhere, such as a file "
                         "or a store, and send a reference to it)")


def check_sent(max_frame: int | None, plan: Any, env: dict, names: Iterable[str]) -> None:
    """ValueError if the subscription variables that read the parameters `names` (what one SUB or
    UPD carries) cannot fit a message: a parameter read by several predicates travels once in each
    of their variables (`a in names or b in names`: the set twice), and one read only by a switch
    travels as a bool. Measured through the variables only when the parameters' lengths alone do
    not prove they fit (an update of numbers measures nothing)."""
    if max_frame is None:
        return
    big = [(k, env[k]) for k in names if _measured(env.get(k))]
    if not big:
        return
    room = max_frame - HEADROOM
    copies = max(len(plan.by_param.get(k, ())) for k, _ in big)
    if 5 * sum(encoded_size(v, room) + 1 for _, v in big) * max(copies, 1) < room:
        return
    full = {SUBSCRIBED_AT: 0.0, **env}
    wanted = {k for k, _ in big}
    carried = []
    for i in sorted({i for k in wanted for i in plan.by_param.get(k, ())}):
        var = plan.vars[i]
        value = var.fn(full)
        value = value.values if isinstance(value, ValueSet) else value
        if _measured(value):
            carried.append((min(wanted & var.deps), value))
    check_fits(max_frame, "parameter", carried)
