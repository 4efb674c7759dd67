"""Is a batch frame's Arrow payload a readable record batch? Checked at a chosen cost.

Theory of operation. A frame's crc only proves the bytes are the ones the producer
sent; a producer can send a crc-valid frame whose Arrow payload no reader can decode
(list offsets past the child, a buffer past the body, too few columns). The SPU checks
each appended payload at one of three levels (``PayloadCheck``):

- ``"none"``: nothing beyond the header and crc.
- ``"structure"``: the record-batch message's flatbuffer header is parsed here, by hand,
  without Arrow: the message is a record batch of the header's row count, it has the
  field nodes and buffers the schema's layout needs, its body is exactly the rest of
  the payload, every buffer lies inside the body (8-byte aligned), every node's null
  count is within its length, and the compression named matches the frame's codec.
  Values are not read and compressed buffers are not inflated: O(buffers) a frame.
- ``"full"``: ``"structure"`` and then exactly what a reader does: decode the payload
  and ``RecordBatch.validate(full=True)`` (offsets monotonic and in bounds, UTF-8, ...).
  A frame that passes decodes for every reader. O(rows) a frame, plus the inflation of
  a compressed frame (whose claimed inflated size the structure step bounds first).

Every failure raises ``CorruptFrameError`` naming the frame's offsets and what is wrong.
The expected layout (node and buffer counts) of a schema is learnt once, by writing an
empty batch of it with Arrow and parsing that message with the same code.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Literal, get_args

import pyarrow as pa
import pyarrow.ipc as ipc

from spark_stream.errors import CorruptFrameError
from spark_stream.records import (
    BATCH_HEADER_SIZE,
    RECORD_SCHEMA,
    BatchHeader,
    decode_frame,
    frame_range,
    frame_schema,
)

__all__ = [
    "PayloadCheck",
    "PAYLOAD_CHECKS",
    "MAX_INFLATED_BYTES",
    "check_payload",
    "check_structure",
]

PayloadCheck = Literal["none", "structure", "full"]
PAYLOAD_CHECKS: tuple[PayloadCheck, ...] = get_args(PayloadCheck)

_CONTINUATION = 0xFFFFFFFF
_PREFIX = struct.Struct("<II")  # continuation marker, metadata length
_U8, _U16 = struct.Struct("<B"), struct.Struct("<H")
_I32, _U32, _I64 = struct.Struct("<i"), struct.Struct("<I"), struct.Struct("<q")
_PAIR = struct.Struct("<qq")  # FieldNode (length, null_count) and Buffer (offset, length)
_RECORD_BATCH = 3  # MessageHeader union tag
MAX_INFLATED_BYTES = 2**31 - 1
"""What a compressed frame's buffers may inflate to: an uncompressed payload's limit."""
_ARROW_CODECS = {0: "lz4", 1: "zstd"}  # BodyCompression.codec


class _Bad(Exception):
    """Something in the flatbuffer is wrong (turned into ``CorruptFrameError``)."""


class _Table:
    """One flatbuffer table: fields by index, every read bounded by the buffer."""

    def __init__(self, buf: memoryview, pos: int) -> None:
        self.buf, self.pos = buf, pos
        vtable = pos - _read(_I32, buf, pos)
        self.vt_size = _read(_U16, buf, vtable)
        if self.vt_size < 4 or self.vt_size % 2:
            raise _Bad(f"vtable size {self.vt_size}")
        self.vtable = vtable
        self._check(vtable, self.vt_size)

    def _check(self, pos: int, size: int) -> None:
        if pos < 0 or size < 0 or pos + size > len(self.buf):
            raise _Bad(f"{size} bytes at {pos} run past the {len(self.buf)}-byte header")

    def _field(self, index: int) -> int:
        """The absolute position of field ``index``, or 0 when absent."""
        slot = 4 + 2 * index
        if slot + 2 > self.vt_size:
            return 0
        rel = _read(_U16, self.buf, self.vtable + slot)
        return self.pos + rel if rel else 0

    def scalar(self, index: int, kind: struct.Struct, default: int = 0) -> int:
        at = self._field(index)
        return default if not at else _read(kind, self.buf, at)

    def table(self, index: int) -> _Table | None:
        at = self._field(index)
        return None if not at else _Table(self.buf, at + _read(_U32, self.buf, at))

    def pairs(self, index: int) -> list[tuple[int, int]]:
        """A vector of 16-byte structs of two int64 (``FieldNode``, ``Buffer``)."""
        at = self._field(index)
        if not at:
            return []
        start = at + _read(_U32, self.buf, at)
        count = _read(_U32, self.buf, start)
        self._check(start + 4, count * _PAIR.size)
        return list(_PAIR.iter_unpack(self.buf[start + 4 : start + 4 + count * _PAIR.size]))


def _read(kind: struct.Struct, buf: memoryview, pos: int) -> int:
    if pos < 0 or pos + kind.size > len(buf):
        raise _Bad(f"a read at byte {pos} runs past the {len(buf)}-byte header")
    value: int = kind.unpack_from(buf, pos)[0]
    return value


def _message(payload: memoryview, pos: int) -> tuple[memoryview, int]:
    """The flatbuffer of the IPC message at ``pos`` and the position after it."""
    if pos + _PREFIX.size > len(payload):
        raise _Bad(f"no message prefix at byte {pos}")
    marker, length = _PREFIX.unpack_from(payload, pos)
    if marker != _CONTINUATION:
        raise _Bad(f"no continuation marker at byte {pos}")
    start = pos + _PREFIX.size
    if length == 0 or length % 8 or start + length > len(payload):
        raise _Bad(f"message header of {length} bytes at byte {pos}")
    return payload[start : start + length], start + length


def _batch_message(payload: memoryview, pos: int) -> tuple[_Table, int, int]:
    """The record-batch table at ``pos``, its body length and where the body starts."""
    meta, body_start = _message(payload, pos)
    message = _Table(meta, _read(_U32, meta, 0))
    if message.scalar(1, _U8) != _RECORD_BATCH:
        raise _Bad(f"the message at byte {pos} is not a record batch")
    batch = message.table(2)
    if batch is None:
        raise _Bad("the record-batch message has no header")
    return batch, message.scalar(3, _I64), body_start


_LAYOUTS: dict[object, tuple[pa.Schema, tuple[int, int]]] = {}
_MAX_LAYOUTS = 256


def _layout_by_identity(schema: pa.Schema) -> tuple[int, int]:
    """``_layout`` cached by the schema object: hashing a ``pa.Schema`` costs tens of
    microseconds, more than the whole structure check; a log keeps one schema object."""
    hit = _LAYOUTS.get(id(schema))
    if hit is not None and hit[0] is schema:  # the schema object pins its id
        return hit[1]
    if len(_LAYOUTS) >= _MAX_LAYOUTS:
        _LAYOUTS.clear()
    layout = _layout(schema)
    _LAYOUTS[id(schema)] = (schema, layout)
    return layout


@lru_cache(maxsize=256)
def _typed_layout(schema_message: bytes) -> tuple[int, int]:
    """The layout of the schema a typed frame carries, cached by its message bytes.

    Raises:
        CorruptFrameError: the bytes are not a schema message.
    """
    return _layout(frame_schema(schema_message))


def _layout(schema: pa.Schema) -> tuple[int, int]:
    """How many field nodes and buffers a record batch of ``schema`` has.

    The empty columns are ``pa.nulls(0, type)``, not ``pa.array([], type)``: the latter
    imports pandas on its first call (pyarrow's pandas shim), 0.2 s and 300 modules,
    which the first produced frame of an SPU would wait for on the event loop.
    """
    try:
        empty = pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, schema) as writer:
            writer.write_batch(empty)
    except (pa.ArrowException, ValueError, TypeError) as exc:  # a frame's odd schema
        raise _Bad(f"no record-batch layout for its schema: {exc}") from None
    stream = memoryview(sink.getvalue())
    _, pos = _message(stream, 0)
    meta, _ = _message(stream, pos)
    batch = _Table(meta, _read(_U32, meta, 0)).table(2)
    assert batch is not None
    return len(batch.pairs(1)), len(batch.pairs(2))


def check_structure(frame: memoryview, header: BatchHeader, schema: pa.Schema) -> None:
    """The ``"structure"`` level (see the module docstring), without decoding anything.

    Args:
        frame: one whole frame, header included.
        header: its parsed header.
        schema: the untyped topic's record schema; a typed frame's own is read from it.

    Raises:
        CorruptFrameError: naming the frame's offsets and the first thing wrong.
    """
    payload = frame[BATCH_HEADER_SIZE:]
    try:
        pos = 0
        if header.schema_version:  # the schema message first (the leader compared it)
            _, pos = _message(payload, 0)  # a schema message has no body
            layout = _typed_layout(bytes(payload[:pos]))
        else:
            layout = _layout_by_identity(schema)
        batch, body_length, body_start = _batch_message(payload, pos)
        _check_batch(batch, body_length, len(payload) - body_start, header, layout)
        if header.compression != "none":
            _check_inflated(payload[body_start:], batch.pairs(2))
    except (_Bad, CorruptFrameError) as exc:
        raise CorruptFrameError(
            f"the payload of {frame_range(header)} is not a record batch of the log's schema: {exc}"
        ) from None


def _check_batch(
    batch: _Table, body_length: int, body_left: int, header: BatchHeader, layout: tuple[int, int]
) -> None:
    if body_length != body_left:
        raise _Bad(f"its body is {body_length} bytes but {body_left} follow its header")
    rows = batch.scalar(0, _I64)
    if rows != header.record_count:
        raise _Bad(f"it has {rows} rows, the frame header says {header.record_count}")
    nodes, buffers = batch.pairs(1), batch.pairs(2)
    want_nodes, want_buffers = layout
    if len(nodes) != want_nodes or len(buffers) != want_buffers:
        raise _Bad(
            f"it has {len(nodes)} field nodes and {len(buffers)} buffers, the schema "
            f"needs {want_nodes} and {want_buffers}"
        )
    for k, (length, nulls) in enumerate(nodes):
        if length < 0 or not 0 <= nulls <= length:
            raise _Bad(f"field node {k} has length {length} and {nulls} nulls")
    for k, (offset, length) in enumerate(buffers):
        if offset < 0 or length < 0 or offset % 8 or offset + length > body_length:
            raise _Bad(
                f"buffer {k} ({length} bytes at {offset}) is not an aligned range of "
                f"the {body_length}-byte body"
            )
    compression = batch.table(3)
    codec = "none" if compression is None else _ARROW_CODECS.get(compression.scalar(0, _U8))
    if codec != header.compression:
        raise _Bad(
            f"its buffers are compressed {codec}, the frame header says {header.compression}"
        )


def _check_inflated(body: memoryview, buffers: list[tuple[int, int]]) -> None:
    """Bound what a compressed body claims to inflate to, before anything inflates it.

    Each non-empty compressed buffer starts with its uncompressed length (int64; -1:
    stored as is). A hostile frame could claim gigabytes and make the decode allocate
    them: the total may not pass the largest uncompressed payload a frame may hold.
    """
    total = 0
    for k, (offset, length) in enumerate(buffers):
        if length == 0:
            continue
        if length < _I64.size:
            raise _Bad(f"compressed buffer {k} has {length} bytes, no length prefix")
        inflated = _read(_I64, body, offset)
        if inflated < -1:
            raise _Bad(f"compressed buffer {k} claims {inflated} bytes")
        total += length - _I64.size if inflated == -1 else inflated
    if total > MAX_INFLATED_BYTES:
        raise _Bad(f"its buffers inflate to {total} bytes, over {MAX_INFLATED_BYTES}")


def check_payload(
    frame: memoryview, header: BatchHeader, schema: pa.Schema, level: PayloadCheck
) -> None:
    """Check one frame's payload at ``level`` (see the module docstring).

    Args:
        frame: one whole frame, header included (its crc already checked).
        header: its parsed header.
        schema: the log's record schema (``RECORD_SCHEMA`` for an untyped topic).
        level: how much to check.

    Raises:
        CorruptFrameError: the payload is not a readable record batch (nothing appended).
    """
    if level == "none":
        return
    check_structure(frame, header, schema)
    if level == "full":
        read_as = schema if header.schema_version == 0 else RECORD_SCHEMA
        decode_frame(frame, schema=read_as, check_crc=False)
