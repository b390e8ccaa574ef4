"""Frames: round trips of every message kind, any split of the byte stream, merged frames, and
refusal (WireError, never another exception) of whatever is not a valid frame."""

from __future__ import annotations

import math
import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventpy.guards import compile_guard
from eventpy.runtime.messages import (Ack, AckReq, Adv, Auth, Bye, Flush, FlushAck, Hello, Limits, Pub, Refused, Sub,
                                      Unadv, Unsub, Upd)
from eventpy.runtime.model import INF, EventType, Interval, SetDelta
from eventpy.runtime.wire import FrameDecoder, WireError, decode_body, encode, encode_many, pub_frame_for

Q = EventType("stocks.Quote", firm=str, price=float, vol=int)
PLAN = compile_guard("firm in watch and price < limit * 2 and abs(price - vol) > 1 and on", Q,
                     {"watch": frozenset, "limit": float, "on": bool})
VALUES = PLAN.evaluate({"watch": frozenset({"IBM", "HP"}), "limit": 5.0, "on": True})

MESSAGES = [
    Adv("stocks.Quote", Q.to_wire()),
    Unadv("stocks.Quote"),
    Sub("stocks.Quote", 7, PLAN.spec, VALUES),
    Unsub("stocks.Quote", 7),
    Upd("stocks.Quote", 7, {0: (SetDelta(frozenset({"HP"}), frozenset({"ORCL"})), 3),
                            1: (Interval(-INF, True, 12.5, False), 4), 2: (False, 1)}),
    Pub("stocks.Quote", ("IBM", 9.5, 3), "node-1", 42, 1700000000.25, (7, 9)),
    Flush(("node-1", 3)),
    FlushAck(("node-1", 3)),
    Ack(("node-1", 7, 4), "b2"),
    AckReq(("node-1", 8), 1.5),
    Hello("node-1", "client", 1),
    Hello("b0", "broker", 1, "resub", True),
    Bye("done"),
    Refused("qa.T", "broker b0: schema (a: str), known as (a: int)"),
    Adv("stocks.Quote", Q.to_wire(), False),  # a subscriber's schema
    Sub("stocks.Quote", 8, PLAN.spec, VALUES, 2.5),  # a broker's summary that moves with time
    Auth("00ff", ""),
    Auth("", "ab" * 32),
    Refused("qa.T", "broker refused it: ... (max_subscriptions = 3, ...)", 12),  # a subscription's (protocol 5)
    Limits([("max_subscriptions", 3), ("max_set_members", 1 << 40)]),
    Limits([]),
]


def test_a_refused_advertisement_is_the_frame_it_always_was():
    body = msgpack.unpackb(encode(Refused("qa.T", "why"))[4:])
    assert body == ["refused", "qa.T", "why"]


@pytest.mark.parametrize("limits", [{}, [["max_subscriptions"]], [["max_subscriptions", 0]], [[3, 3]],
                                    [["max_subscriptions", 1.5]], [["x", 1]] * 65])
def test_malformed_limits_are_refused(limits):
    with pytest.raises(WireError):
        decode_body(msgpack.packb(["limits", limits]))


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: type(m).__name__)
def test_round_trip(msg):
    (back,) = FrameDecoder().feed(encode(msg))
    assert back == msg


def test_a_sub_that_does_not_move_is_the_frame_it_always_was():
    assert encode(Sub("stocks.Quote", 7, PLAN.spec, VALUES)) == encode(Sub("stocks.Quote", 7, PLAN.spec, VALUES, 0.0))
    body = msgpack.unpackb(encode(Sub("stocks.Quote", 7, PLAN.spec, VALUES))[4:])
    assert len(body) == 5  # kind, type, sid, spec, values: a peer of protocol 3 reads it


def test_every_split_of_the_stream_gives_the_same_messages():
    stream = b"".join(encode(m) for m in MESSAGES)
    for cut in range(len(stream) + 1):
        dec = FrameDecoder()
        got = dec.feed(stream[:cut]) + dec.feed(stream[cut:])
        assert got == MESSAGES, cut
    dec = FrameDecoder()
    got = []
    for b in stream:  # one byte at a time
        got += dec.feed(bytes([b]))
    assert got == MESSAGES


def test_decoded_subscription_works_at_a_broker():
    from eventpy.runtime.broker import Broker

    b = Broker()
    b.connect("c", "client")
    for m in (MESSAGES[0], MESSAGES[2]):
        (back,) = FrameDecoder().feed(encode(m))
        b.handle("c", back)
    assert b.stats["refused"] == 0 and b.subscription_count() == 1
    out = b.handle("c", Pub("stocks.Quote", ("IBM", 9.5, 3), "p", 1, 0.0))
    assert out and out[0][1].sids == (7,)



