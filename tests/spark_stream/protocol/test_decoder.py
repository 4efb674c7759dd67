"""``FrameDecoder``: frames out of arbitrary chunking, limits, and garbage."""

from __future__ import annotations

import struct
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_stream.errors import CorruptFrameError
from spark_stream.protocol import (
    FRAME_HEADER_SIZE,
    FRAME_MAGIC,
    Frame,
    FrameDecoder,
    FrameKind,
    OversizedFrame,
    decode_meta,
    encode_frame,
)
from spark_stream.protocol.decoder import BODY_BUFFER_MIN


def frame_bytes(cid: int, meta: dict | None = None, tail: bytes = b"", **kw: object) -> bytes:
    return b"".join(bytes(p) for p in encode_frame(FrameKind.REQUEST, 3001, cid, meta, tail, **kw))


def summary(events: list) -> list[tuple]:
    return [
        (e.header.correlation_id, decode_meta(e.meta), bytes(e.tail))
        if isinstance(e, Frame)
        else ("oversized", e.header.correlation_id)
        for e in events
    ]


STREAM = b"".join(
    [
        frame_bytes(1, {"topic": "a"}, b"tail-one"),
        frame_bytes(2),
        frame_bytes(3, {"n": list(range(5))}, bytes(range(256)) * 3),
    ]
)
EXPECTED = [
    (1, {"topic": "a"}, b"tail-one"),
    (2, {}, b""),
    (3, {"n": [0, 1, 2, 3, 4]}, bytes(range(256)) * 3),
]


def test_many_frames_in_one_chunk() -> None:
    decoder = FrameDecoder()
    assert summary(list(decoder.feed(STREAM))) == EXPECTED
    assert decoder.buffered == 0


def test_split_at_every_byte_boundary() -> None:
    for cut in range(len(STREAM) + 1):
        decoder = FrameDecoder()
        events = list(decoder.feed(STREAM[:cut])) + list(decoder.feed(STREAM[cut:]))
        assert summary(events) == EXPECTED, cut


def test_one_byte_at_a_time() -> None:
    decoder = FrameDecoder()
    events = [e for i in range(len(STREAM)) for e in decoder.feed(STREAM[i : i + 1])]
    assert summary(events) == EXPECTED


def test_frame_inside_one_chunk_is_a_view_not_a_copy() -> None:
    data = frame_bytes(9, {}, b"payload")
    (event,) = list(FrameDecoder().feed(data))
    assert isinstance(event, Frame)
    assert event.tail.obj is data  # a slice of the received bytes


def test_unfinished_iterator_loses_nothing() -> None:
    decoder = FrameDecoder()
    it = decoder.feed(STREAM)
    first = next(it)
    rest = list(decoder.feed(b""))
    assert summary([first, *rest]) == EXPECTED


def test_partial_frame_waits_and_reports_bytes_needed() -> None:
    data = frame_bytes(1, {}, b"x" * 100)
    decoder = FrameDecoder()
    assert decoder.bytes_needed() == FRAME_HEADER_SIZE
    assert list(decoder.feed(data[:30])) == []
    assert decoder.bytes_needed() == len(data) - 30
    assert len(list(decoder.feed(data[30:]))) == 1


