"""Wire decoding against frames a peer could send: valid frames mutated byte by byte (bit flips,
truncation, insertions, deletions, two frames spliced), valid bodies mutated field by field (a
value of the wrong type, ints at and past the 64-bit ends, NaN and infinities, deep nesting, the
wrong arity, unknown kinds, maps, bin and ext values), and hand-made msgpack the packer never
writes (headers that claim more than the body holds, nesting deeper than msgpack's stack).
Decoding gives messages that are valid (they encode again, to the same message) or raises
WireError, never anything else. test_wire.py has the round trips, splits and plain random bytes.

EVENTPY_FUZZ=N runs N random examples per test (a bug hunt); by default a fixed, derandomized
few, fast and stable in CI.
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct

import msgpack
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from eventpy.guards import SUBSCRIBED_AT, compile_guard
from eventpy.runtime import messages
from eventpy.runtime.messages import (Ack, AckReq, Adv, Auth, Bye, Flush, FlushAck, Hello, Pub, Refused, Sub, Unadv,
                                      Unsub, Upd)
from eventpy.runtime.model import INF, EventType, Interval, SetDelta, ValueSet
from eventpy.runtime.wire import FrameDecoder, WireError, decode_body, encode

_RUNS = int(os.environ.get("EVENTPY_FUZZ", "0"))
FUZZ = settings(max_examples=_RUNS or 300, derandomize=not _RUNS, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

Q = EventType("stocks.Quote", firm=str, price=float, vol=int)
PLAN = compile_guard("firm in watch and price < limit * 2 and abs(price - vol) > 1 and on or price < elapsed()", Q,
                     {"watch": frozenset, "limit": float, "on": bool})
VALUES = PLAN.evaluate({"watch": frozenset({"IBM", "HP"}), "limit": 5.0, "on": True, SUBSCRIBED_AT: 0.0})
MESSAGES = [
    Adv(Q.name, Q.to_wire()),
    Unadv(Q.name),
    Sub(Q.name, 7, PLAN.spec, VALUES),
    Unsub(Q.name, 7),
    Upd(Q.name, 7, {0: (SetDelta(frozenset({"HP"}), frozenset({"ORCL"})), 3), 1: (Interval(-INF, True, 12.5, False), 4),
                    2: (False, 1), 3: (frozenset({1, "x"}), 2), 4: (ValueSet(frozenset({"a"}), True), 9)}),
    Pub(Q.name, ("IBM", 9.5, 3), "node-1", 42, 1700000000.25, (7, 9)),
    Flush(("node-1", 3)),
    FlushAck(("node-1", 3)),
    Ack(("node-1", 7, 4), "b2"),
    AckReq(("node-1", 8), 1.5),
    Hello("node-1", "client", 1),
    Hello("b0", "broker", 1, "resub", True),
    Bye("done"),
    Refused("qa.T", "broker b0: schema (a: str), known as (a: int)"),
    Auth("00ff", ""),
]


def same(a, b) -> bool:
    """Equality where NaN equals NaN (a decoded NaN is a valid value) and sets compare as sets."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, frozenset):
        return len(a) == len(b) and all(any(same(x, y) for y in b) for x in a)
    return a == b


def valid(msg) -> None:
    """A decoded message is one of the protocol's, and it encodes again, to the same message: what
    the decoder accepts, a peer can be sent (nothing half-typed gets past it)."""
    assert type(msg) in vars(messages).values() and dataclasses.is_dataclass(msg), msg
    (back,) = FrameDecoder(1 << 24).feed(encode(msg, 1 << 24))
    assert same(back, msg), (msg, back)


def decode(data: bytes, max_frame: int = 1 << 16) -> None:
    """Both of the decoder's ways through `data`, then its end: messages, all valid, or WireError."""
    for frames in (False, True):
        dec = FrameDecoder(max_frame)
        try:
            got = dec.feed_frames(data) if frames else dec.feed(data)
            dec.close()
        except WireError as e:
            got = e.before
        for item in got:
            valid(item[0] if frames else item)


# -- byte-level mutations of valid frames --------------------------------------------------------------
stream = st.lists(st.sampled_from(MESSAGES), min_size=1, max_size=4).map(lambda ms: b"".join(map(encode, ms)))


@st.composite
def mutated_stream(draw) -> bytes:
    data = bytearray(draw(stream))
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "flip", "byte", "cut", "insert", "delete", "splice"]))
        i = draw(st.integers(0, max(0, len(data) - 1)))
        if how == "flip" and data:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif how == "byte" and data:
            data[i] = draw(st.sampled_from([0x00, 0x7f, 0x80, 0x90, 0xc0, 0xc1, 0xca, 0xcb, 0xcf, 0xd3, 0xd9, 0xdc,
                                            0xdd, 0xde, 0xdf, 0xff, draw(st.integers(0, 255))]))
        elif how == "cut":
            del data[i:]
        elif how == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=9))
        elif how == "delete":
            del data[i:i + draw(st.integers(1, 9))]
        elif how == "splice":
            other = draw(stream)
            data[i:] = other[draw(st.integers(0, len(other) - 1)):]
    return bytes(data)


@FUZZ
@given(mutated_stream())
def test_mutated_frames_decode_to_valid_messages_or_wire_error(data):
    decode(data)