def _outcome(feed, chunks):
    """What a decoder method gives for the chunks: its outputs in order, and the error that ended it."""
    got = []
    try:
        for chunk in chunks:
            got += feed(chunk)
    except WireError as e:
        return got + list(e.before), str(e)  # what came before the bad frame is still handed over
    return got, None


@settings(max_examples=300, deadline=None)
@given(picks=st.lists(st.integers(0, len(MESSAGES) - 1), max_size=12),
       bad=st.sampled_from([b"", struct.pack(">I", 3) + b"\xc1\xc1\xc1", struct.pack(">I", 1 << 30)]),
       cuts=st.lists(st.integers(0, 2000), max_size=6))
def test_feed_frames_gives_what_feed_gives_with_each_frame_as_it_came(picks, bad, cuts):
    """The broker reads with feed_frames (a near-copy of feed kept for speed): for any split of
    any stream, good or ending in a bad frame, the same messages and the same refusal, and each
    frame is the exact bytes that carried its message. The good frames read together with a bad
    one come with the refusal (WireError.before), so a FIFO link handles them before it closes."""
    frames = [encode(MESSAGES[i]) for i in picks]
    stream = b"".join(frames) + bad
    bounds = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in zip(bounds, bounds[1:])]
    msgs, err = _outcome(FrameDecoder(max_frame=4096).feed, chunks)
    pairs, err2 = _outcome(FrameDecoder(max_frame=4096).feed_frames, chunks)
    assert [m for m, _ in pairs] == msgs and err2 == err
    assert [f for _, f in pairs] == frames  # every good frame, also those in the failing read
    assert (err is None) == (bad == b"")


def _in_slices(decoder: FrameDecoder, limit: int):
    """feed as a client's reader uses it (receive_read): at most `limit` messages per call, then
    feed(b"") until a call gives fewer; what earlier slices gave stays given when one fails."""
    def feed(chunk: bytes) -> list:
        got = []
        try:
            out = decoder.feed(chunk, limit)
            assert len(out) <= limit
            got += out
            while len(out) == limit:
                out = decoder.feed(b"", limit)
                assert len(out) <= limit
                got += out
        except WireError as e:
            e.before = got + list(e.before)
            raise
        return got
    return feed


@settings(max_examples=300, deadline=None)
@given(picks=st.lists(st.integers(0, len(MESSAGES) - 1), max_size=12),
       bad=st.sampled_from([b"", struct.pack(">I", 3) + b"\xc1\xc1\xc1", struct.pack(">I", 1 << 30)]),
       cuts=st.lists(st.integers(0, 2000), max_size=6), limit=st.integers(1, 5))
def test_feed_with_a_limit_gives_the_same_messages_in_slices(picks, bad, cuts, limit):
    stream = b"".join(encode(MESSAGES[i]) for i in picks) + bad
    bounds = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in zip(bounds, bounds[1:])]
    whole = _outcome(FrameDecoder(max_frame=4096).feed, chunks)
    assert _outcome(_in_slices(FrameDecoder(max_frame=4096), limit), chunks) == whole
    assert whole[0] == [MESSAGES[i] for i in picks]


def frame(obj) -> bytes:
    body = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


@pytest.mark.parametrize("raw", [
    frame(["nope", 1]),                      # unknown kind
    frame(["unsub", "t"]),                   # wrong arity
    frame(["unsub", "t", "seven"]),          # wrong type
    frame(["sub", "t", 1, "spec", []]),      # malformed spec
    frame(["sub", "t", 1, [[[["a", 0]], -1, []]], [["X", 1]]]),  # unknown value tag
    frame(["upd", "t", 1, [[0, ["I", "lo", True, 1, True], 1]]]),
    frame(["sub", "t", 1, [[[["a", 0]], -1, []]], [1], -1.0]),  # a moving horizon below 0
    frame(["sub", "t", 1, [[[["a", 0]], -1, []]], [1], "1"]),
    frame(["sub", "t", 1, [[[["a", 0]], -1, []]], [1], float("inf")]),
    frame(["sub", "t", 1, [[[["a", 0]], -1, []]], [1], 1.0, 2]),  # a field too many
    frame(["pub", "t", [[1, 2]], "o", 1, 0.0, []]),
    frame(["pub", "t", [1], "o", 1, 0.0, ["x"]]),
    frame(["pub", "t", [1], "o", 1, float("-inf"), []]),  # late for ever: every moving summary
    frame(["pub", "t", [1], "o", 1, float("inf"), []]),
    frame(["pub", "t", [1], "o", 1, float("nan"), []]),
    frame({"kind": "adv"}),                  # not an array
    frame([]),
    struct.pack(">I", 3) + b"\xc1\xc1\xc1",  # not msgpack
    struct.pack(">I", 1 << 30),              # announced size over the limit: refused before reading
])
def test_malformed_frames_raise_wire_error(raw):
    with pytest.raises(WireError):
        FrameDecoder().feed(raw)


