"""Crc-valid batch frames whose Arrow payload is damaged, for the validation tests.

Each mutation keeps the frame's crc right (``resealed``), as a buggy or hostile producer
would: only the payload check can refuse them. Buffers are found through the addresses
pyarrow's zero-copy decode gives (the offset of a buffer inside the body), never by
guessing byte positions.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.ipc as ipc
from crc32c import crc32c

from spark_stream.records import (
    BATCH_HEADER_SIZE,
    RECORD_SCHEMA,
    build_batch,
    encode_batch,
)

__all__ = [
    "POISON",
    "resealed",
    "sample",
    "list_offsets_past_child",
    "list_offsets_decreasing",
    "buffer_out_of_bounds",
    "column_missing",
    "value_column_int64",
    "row_count_lie",
    "inflates_to_a_terabyte",
]

_CRC_START = 20
_COUNT_AT = 24


def resealed(frame: bytes | bytearray) -> bytes:
    """``frame`` with its crc recomputed over what it now holds."""
    out = bytearray(frame)
    struct.pack_into("<I", out, 16, crc32c(bytes(out[_CRC_START:])))
    return bytes(out)


def sample() -> bytes:
    """Two records with keys and headers: every buffer kind of ``RECORD_SCHEMA``."""
    return encode_batch(
        build_batch(
            [b"xxxxx", b"yyyyy"],
            keys=[b"k0", None],
            timestamps=[1_700_000_000_000_000, 1_700_000_000_000_001],
            headers=[[("aa", b"123")], [("bb", b"456")]],
        )
    )


def _body_offset(frame: bytes, column: int, buffer: int) -> int:
    """Where buffer ``buffer`` of column ``column`` starts in ``frame`` (zero-copy decode)."""
    payload = pa.py_buffer(frame)
    batch = ipc.read_record_batch(payload[BATCH_HEADER_SIZE:], RECORD_SCHEMA)
    found = batch.column(column).buffers()[buffer]
    assert found is not None
    return found.address - payload.address


def _patch_offsets(frame: bytes, values: tuple[int, ...]) -> bytes:
    at = _body_offset(frame, 3, 1)  # headers: validity, list offsets
    out = bytearray(frame)
    struct.pack_into(f"<{len(values)}i", out, at, *values)
    return resealed(out)


def list_offsets_past_child(frame: bytes) -> bytes:
    """The headers list's last offset points past its child (2 entries)."""
    return _patch_offsets(frame, (0, 1, 7))


def list_offsets_decreasing(frame: bytes) -> bytes:
    """The headers list's offsets go backwards (in bounds, so only a full check sees it)."""
    return _patch_offsets(frame, (0, 2, 1))


def buffer_out_of_bounds(frame: bytes) -> bytes:
    """The flatbuffer names the value data buffer far past the message body."""
    at = _body_offset(frame, 1, 2)
    payload = pa.py_buffer(frame[BATCH_HEADER_SIZE:])
    meta = ipc.read_message(payload)
    body_start = len(frame) - meta.body.size
    entry = struct.pack("<qq", at - body_start, 10)
    where = frame.find(entry, BATCH_HEADER_SIZE, body_start)
    assert where > 0, "the value buffer's entry is in the message header"
    out = bytearray(frame)
    struct.pack_into("<q", out, where, 1 << 20)
    return resealed(out)


def column_missing(frame: bytes) -> bytes:
    """A frame of three of the four columns (an untyped frame of another schema)."""
    del frame
    batch = build_batch([b"v"])
    return encode_batch(batch.drop_columns(["headers"]))


def value_column_int64(frame: bytes) -> bytes:
    """The value column is int64 instead of binary (another buffer layout)."""
    del frame
    batch = build_batch([b"v"])
    return encode_batch(batch.set_column(1, "value", pa.array([7], pa.int64())))


def row_count_lie(frame: bytes) -> bytes:
    """The frame header claims one record more than the payload holds."""
    out = bytearray(frame)
    count = struct.unpack_from("<i", out, _COUNT_AT)[0]
    struct.pack_into("<i", out, _COUNT_AT, count + 1)
    return resealed(out)


def inflates_to_a_terabyte(frame: bytes) -> bytes:
    """An lz4 frame whose first buffer claims to inflate to 1 TiB."""
    compressed = encode_batch(
        ipc.read_record_batch(pa.py_buffer(frame[BATCH_HEADER_SIZE:]), RECORD_SCHEMA),
        compression="lz4",
    )
    body = ipc.read_message(pa.py_buffer(compressed[BATCH_HEADER_SIZE:])).body
    out = bytearray(compressed)
    struct.pack_into("<q", out, len(out) - body.size, 1 << 40)
    return resealed(out)


POISON = {
    "list offsets past the child": list_offsets_past_child,
    "list offsets decreasing": list_offsets_decreasing,
    "buffer out of bounds": buffer_out_of_bounds,
    "a column missing": column_missing,
    "value column int64": value_column_int64,
    "row count lie": row_count_lie,
    "inflates to a terabyte": inflates_to_a_terabyte,
}
"""Structured mutations, by what they break."""
