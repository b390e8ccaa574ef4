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
    """About the bytes `v` takes in a message (at least its length); exact (msgpack, UTF-8) once
    4 bytes a character could reach `limit`."""
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
    `max_frame` bytes; it names the largest."""
    if max_frame is None:
        return
    room = max_frame - HEADROOM
    sizes = [(encoded_size(v, room), name) for name, v in items
             if type(v) is str or isinstance(v, (set, frozenset))]
    total = sum(n for n, _ in sizes)
    if total > room:
        n, name = max(sizes)
        others = f" (with the others, {total})" if n != total else ""
        raise ValueError(f"{what} {name!r} takes {n} bytes{others}, and a message over TCP holds at most "
                         f"{max_frame}: it could not be sent (keep large data elsewhere, such as a file or "
                         "a store, and send a reference to it)")
