"""The free-port helpers the tests, benchmarks, tools and eventpy.testing share."""

from __future__ import annotations

import socket

import pytest

from eventpy.runtime._ports import free_port, free_port_block


def test_a_block_is_free_as_a_whole_and_inside_its_range():
    base = free_port_block(3, 17200, 18000)
    assert 17200 <= base and base + 3 <= 18000 and base % 10 == 0
    held = []
    try:
        for port in range(base, base + 3):
            s = socket.socket()
            held.append(s)
            s.bind(("127.0.0.1", port))
    finally:
        for s in held:
            s.close()


def test_a_taken_port_moves_the_block_on():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        first = port - port % 10
        base = free_port_block(2, first, first + 40, scatter=False)
        assert not base <= port < base + 2


def test_no_room_is_said():
    with pytest.raises(ValueError, match="no block of 5 ports"):
        free_port_block(5, 17200, 17203)
    assert 0 < free_port() < 65536