def test_truncated_frame_is_reported_on_close_and_oversized_messages_are_not_sent():
    dec = FrameDecoder()
    data = encode(MESSAGES[2])
    assert dec.feed(data[:-3]) == []
    with pytest.raises(WireError, match="inside a frame"):
        dec.close()
    with pytest.raises(WireError, match="exceeds the frame limit"):
        encode(Pub("t", ("x" * 2000,), "o", 1, 0.0), max_frame=1000)


def test_a_frame_left_behind_decoded_ones_is_completed_or_reported_on_close():
    """The decoded front of the buffer may be kept (not moved) while a long partial frame waits
    behind it: the rest completes that frame, in feed and in feed_frames; close reports it."""
    small, big = encode(MESSAGES[1]), encode(Refused("t", "x" * 500))
    for frames in (False, True):
        dec = FrameDecoder()
        take = dec.feed_frames if frames else dec.feed
        first = take(small + big[:300])
        assert [m[0] if frames else m for m in first] == [MESSAGES[1]]
        assert take(big[300:302]) == [] and take(big[302:400]) == []  # still inside it
        rest = take(big[400:])
        assert [m[0] if frames else m for m in rest] == [Refused("t", "x" * 500)]
        if frames:
            assert rest[0][1] == big
        dec.close()
        take(small + big[:300])
        with pytest.raises(WireError, match="inside a frame"):
            dec.close()
        assert take(small) == ([(MESSAGES[1], small)] if frames else [MESSAGES[1]])  # nothing left over


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise_anything_but_wire_error(data):
    dec = FrameDecoder(max_frame=4096)
    try:
        dec.feed(data)
        dec.close()
    except WireError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), st.floats(allow_nan=False),
                              st.text(max_size=5)),
                    lambda kids: st.lists(kids, max_size=4), max_leaves=20))
def test_arbitrary_msgpack_bodies_never_raise_anything_but_wire_error(obj):
    for kind in ("sub", "upd", "pub", "adv", "flush", "hello"):
        try:
            decode_body(msgpack.packb([kind, obj, obj, obj, obj, obj, obj][: 1 + {"sub": 4, "upd": 3, "pub": 6,
                                                                                 "adv": 2, "flush": 1,
                                                                                 "hello": 5}[kind]]))
        except WireError:
            pass


def test_unencodable_values_are_wire_errors():
    with pytest.raises(WireError):
        encode(Pub("t", (2 ** 80,), "o", 1, 0.0))


def test_encode_many_gives_the_frames_encode_gives_and_refuses_what_it_refuses():
    assert encode_many(MESSAGES) == b"".join(encode(m) for m in MESSAGES)
    assert encode_many([]) == b""
    big = Pub("t", ("x" * 200,), "o", 1, 0.0)
    for bad, limit in ((Pub("t", (2 ** 80,), "o", 1, 0.0), 1 << 20), (big, 100),
                       (Pub("t", (object(),), "o", 1, 0.0), 1 << 20)):
        with pytest.raises(WireError) as one:
            encode(bad, limit)
        with pytest.raises(WireError) as many:
            encode_many([MESSAGES[0], bad], limit)
        assert str(many.value) == str(one.value)


def test_infinities_survive():
    msg = Upd("t", 1, {0: (Interval(-INF, False, INF, True), 1)})
    (back,) = FrameDecoder().feed(encode(msg))
    assert math.isinf(back.changes[0][0].lo) and back == msg


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), st.text(max_size=300),
                                 st.booleans()), min_size=1, max_size=6),
       sids=st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=40))
def test_a_pub_re_addressed_to_a_client_by_splicing_equals_a_fresh_encoding(values, sids):
    received = encode(Pub("t.T", tuple(values), "origin", 12, 3.5))
    spliced = pub_frame_for(received, tuple(sids))
    assert spliced == encode(Pub("t.T", tuple(values), "origin", 12, 3.5, tuple(sids)))
    (msg,) = FrameDecoder().feed(spliced)
    assert msg.sids == tuple(sids) and msg.values == tuple(values)


def test_a_pub_that_already_carries_sids_is_not_spliced():
    assert pub_frame_for(encode(Pub("t.T", (1,), "o", 1, 0.0, (5,))), (7,)) is None
