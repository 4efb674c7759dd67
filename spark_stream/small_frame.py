"""Batch frames of a few untyped records, encoded without the general Arrow machinery.

Why: at linger 0 each ``send`` becomes its own frame, and building an Arrow record batch
then writing it through an IPC stream writer costs ~70 µs of Python and pyarrow calls
for one record, most of a low-rate round trip. The frame this module writes is the same
batch frame (``records.py``: same header, crc, ``RECORD_SCHEMA`` payload), and readers
cannot tell them apart.

Theory of operation. An Arrow IPC record-batch message is a flatbuffer (the metadata)
and a body of 8-byte-aligned buffers. For ``RECORD_SCHEMA`` the metadata always has the
same shape: 7 field nodes (key, value, timestamp, headers, its struct and the struct's
key and value) and 17 buffers, and the writer stores every number we vary (the row
count, each node's length and null count, each buffer's offset and length, the body
length) at a fixed place. So the metadata of one batch written by pyarrow is a
*template*: found once by walking the flatbuffer (vtables, vectors), then patched per
frame with ``struct.pack_into``. The body is built here from the Python lists the
accumulator holds. Anything the template cannot express (headers, compression, more
than ``SMALL_ROWS`` records) goes through ``records.encode_batch``;
``tests/spark_stream/test_small_frame.py`` checks that both decode identically.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from spark_stream.records import (
    BATCH_HEADER_SIZE,
    build_batch,
    encode_batch,
    frame_header,
)

__all__ = ["SMALL_ROWS", "encode_small"]

#: Records up to which ``encode_small`` writes a frame itself.
SMALL_ROWS = 16

_NODES = 7
_BUFFERS = 17
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
_I64 = struct.Struct("<q")
_PAIR = struct.Struct("<qq")
_PAD = bytes(8)


@dataclass(frozen=True, slots=True)
class _Template:
    """The metadata of a written record batch and where its varying numbers are."""

    message: bytes  # continuation, length and flatbuffer, as written (8-aligned)
    body_length: int  # position of Message.bodyLength
    length: int  # position of RecordBatch.length
    nodes: int  # position of the first FieldNode
    buffers: int  # position of the first Buffer


def _field(buf: bytes, table: int, index: int) -> int:
    """Position of field ``index`` of the flatbuffer table at ``table`` (0: absent)."""
    vtable = table - _I32.unpack_from(buf, table)[0]
    size = _U16.unpack_from(buf, vtable)[0]
    slot = 4 + 2 * index
    if slot >= size:
        return 0
    offset = _U16.unpack_from(buf, vtable + slot)[0]
    return table + offset if offset else 0


def _deref(buf: bytes, pos: int) -> int:
    """Follow the uoffset stored at ``pos``."""
    return pos + _U32.unpack_from(buf, pos)[0]


@cache
def _template() -> _Template | None:
    """The template from a two-record batch written by pyarrow; None if its shape differs."""
    frame = encode_batch(build_batch([b"a", b"b"], [None, b"k"], [1, 2]))
    payload = frame[BATCH_HEADER_SIZE:]
    if _U32.unpack_from(payload, 0)[0] != 0xFFFFFFFF:
        return None
    meta_len = _I32.unpack_from(payload, 4)[0]
    buf = payload[8 : 8 + meta_len]
    message = _deref(buf, 0)
    header = _field(buf, message, 2)
    body = _field(buf, message, 3)
    if not header or not body:
        return None
    batch = _deref(buf, header)
    length, nodes, buffers = (_field(buf, batch, i) for i in range(3))
    if not (length and nodes and buffers) or _field(buf, batch, 3) or _field(buf, batch, 4):
        return None  # compression or variadic counts: not the shape we patch
    nodes_vec, buffers_vec = _deref(buf, nodes), _deref(buf, buffers)
    if (_U32.unpack_from(buf, nodes_vec)[0], _U32.unpack_from(buf, buffers_vec)[0]) != (
        _NODES,
        _BUFFERS,
    ):
        return None
    return _Template(
        payload[: 8 + meta_len], 8 + body, 8 + length, 8 + nodes_vec + 4, 8 + buffers_vec + 4
    )


def _offsets(items: Sequence[bytes | None]) -> bytes:
    """The int32 offsets of ``items`` (None as empty)."""
    ends = [0]
    total = 0
    for item in items:
        if item is not None:
            total += len(item)
        ends.append(total)
    try:
        return struct.pack(f"<{len(ends)}i", *ends)
    except struct.error as exc:  # over 2 GiB of data: int32 offsets cannot say it
        raise ValueError(f"records too large for one frame: {exc}") from exc


def encode_small(
    values: Sequence[bytes],
    keys: Sequence[bytes | None] | None,
    timestamps: Sequence[int],
    *,
    producer_id: int = -1,
    sequence: int = -1,
) -> bytes | None:
    """The batch frame of a few header-less, uncompressed records, or None.

    Args:
        values: record values (bytes).
        keys: record keys, None entries allowed; None: no keys.
        timestamps: µs since the epoch, one per value.
        producer_id: idempotent producer id, -1 for none.
        sequence: idempotent producer sequence, -1 for none.

    Returns:
        The frame, byte-compatible with ``records.encode_batch`` (same header and crc,
        the same decoded records); None when there are more than ``SMALL_ROWS``
        records or the template is unavailable (then use ``encode_batch``).

    Raises:
        ValueError: no records, or lists of different lengths.
    """
    n = len(values)
    if n > SMALL_ROWS:
        return None
    if n == 0:
        raise ValueError("a batch frame holds at least one record")
    if len(timestamps) != n or (keys is not None and len(keys) != n):
        raise ValueError(f"keys/timestamps do not match {n} values")
    template = _template()
    if template is None:
        return None
    bitmap_len = (n + 7) // 8
    if keys is None:
        key_nulls = n
        key_validity = bytes(bitmap_len)
        key_offsets = bytes(4 * (n + 1))
        key_data = b""
    else:
        bits = 0
        for i, key in enumerate(keys):
            if key is not None:
                bits |= 1 << i
        key_nulls = n - bits.bit_count()
        key_validity = bits.to_bytes(bitmap_len, "little") if key_nulls else b""
        key_offsets = _offsets(keys)
        key_data = b"".join(k for k in keys if k is not None)
    value_offsets = _offsets(values)
    value_data = b"".join(values)
    try:
        stamps = struct.pack(f"<{n}q", *timestamps)
    except struct.error as exc:
        raise ValueError(f"timestamps must be int64 microseconds: {exc}") from exc
    hdr_validity = bytes(bitmap_len)
    hdr_offsets = bytes(4 * (n + 1))
    empty_offsets = bytes(4)
    # The 17 buffers in the order of the flatbuffer: (key) validity offsets data,
    # (value) validity offsets data, (timestamp) validity data, (headers) validity
    # offsets, (struct) validity, (header key) validity offsets data, (header value) same.
    buffers = (
        key_validity, key_offsets, key_data,
        b"", value_offsets, value_data,
        b"", stamps,
        hdr_validity, hdr_offsets,
        b"",
        b"", empty_offsets, b"",
        b"", empty_offsets, b"",
    )  # fmt: skip
    message = bytearray(template.message)
    body: list[bytes] = []
    pos = 0
    for i, buf in enumerate(buffers):
        size = len(buf)
        _PAIR.pack_into(message, template.buffers + 16 * i, pos, size)
        if size:
            body.append(buf)
            pad = -size % 8
            if pad:
                body.append(_PAD[:pad])
            pos += size + pad
    for i, (length, nulls) in enumerate(
        ((n, key_nulls), (n, 0), (n, 0), (n, n), (0, 0), (0, 0), (0, 0))
    ):
        _PAIR.pack_into(message, template.nodes + 16 * i, length, nulls)
    _I64.pack_into(message, template.length, n)
    _I64.pack_into(message, template.body_length, pos)
    payload = b"".join((message, *body))
    first, top = timestamps[0], max(timestamps)
    return (
        frame_header(payload, n, first, top, producer_id=producer_id, sequence=sequence) + payload
    )