def test_large_body_goes_into_its_own_buffer_as_it_is_fed() -> None:
    big = frame_bytes(7, {"k": 1}, bytes(range(256)) * (BODY_BUFFER_MIN // 128))
    after = frame_bytes(8, {}, b"next")
    data = big + after
    decoder = FrameDecoder()
    assert list(decoder.feed(data[:1000])) == []
    pending = decoder.pending
    assert pending is not None and pending.frame_length == len(big)  # known before the body
    events, kept = [], []
    for i in range(1000, len(data), 4096):
        chunk = data[i : i + 4096]
        before = sys.getrefcount(chunk)
        events += decoder.feed(chunk)
        if i + 4096 < len(big):  # wholly body: copied into the body's buffer, not kept
            kept.append(sys.getrefcount(chunk) - before)
    assert summary(events) == [
        (7, {"k": 1}, bytes(range(256)) * (BODY_BUFFER_MIN // 128)),
        (8, {}, b"next"),
    ]
    assert kept and set(kept) == {0}  # the body once, never the body and its chunks
    assert decoder.pending is None and decoder.buffered == 0


def test_large_body_buffer_with_an_unfinished_iterator_loses_nothing() -> None:
    big = frame_bytes(1, {}, b"y" * BODY_BUFFER_MIN)
    data = frame_bytes(0) + big + frame_bytes(2)
    decoder = FrameDecoder()
    it = decoder.feed(data[:100])
    first = next(it)  # frame 0; frame 1's header is still in the chunk, unparsed
    events = [first, *decoder.feed(data[100:5000]), *decoder.feed(data[5000:])]
    assert [e.header.correlation_id for e in events] == [0, 1, 2]
    assert bytes(events[1].tail) == b"y" * BODY_BUFFER_MIN


def test_oversized_frame_is_reported_and_its_body_skipped() -> None:
    decoder = FrameDecoder(max_frame_size=200)
    big = frame_bytes(5, {}, b"x" * 1000)
    small = frame_bytes(6, {"ok": True})
    events = []
    for i in range(0, len(big + small), 64):  # arrive in pieces
        events += decoder.feed((big + small)[i : i + 64])
        assert decoder.buffered <= 200 + 64  # never holds the big body
    assert isinstance(events[0], OversizedFrame)
    assert events[0].header.correlation_id == 5
    assert events[0].limit == 200
    assert summary(events[1:]) == [(6, {"ok": True}, b"")]


def test_garbage_raises_and_the_decoder_stays_failed() -> None:
    decoder = FrameDecoder()
    with pytest.raises(CorruptFrameError, match="magic"):
        list(decoder.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert decoder.failed
    with pytest.raises(CorruptFrameError, match="failed earlier"):
        decoder.feed(frame_bytes(1))
    assert decoder.buffered == 0


def test_good_frames_before_garbage_are_delivered() -> None:
    decoder = FrameDecoder()
    events = []
    with pytest.raises(CorruptFrameError):
        for event in decoder.feed(frame_bytes(1) + b"\x00" * FRAME_HEADER_SIZE):
            events.append(event)
    assert [e.header.correlation_id for e in events] == [1]


def test_max_frame_size_below_header_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        FrameDecoder(max_frame_size=10)


def test_non_byte_memoryview_is_accepted() -> None:
    import array

    data = frame_bytes(1, {}, b"abcd")
    pad = (-len(data)) % 4
    arr = array.array("I", data + b"\x00" * pad)
    decoder = FrameDecoder()
    events = list(decoder.feed(memoryview(arr)))
    assert summary(events) == [(1, {}, b"abcd")]
    assert decoder.buffered == pad


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.integers(min_value=1, max_value=97))
def test_fuzz_random_bytes_only_raise_corrupt_frame(data: bytes, chunk: int) -> None:
    decoder = FrameDecoder(max_frame_size=4096)
    count = 0
    try:
        for i in range(0, len(data), chunk):
            for event in decoder.feed(data[i : i + chunk]):
                count += 1
                assert isinstance(event, Frame | OversizedFrame)
    except CorruptFrameError:
        assert decoder.failed
    # every event consumed at least a header, so the loop is bounded by the input
    assert count <= len(data) // FRAME_HEADER_SIZE
    assert decoder.buffered <= 4096 + chunk


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.binary(max_size=300), st.integers(0, 2**32 - 1)), max_size=8),
    st.data(),
)
def test_fuzz_valid_streams_survive_any_chunking(frames: list, data: st.DataObject) -> None:
    wire = b"".join(frame_bytes(cid, {"len": len(tail)}, tail) for tail, cid in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=10)))
    decoder = FrameDecoder()
    events = []
    prev = 0
    for cut in [*cuts, len(wire)]:
        events += decoder.feed(wire[prev:cut])
        prev = cut
    assert summary(events) == [(cid, {"len": len(t)}, t) for t, cid in frames]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 255),
    st.integers(0, 255),
    st.integers(0, 2**32 - 1),
    st.binary(max_size=200),
)
def test_fuzz_headers_with_valid_magic(
    length: int, kind: int, flags: int, meta_len: int, rest: bytes
) -> None:
    head = struct.pack("<IBBBBHHII", length, FRAME_MAGIC, kind, flags, 0, 1, 0, 1, meta_len)
    decoder = FrameDecoder(max_frame_size=1024)
    try:
        events = list(decoder.feed(head + rest))
    except CorruptFrameError:
        return
    for event in events:
        if isinstance(event, Frame):
            assert len(event.meta) == event.header.meta_length
            assert len(event.meta) + len(event.tail) == event.header.body_length
        else:
            assert event.header.frame_length > 1024
