"""Whether a value fits the messages of the transport a node uses. Over TCP a message is one
frame of at most `max_frame` bytes (1 MiB by default); a value that cannot fit is refused where
the program gives it (publish, subscribe, update) with an error naming it, instead of being
dropped by the transport later, which the program could not notice (an update it believed sent).
Only strings and sets can be that large, so only they are measured, and exactly only when their
length alone comes near the limit (publish is the hot path)."""

from __future__ import annotations

from typing import Any, Iterable

HEADROOM = 4096  # bytes for the rest of the message: names, ids, the other values


def encoded_size(v: Any, limit: int) -> int:
    """At least the bytes `v` takes in a message; exact (msgpack, UTF-8) once it nears `limit`."""
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
    """ValueError if one of the (name, value) items cannot fit a message of `max_frame` bytes."""
    if max_frame is None:
        return
    room = max_frame - HEADROOM
    for name, v in items:
        if type(v) is str or isinstance(v, (set, frozenset)):
            n = encoded_size(v, room)
            if n > room:
                raise ValueError(f"{what} {name!r} takes {n} bytes, and a message over TCP holds at most "
                                 f"{max_frame}: it could not be sent (keep large data elsewhere, such as "
                                 "a file or a store, and send a reference to it)")