# -- field-level mutations of valid bodies ----------------------------------------------------------------
def body_of(msg) -> list:
    return msgpack.unpackb(encode(msg)[4:], raw=False)


def nested(depth: int):
    v: object = 1
    for _ in range(depth):
        v = [v]
    return v


odd = st.one_of(
    st.none(), st.booleans(), st.binary(max_size=4), st.text(max_size=4),
    st.sampled_from([2**64 - 1, -2**63, 2**63, 2**63 - 1, 0, -1, math.nan, INF, -INF, -0.0, 1e308, 5e-324]),
    st.integers(-2**63, 2**64 - 1), st.floats(),
    st.sampled_from([nested(30), nested(41), nested(200), {"k": 1}, {1: 2}, [], [[]], ["I"], ["S", [], True],
                     ["I", math.nan, True, 1, False], ["I", 1, 1, 2, 0], ["D", [[1]], []], ["F", [{}]],
                     msgpack.ExtType(5, b"xy"), msgpack.Timestamp(1, 2)]),
)


def paths(obj, at=()):
    """Every position inside a body (a path of indexes), the body itself first."""
    yield at
    if isinstance(obj, list):
        for i, x in enumerate(obj):
            yield from paths(x, at + (i,))


def put(obj, path, value):
    if not path:
        return value
    out = list(obj)
    out[path[0]] = put(obj[path[0]], path[1:], value)
    return out


@st.composite
def mutated_body(draw) -> bytes:
    body = body_of(draw(st.sampled_from(MESSAGES)))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(list(paths(body))))
        how = draw(st.sampled_from(["replace", "replace", "append", "drop", "kind"]))
        target = body
        for i in where:
            target = target[i]
        if how == "replace" and where:
            body = put(body, where, draw(odd))
        elif how == "append" and isinstance(target, list):
            body = put(body, where, target + [draw(odd)])
        elif how == "drop" and isinstance(target, list) and target:
            body = put(body, where, target[:-1])
        elif how == "kind":
            body = [draw(st.one_of(st.sampled_from(["adv", "pub", "PUB", "nope", "", "x" * 300]), odd)), *body[1:]]
    try:
        return msgpack.packb(body, use_bin_type=True)
    except (OverflowError, ValueError, TypeError):  # an int past 64 bits: the packer has no way to write it
        return msgpack.packb(body[:1], use_bin_type=True)


@FUZZ
@given(mutated_body())
@example(msgpack.packb(["sub", Q.name, 1, [[[], -1, [5]]], []]))  # a tree that is a bare scalar
def test_mutated_bodies_decode_to_valid_messages_or_wire_error(body):
    decode(struct.pack(">I", len(body)) + body)


def _outcome(body: bytes):
    try:
        return decode_body(body)
    except WireError:
        return WireError


PUB_BODY = body_of(Pub(Q.name, ("IBM", 9.5, 3), "node-1", 42, 1700000000.25, (7, 9)))


@FUZZ
@given(st.lists(st.tuples(st.integers(1, 6), odd), max_size=3))
def test_a_pub_body_decodes_alike_on_the_fast_path_and_the_general_one(changes):
    """decode_body takes a body that begins as every encoder writes a PUB (a fixarray of 7, "pub")
    on a path of its own; the same array with a 16-bit header goes the general way. Both accept
    the same bodies and give the same messages."""
    body = list(PUB_BODY)
    for i, value in changes:
        body[i] = value
    try:
        packed = msgpack.packb(body, use_bin_type=True)
    except (OverflowError, ValueError, TypeError):
        return
    assert packed.startswith(b"\x97\xa3pub")
    general = b"\xdc\x00\x07" + packed[1:]
    fast, slow = _outcome(packed), _outcome(general)
    assert (fast is WireError) == (slow is WireError), (body, fast, slow)
    if fast is not WireError:
        assert same(fast, slow), (fast, slow)
        valid(fast)


# -- msgpack the packer never writes ------------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    b"\x95\xa3pub" + b"\xdd\xff\xff\xff\xff",  # an array announcing 2**32 - 1 items in a few bytes
    b"\x92\xa3bye\xdb\xff\xff\xff\xff",  # a str announcing 4 GiB
    b"\x92\xa3bye\xc6\xff\xff\xff\xff",  # a bin announcing 4 GiB
    b"\x92\xa3bye\xc9\xff\xff\xff\xff\x05",  # an ext announcing 4 GiB
    b"\x92\xa3bye" + b"\x91" * 100_000 + b"\xc0",  # nesting far beyond msgpack's stack
    b"\x92\xa3bye\xdf\xff\xff\xff\xff",  # a map announcing 2**32 - 1 pairs
    b"\x92\xa3bye\xa1\xff",  # a str that is not UTF-8
    b"\x92\xa3bye\xd7\xff" + b"\xff" * 8,  # a timestamp out of range
    b"\x92\xa3bye\xc1",  # the byte msgpack never uses
    b"\x92\xa3byeextra",  # bytes after the body's object
    b"\xcf" + b"\xff" * 8,  # an uint64 where the array should be
])
def test_hand_made_msgpack_is_refused_with_wire_error(body):
    with pytest.raises(WireError):
        decode_body(body)
    decode(struct.pack(">I", len(body)) + body, max_frame=1 << 20)
