"""The batch frame: round trips, zero-copy decode, and typed errors on any corrupt input."""

from __future__ import annotations

import contextlib
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_stream.errors import CorruptFrameError
from spark_stream.models.topic_schema import storage_schema
from spark_stream.records import (
    BATCH_HEADER_SIZE,
    RECORD_SCHEMA,
    build_batch,
    decode_frame,
    decode_frames,
    encode_batch,
    encode_records,
    frame_schema,
    iter_frames,
    null_headers,
    read_header,
    verify_frame,
    with_base_offset,
)

TS = 1_700_000_000_000_000


def sample_frame(n: int = 10, **options: object) -> bytes:
    return encode_records(
        [f"value-{i}".encode() for i in range(n)],
        keys=[None if i % 3 == 0 else f"k{i}" for i in range(n)],
        timestamps=[TS + i for i in range(n)],
        headers=[[("h", b"x")] if i % 2 else None for i in range(n)],
        **options,
    )


@pytest.mark.parametrize("compression", ["none", "lz4", "zstd"])
def test_round_trip_keeps_every_column(compression: str) -> None:
    frame = sample_frame(compression=compression, producer_id=7, sequence=3)
    header = verify_frame(frame)
    batch = decode_frame(frame)

    assert header.record_count == 10
    assert (header.producer_id, header.sequence) == (7, 3)
    assert header.compression == compression
    assert (header.first_timestamp, header.max_timestamp) == (TS, TS + 9)
    assert batch.schema.equals(RECORD_SCHEMA)
    assert batch.column("value").to_pylist() == [f"value-{i}".encode() for i in range(10)]
    assert batch.column("key").to_pylist()[:2] == [None, b"k1"]
    assert batch.column("headers").to_pylist()[1] == [{"key": "h", "value": b"x"}]


def test_offsets_are_materialised_from_the_base_offset() -> None:
    frame = with_base_offset(sample_frame(5), 1000)
    batch = decode_frame(frame, with_offsets=True)
    assert batch.schema.names[0] == "offset"
    assert batch.column("offset").to_pylist() == [1000, 1001, 1002, 1003, 1004]
    assert read_header(frame).last_offset == 1004


def test_rewriting_the_base_offset_keeps_the_crc_valid() -> None:
    frame = sample_frame()
    moved = with_base_offset(frame, 42)
    assert verify_frame(moved).base_offset == 42
    assert verify_frame(moved).crc == verify_frame(frame).crc


def test_decode_does_not_copy_the_payload() -> None:
    frame = bytearray(sample_frame(100))
    batch = decode_frame(memoryview(frame))
    values = batch.column("value").buffers()[2]
    frame_start = pa.py_buffer(frame).address
    assert frame_start <= values.address < frame_start + len(frame)


def test_encode_from_an_arrow_batch_equals_encode_from_lists() -> None:
    batch = build_batch([b"a", b"b"], timestamps=[TS, TS])
    assert decode_frame(encode_batch(batch)).equals(batch)
    assert encode_batch(batch) == encode_records([b"a", b"b"], timestamps=[TS, TS])


def test_back_to_back_frames_decode_in_order() -> None:
    frames = with_base_offset(sample_frame(3), 0) + with_base_offset(sample_frame(4), 3)
    batches = decode_frames(frames, with_offsets=True)
    assert [b.num_rows for b in batches] == [3, 4]
    assert batches[1].column("offset").to_pylist() == [3, 4, 5, 6]


def test_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch(build_batch([]))


def test_mismatched_list_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="keys has 1 entries for 2 values"):
        build_batch([b"a", b"b"], keys=[b"k"])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: b"XXXX" + f[4:], "bad magic"),
        (lambda f: f[:20] + b"\x09" + f[21:], "unsupported frame version"),
        (lambda f: f[: BATCH_HEADER_SIZE - 3], "truncated frame header"),
        (lambda f: f[:-1], "truncated payload"),
        (lambda f: f[:-1] + bytes([f[-1] ^ 0xFF]), "crc mismatch"),
        (lambda f: f[:30] + bytes([f[30] ^ 1]) + f[31:], "crc mismatch"),
        (lambda f: f[:24] + struct.pack("<i", 0) + f[28:], "record count 0"),
        (lambda f: f + b"\x00", "frame is"),
    ],
)
def test_corrupt_frames_raise_one_typed_error_naming_the_fault(mutate, message: str) -> None:
    with pytest.raises(CorruptFrameError, match=message):
        decode_frame(mutate(sample_frame()))


