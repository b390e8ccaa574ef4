"""Free TCP ports on 127.0.0.1, for servers a test, a benchmark or a tool starts itself.

A port found free can be taken before the server binds it (another checkout's test run on the
same machine): callers that start servers retry on another port or block when a bind fails."""

from __future__ import annotations

import random
import socket

HOST = "127.0.0.1"


def free_port() -> int:
    """A port the system reports free now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def free_port_block(k: int, first: int = 17200, last: int = 20000, *, step: int = 10,
                    scatter: bool = True) -> int:
    """The first port of `k` consecutive free ones, a multiple of `step` from `first` on, below
    `last`. `scatter`: the scan starts at a random block, so that runs started together (test
    runs of several checkouts) do not all find the same block free and race for it."""
    blocks = list(range(first, last - k + 1, step))
    if not blocks:
        raise ValueError(f"no block of {k} ports fits between {first} and {last}")
    start = random.randrange(len(blocks)) if scatter else 0
    for base in blocks[start:] + blocks[:start]:
        if _all_free(base, k):
            return base
    raise RuntimeError(f"no {k} consecutive free ports on {HOST} between {first} and {last}")


def _all_free(base: int, k: int) -> bool:
    held = []
    try:
        for port in range(base, base + k):
            s = socket.socket()
            held.append(s)
            s.bind((HOST, port))  # held until all are bound: the block is free as a whole
        return True
    except OSError:
        return False
    finally:
        for s in held:
            s.close()
