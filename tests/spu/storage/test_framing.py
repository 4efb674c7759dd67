"""Validating appended frames and scanning segment bytes."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pyarrow as pa
import pytest

from spark_stream.errors import CorruptFrameError, InvalidRequestError, RecordTooLargeError
from spark_stream.records import RECORD_SCHEMA, encode_batch, read_header, with_base_offset
from spu.storage.framing import BASE_OFFSET_AT, scan_frames, split_frames

from .helpers import make_frame


def test_base_offset_position_matches_the_frame_format() -> None:
    frame = with_base_offset(make_frame(1, 3), 0x0102030405060708)
    assert struct.unpack_from("<q", frame, BASE_OFFSET_AT)[0] == 0x0102030405060708
    assert read_header(frame).base_offset == 0x0102030405060708


def test_split_accepts_one_buffer_or_a_sequence() -> None:
    a, b = make_frame(1, 3), make_frame(2, 4)
    from_buffer = split_frames(a + b, max_frame_bytes=1 << 20, schema=RECORD_SCHEMA)
    from_list = split_frames([a, memoryview(b)], max_frame_bytes=1 << 20)
    assert [f.header.record_count for f in from_buffer] == [3, 4]
    assert [bytes(f.data) for f in from_list] == [a, b]


@pytest.mark.parametrize(
    "mangle, error",
    [
        (lambda f: f[:-1], CorruptFrameError),  # torn payload
        (lambda f: f + b"\x00" * 3, CorruptFrameError),  # trailing bytes
        (lambda f: f[:-5] + bytes([f[-5] ^ 1]) + f[-4:], CorruptFrameError),  # crc
        (lambda f: b"XXXX" + f[4:], CorruptFrameError),  # magic
        (lambda f: b"", InvalidRequestError),  # nothing
    ],
)
def test_split_rejects_damaged_input(
    mangle: Callable[[bytes], bytes], error: type[Exception]
) -> None:
    with pytest.raises(error):
        split_frames(mangle(make_frame(1, 3)), max_frame_bytes=1 << 20)


def test_a_list_item_must_hold_exactly_one_frame() -> None:
    frame = make_frame(1, 3)
    with pytest.raises(CorruptFrameError, match="holds a frame of"):
        split_frames([frame + frame], max_frame_bytes=1 << 20)


def test_split_rejects_a_frame_over_the_limit() -> None:
    frame = make_frame(1, 50, size=100)
    with pytest.raises(RecordTooLargeError, match="over the 1000-byte limit"):
        split_frames(frame, max_frame_bytes=1000)


def test_split_checks_the_payload_against_the_schema() -> None:
    other = pa.record_batch({"n": pa.array([1, 2, 3], pa.int64())})
    frame = encode_batch(other)
    split_frames(frame, max_frame_bytes=1 << 20)  # no schema given: crc is enough
    with pytest.raises(CorruptFrameError, match="not a record batch of the log's schema"):
        split_frames(frame, max_frame_bytes=1 << 20, schema=RECORD_SCHEMA)


def test_scan_stops_at_damage_and_at_offset_gaps() -> None:
    a = with_base_offset(make_frame(1, 3), 10)
    b = with_base_offset(make_frame(2, 4), 13)
    seen: list[tuple[int, int]] = []
    whole = scan_frames(
        a + b,
        start=0,
        expected_offset=10,
        verify=True,
        on_frame=lambda pos, h: seen.append((pos, h.base_offset)),
    )
    assert (whole.end, whole.next_offset, whole.frames, whole.error) == (len(a + b), 17, 2, None)
    assert seen == [(0, 10), (len(a), 13)]

    torn = scan_frames(a + b[:-2], start=0, expected_offset=10, verify=True)
    assert (torn.end, torn.next_offset, torn.frames) == (len(a), 13, 1)
    assert "truncated" in (torn.error or "")

    gap = with_base_offset(b, 14)
    jumped = scan_frames(a + gap, start=0, expected_offset=10, verify=True)
    assert jumped.end == len(a) and "expected 13" in (jumped.error or "")

    garbled = scan_frames(a + b"\xff" * 80, start=0, expected_offset=10, verify=False)
    assert garbled.end == len(a) and garbled.error