def test_payload_of_another_schema_is_a_corrupt_frame() -> None:
    other = pa.record_batch([pa.array([1, 2, 3], pa.int64())], names=["n"])
    frame = encode_batch(other)
    with pytest.raises(CorruptFrameError, match="not a record batch of the schema"):
        decode_frame(frame)


def test_iter_frames_stops_with_a_typed_error_at_a_torn_tail() -> None:
    whole = sample_frame(3)
    headers = []
    with pytest.raises(CorruptFrameError, match="truncated"):
        for header, _ in iter_frames(whole + whole[:20]):
            headers.append(header)
    assert len(headers) == 1


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=2048))
def test_random_bytes_never_crash(data: bytes) -> None:
    with contextlib.suppress(CorruptFrameError):
        decode_frames(data)


_FRAME = sample_frame(20, compression="lz4")


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, len(_FRAME) - 1), st.integers(1, 255)), min_size=1, max_size=8
    )
)
def test_mutated_frames_are_detected(flips: list[tuple[int, int]]) -> None:
    data = bytearray(_FRAME)
    for pos, mask in flips:
        data[pos] ^= mask
    changed = [i for i, (a, b) in enumerate(zip(data, _FRAME, strict=True)) if a != b]
    try:
        batch = decode_frame(bytes(data))
    except CorruptFrameError:
        return
    # Only the base offset lies outside the crc: any other surviving change is a bug.
    assert all(8 <= pos < 16 for pos in changed), f"undetected change at bytes {changed}"
    assert batch.num_rows == 20


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(min_size=1, max_size=512), st.integers(1, 50))
def test_valid_crc_over_garbage_payload_is_still_a_typed_error(garbage: bytes, count: int) -> None:
    """A payload crafted with a correct crc but no Arrow message inside must not crash."""
    from crc32c import crc32c

    head = bytearray(_FRAME[:BATCH_HEADER_SIZE])
    struct.pack_into("<I", head, 16, len(garbage))
    struct.pack_into("<i", head, 24, count)
    crc = crc32c(garbage, crc32c(bytes(head[24:])))
    struct.pack_into("<I", head, 20, crc)
    with pytest.raises(CorruptFrameError):
        decode_frame(bytes(head) + garbage)


def test_records_without_headers_carry_compact_null_headers() -> None:
    batch = build_batch([b"x"] * 1000)
    headers = batch.column("headers")
    assert headers.null_count == 1000 and len(headers.values) == 0
    assert null_headers(0).null_count == 0
    # 4 bytes a row of list offsets, not three n+1 offset buffers of the child arrays.
    assert len(encode_batch(batch)) < 1000 * (1 + 4 + 4 + 8 + 4) + 2048


def test_typed_frames_carry_their_version_and_schema_and_read_widened() -> None:
    user = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    schema = storage_schema(user)
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([5, 6], pa.int64()),
            pa.nulls(2, pa.binary()),
            pa.array([10, 20], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            null_headers(2),
        ],
        schema=schema,
    )
    frame = encode_batch(batch, base_offset=7, schema_version=3)
    header = read_header(frame)
    assert (header.schema_version, header.first_timestamp, header.max_timestamp) == (3, 10, 20)
    assert frame_schema(memoryview(frame)[BATCH_HEADER_SIZE:]).equals(schema)
    as_written = decode_frame(frame, with_offsets=True)
    assert as_written.column("offset").to_pylist() == [7, 8]
    assert as_written.column("id").to_pylist() == [5, 6]
    wider = storage_schema(user.append(pa.field("extra", pa.string())))
    widened = decode_frame(frame, schema=wider)
    assert widened.schema.equals(wider)
    assert widened.column("extra").to_pylist() == [None, None]
    assert read_header(encode_records(["x"])).schema_version == 0  # untyped as before
