"""The record schema and the batch frame: the one format shared by client, SPU and storage.

Theory of operation. A *batch frame* is a fixed 56-byte little-endian header followed by
one Arrow IPC record-batch message (the encapsulated message, without the schema):

    off size field
      0    4 magic            b"FLVB"
      4    4 payload_length   bytes of the Arrow message that follow the header
      8    8 base_offset      offset of row 0; rewritten by the leader, so not in the crc
     16    4 crc32c           over bytes [20, 56 + payload_length): header tail + payload
     20    1 version          1
     21    1 attributes       bits 0-1: compression codec (0 none, 1 lz4, 2 zstd)
     22    2 schema_version   0: an untyped topic's record (RECORD_SCHEMA); v >= 1: the
                              version of a typed topic's schema the batch was written in
     24    4 record_count     rows in the batch
     28    4 sequence         idempotent producer sequence, -1 when none
     32    8 first_timestamp  microseconds since the epoch, UTC
     40    8 max_timestamp    microseconds since the epoch, UTC
     48    8 producer_id      idempotent producer id, -1 when none

A typed frame (``schema_version`` >= 1) carries its own schema: the payload is the
schema message followed by the record-batch message (an Arrow IPC stream without its
end marker), so a reader decodes frames of every version, and the leader checks the
columns of a produced frame against the topic's without decoding records.

Offsets are not stored per record: row ``i`` has offset ``base_offset + i``, materialised
only when a reader asks for the column. The payload is stored and served as written;
decoding wraps it with ``pyarrow.ipc.read_record_batch`` without copying its buffers.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Literal, TypedDict, Unpack

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from crc32c import crc32c

from spark_stream.errors import CorruptFrameError

if TYPE_CHECKING:
    # Anything ``memoryview()`` accepts (bytes, bytearray, memoryview, mmap, ...);
    # collections.abc.Buffer from Python 3.12 on.
    from typing_extensions import Buffer as ReadableBuffer

__all__ = [
    "RECORD_SCHEMA",
    "HEADERS_TYPE",
    "OFFSET_FIELD",
    "BATCH_MAGIC",
    "BATCH_VERSION",
    "BATCH_HEADER_SIZE",
    "Compression",
    "BatchHeader",
    "build_batch",
    "encode_batch",
    "encode_records",
    "frame_header",
    "read_header",
    "verify_frame",
    "decode_frame",
    "iter_frames",
    "decode_frames",
    "with_base_offset",
    "frame_schema",
    "frame_range",
    "widen",
    "now_us",
    "null_headers",
]

HEADERS_TYPE = pa.list_(
    pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
)
RECORD_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary(), nullable=True),
        pa.field("value", pa.binary(), nullable=False),
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("headers", HEADERS_TYPE, nullable=True),
    ]
)
OFFSET_FIELD = pa.field("offset", pa.int64(), nullable=False)
_TIMESTAMP_TYPE = RECORD_SCHEMA.field("timestamp").type
#: Rows up to which a frame is "small": cached null headers, timestamps read in Python.
_SMALL_ROWS = 64

BATCH_MAGIC = b"FLVB"
BATCH_VERSION = 1
_HEADER = struct.Struct("<4sIqIBBHiiqqq")
BATCH_HEADER_SIZE = _HEADER.size  # 56
_CRC_START = 20
_BASE_OFFSET = struct.Struct("<q")
_MAX_PAYLOAD = 2**31 - 1

Compression = Literal["none", "lz4", "zstd"]
_CODECS: dict[Compression, int] = {"none": 0, "lz4": 1, "zstd": 2}
_CODEC_BITS = 0b11


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The decoded fixed header of one batch frame."""

    base_offset: int
    record_count: int
    first_timestamp: int
    max_timestamp: int
    payload_length: int
    crc: int
    producer_id: int = -1
    sequence: int = -1
    attributes: int = 0
    schema_version: int = 0

    @property
    def frame_length(self) -> int:
        """Bytes of the whole frame, header included."""
        return BATCH_HEADER_SIZE + self.payload_length

    @property
    def last_offset(self) -> int:
        """Offset of the last record in the batch."""
        return self.base_offset + self.record_count - 1

    @property
    def next_offset(self) -> int:
        """Offset the batch after this one starts at."""
        return self.base_offset + self.record_count

    @property
    def compression(self) -> Compression:
        """The codec the producer compressed the Arrow buffers with."""
        code = self.attributes & _CODEC_BITS
        return next((name for name, c in _CODECS.items() if c == code), "none")


def now_us() -> int:
    """The current time in microseconds since the epoch."""
    return int(datetime.now(UTC).timestamp() * 1_000_000)


def build_batch(
    values: Sequence[bytes | str] | pa.Array,
    keys: Sequence[bytes | str | None] | pa.Array | None = None,
    timestamps: Sequence[int] | pa.Array | None = None,
    headers: Sequence[Sequence[tuple[str, bytes]] | None] | None = None,
) -> pa.RecordBatch:
    """Build a record batch of ``RECORD_SCHEMA`` from Python lists or Arrow arrays.

    Args:
        values: record values; ``str`` is encoded as UTF-8.
        keys: optional record keys, ``None`` entries allowed.
        timestamps: microseconds since the epoch per record; defaults to now.
        headers: optional per-record lists of ``(name, value)`` pairs.
    """
    n = len(values)
    value_arr = _binary(values)
    key_arr = pa.nulls(n, pa.binary()) if keys is None else _binary(keys)
    if len(key_arr) != n:
        raise ValueError(f"keys has {len(key_arr)} entries for {n} values")
    if timestamps is None:
        ts_arr = pa.array(np.full(n, now_us(), dtype=np.int64)).cast(_TIMESTAMP_TYPE)
    elif isinstance(timestamps, pa.Array):
        ts_arr = pa.array(timestamps, pa.int64()).cast(_TIMESTAMP_TYPE)
    else:
        ts_arr = pa.array(timestamps, _TIMESTAMP_TYPE)  # ints straight in: no int64 cast
    if len(ts_arr) != n:
        raise ValueError(f"timestamps has {len(ts_arr)} entries for {n} values")
    if headers is None:
        hdr_arr = null_headers(n)
    else:
        hdr_arr = pa.array(
            [None if h is None else [{"key": k, "value": v} for k, v in h] for h in headers],
            HEADERS_TYPE,
        )
        if len(hdr_arr) != n:
            raise ValueError(f"headers has {len(hdr_arr)} entries for {n} values")
    return pa.RecordBatch.from_arrays([key_arr, value_arr, ts_arr, hdr_arr], schema=RECORD_SCHEMA)


def null_headers(n: int) -> pa.Array:
    """``n`` null header lists with an empty child: 4 bytes a row in a frame.

    ``pa.nulls(n, HEADERS_TYPE)`` builds child arrays whose offset buffers hold ``n + 1``
    entries each, and Arrow IPC writes them whole into every frame: about 3x the bytes of
    this form for small records. Small ones are cached (arrays are immutable): building
    one costs ~25 µs, most of a one-record frame's encoding.
    """
    return _small_null_headers(n) if n <= _SMALL_ROWS else _null_headers(n)


@lru_cache(maxsize=256)
def _small_null_headers(n: int) -> pa.Array:
    return _null_headers(n)


def _null_headers(n: int) -> pa.Array:
    return pa.ListArray.from_arrays(
        pa.array(np.zeros(n + 1, dtype=np.int32)),
        pa.array([], HEADERS_TYPE.value_type),
        type=HEADERS_TYPE,
        mask=pa.array(np.ones(n, dtype=bool)),
    )


def _binary(items: Sequence[bytes | str | None] | pa.Array) -> pa.Array:
    if isinstance(items, pa.Array):
        return items.cast(pa.binary())
    # pyarrow encodes str items as UTF-8 itself: no per-item Python work here.
    return pa.array(items, pa.binary())


@cache
def _schema_prefix_length(schema: pa.Schema, compression: str) -> int:
    """Bytes of the schema message that an IPC stream writer emits before the batches."""
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, schema, options=_write_options(compression)):
        pass
    size: int = sink.getvalue().size
    return size - 8  # minus the end-of-stream marker


@cache
def _write_options(compression: str) -> ipc.IpcWriteOptions:
    if compression not in _CODECS:
        raise ValueError(f"compression must be one of {sorted(_CODECS)}, got {compression!r}")
    return ipc.IpcWriteOptions(compression=None if compression == "none" else compression)


def _timestamp_range(batch: pa.RecordBatch) -> tuple[int, int]:
    index = batch.schema.get_field_index("timestamp")
    if index < 0 or batch.num_rows == 0:
        now = now_us()
        return now, now
    column = batch.column(index)
    if batch.num_rows <= _SMALL_ROWS and column.type == _TIMESTAMP_TYPE and not column.null_count:
        # A few rows: Python ints beat a cast and a compute kernel (~15 µs a frame).
        stamps = column.view(pa.int64()).to_pylist()
        return stamps[0], max(stamps)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("us", tz=column.type.tz)).view(pa.int64())
    first = column[0].as_py()
    top = pc.max(column).as_py()
    return (first if first is not None else now_us()), (top if top is not None else now_us())


def encode_batch(
    batch: pa.RecordBatch,
    *,
    base_offset: int = 0,
    compression: Compression = "none",
    producer_id: int = -1,
    sequence: int = -1,
    schema_version: int = 0,
) -> bytes:
    """Encode one record batch as a batch frame.

    Args:
        batch: the records; ``RECORD_SCHEMA`` for an untyped topic, the storage schema
            of a typed topic's version (``models.topic_schema.storage_schema``).
        base_offset: offset of row 0 (the leader rewrites it on append).
        compression: Arrow IPC buffer compression done here, transparent to readers.
        producer_id: idempotent producer id, -1 for none.
        sequence: idempotent producer sequence of this batch, -1 for none.
        schema_version: 0 for untyped records; the typed topic's schema version
            otherwise, and then the payload carries the schema message too.
    """
    if batch.num_rows == 0:
        raise ValueError("a batch frame holds at least one record")
    if not 0 <= schema_version <= 0xFFFF:
        raise ValueError(f"schema_version {schema_version} is outside 0..65535")
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, batch.schema, options=_write_options(compression)) as writer:
        writer.write_batch(batch)
    stream = sink.getvalue()
    start = _schema_prefix_length(batch.schema, compression) if schema_version == 0 else 0
    payload = memoryview(stream)[start : stream.size - 8]
    first_ts, max_ts = _timestamp_range(batch)
    head = frame_header(
        payload,
        batch.num_rows,
        first_ts,
        max_ts,
        base_offset=base_offset,
        compression=compression,
        producer_id=producer_id,
        sequence=sequence,
        schema_version=schema_version,
    )
    return b"".join((head, payload))


def frame_header(
    payload: ReadableBuffer,
    record_count: int,
    first_timestamp: int,
    max_timestamp: int,
    *,
    base_offset: int = 0,
    compression: Compression = "none",
    producer_id: int = -1,
    sequence: int = -1,
    schema_version: int = 0,
) -> bytes:
    """The 56-byte header of a frame carrying ``payload`` (its crc computed here).

    Args:
        payload: the Arrow IPC message(s) the header precedes.
        record_count: rows in the payload.
        first_timestamp: the first row's timestamp (µs).
        max_timestamp: the largest timestamp (µs).
        base_offset, compression, producer_id, sequence, schema_version: as for
            ``encode_batch``.
    """
    fields = (
        BATCH_VERSION,
        _CODECS[compression],
        schema_version,
        record_count,
        sequence,
        first_timestamp,
        max_timestamp,
        producer_id,
    )
    crc = crc32c(payload, crc32c(_HEADER.pack(BATCH_MAGIC, 0, 0, 0, *fields)[_CRC_START:]))
    return _HEADER.pack(BATCH_MAGIC, len(memoryview(payload)), base_offset, crc, *fields)


class _BatchOptions(TypedDict, total=False):
    """The keyword arguments of ``encode_batch``."""

    base_offset: int
    compression: Compression
    producer_id: int
    sequence: int


def encode_records(
    values: Sequence[bytes | str],
    keys: Sequence[bytes | str | None] | None = None,
    timestamps: Sequence[int] | None = None,
    headers: Sequence[Sequence[tuple[str, bytes]] | None] | None = None,
    **options: Unpack[_BatchOptions],
) -> bytes:
    """Encode Python lists as one batch frame; ``options`` as for ``encode_batch``."""
    return encode_batch(build_batch(values, keys, timestamps, headers), **options)


def read_header(buf: ReadableBuffer, pos: int = 0) -> BatchHeader:
    """Parse and sanity-check the header at ``pos`` without touching the payload.

    Raises:
        CorruptFrameError: too few bytes, bad magic or version, or impossible fields.
    """
    view = memoryview(buf)
    if len(view) - pos < BATCH_HEADER_SIZE:
        raise CorruptFrameError(
            f"truncated frame header at byte {pos}: {len(view) - pos} of {BATCH_HEADER_SIZE} bytes"
        )
    (
        magic,
        length,
        base,
        crc,
        version,
        attributes,
        schema_version,
        count,
        seq,
        first_ts,
        max_ts,
        producer,
    ) = _HEADER.unpack_from(view, pos)
    if magic != BATCH_MAGIC:
        raise CorruptFrameError(
            f"bad magic {bytes(magic)!r} at byte {pos}, expected {BATCH_MAGIC!r}"
        )
    if version != BATCH_VERSION:
        raise CorruptFrameError(f"unsupported frame version {version} at byte {pos}")
    if count <= 0:
        raise CorruptFrameError(f"record count {count} at byte {pos} is not positive")
    if base < 0:
        raise CorruptFrameError(f"negative base offset {base} at byte {pos}")
    if length > _MAX_PAYLOAD or length == 0:
        raise CorruptFrameError(f"impossible payload length {length} at byte {pos}")
    if (attributes & _CODEC_BITS) == 3:
        raise CorruptFrameError(f"unknown compression codec in attributes {attributes:#x}")
    return BatchHeader(
        base, count, first_ts, max_ts, length, crc, producer, seq, attributes, schema_version
    )


def frame_range(header: BatchHeader) -> str:
    """The frame's offsets as error messages and warnings name them."""
    return f"the frame of offsets [{header.base_offset}, {header.last_offset}]"


def verify_frame(buf: ReadableBuffer, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos`` and check the payload is whole and its crc matches.

    Raises:
        CorruptFrameError: naming the first thing that is wrong.
    """
    header = read_header(buf, pos)
    view = memoryview(buf)
    end = pos + header.frame_length
    if end > len(view):
        raise CorruptFrameError(
            f"truncated payload at byte {pos}: {len(view) - pos - BATCH_HEADER_SIZE} of "
            f"{header.payload_length} bytes"
        )
    actual = crc32c(view[pos + _CRC_START : end])
    if actual != header.crc:
        raise CorruptFrameError(
            f"crc mismatch in {frame_range(header)} at byte {pos}: stored {header.crc:#010x}, "
            f"computed {actual:#010x}"
        )
    return header


def decode_frame(
    buf: bytes | bytearray | memoryview,
    *,
    schema: pa.Schema = RECORD_SCHEMA,
    with_offsets: bool = False,
    check_crc: bool = True,
) -> pa.RecordBatch:
    """Decode one whole frame (exactly one, nothing after it) to a record batch.

    The payload buffers are wrapped, not copied: the batch keeps ``buf`` alive. A typed
    frame decodes with the schema it carries and is then widened to ``schema`` (columns
    it lacks, added by later schema versions, read as null) unless ``schema`` is
    ``RECORD_SCHEMA``, the default, which returns it as written.

    Raises:
        CorruptFrameError: bad header, crc, length, or a payload that is not a record
            batch of ``schema``.
    """
    header = verify_frame(buf) if check_crc else read_header(buf)
    view = memoryview(buf)
    if len(view) != header.frame_length:
        raise CorruptFrameError(
            f"frame is {len(view)} bytes but its header says {header.frame_length}"
        )
    return _decode_payload(view[BATCH_HEADER_SIZE:], header, schema, with_offsets)


def _decode_payload(
    payload: memoryview, header: BatchHeader, schema: pa.Schema, with_offsets: bool
) -> pa.RecordBatch:
    try:
        if header.schema_version:
            batch = _read_typed(payload, schema)
        else:
            batch = ipc.read_record_batch(pa.py_buffer(payload), schema)
        batch.validate(full=True)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise CorruptFrameError(
            f"the payload of {frame_range(header)} is not a record batch of the schema: {exc}"
        ) from exc
    if batch.num_rows != header.record_count:
        raise CorruptFrameError(
            f"the payload of {frame_range(header)} has {batch.num_rows} rows but its "
            f"header says {header.record_count}"
        )
    if with_offsets:
        offsets = pa.array(
            np.arange(header.base_offset, header.next_offset, dtype=np.int64), pa.int64()
        )
        if batch.schema.equals(RECORD_SCHEMA, check_metadata=True):
            # Untyped (most frames): add_column skips wrapping every column and a
            # schema-keyed cache lookup (hashing a schema costs ~3 µs), a third of
            # decoding a one-record frame.
            batch = batch.add_column(0, OFFSET_FIELD, offsets)
        else:
            batch = pa.RecordBatch.from_arrays(
                [offsets, *batch.columns], schema=_with_offsets(batch.schema)
            )
    return batch


def frame_schema(payload: ReadableBuffer) -> pa.Schema:
    """The schema a typed frame's payload carries (its first IPC message).

    Raises:
        CorruptFrameError: the payload does not start with a schema message.
    """
    try:
        return ipc.read_schema(pa.py_buffer(payload))
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise CorruptFrameError(f"a typed frame does not start with its schema: {exc}") from exc


def _read_typed(payload: memoryview, schema: pa.Schema) -> pa.RecordBatch:
    """A typed payload (schema message + batch message), widened to ``schema``."""
    reader = ipc.MessageReader.open_stream(pa.py_buffer(payload))
    written = ipc.read_schema(reader.read_next_message())
    batch = ipc.read_record_batch(reader.read_next_message(), written)
    if schema is RECORD_SCHEMA or written.equals(schema):
        return batch
    return widen(batch, schema)


def widen(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns, in its order: those it lacks read as null.

    Raises:
        ValueError: a column of the batch has another type than ``schema`` says.
    """
    columns: list[pa.Array] = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            columns.append(pa.nulls(batch.num_rows, field.type))
            continue
        column = batch.column(index)
        if column.type != field.type:
            raise ValueError(f"column {field.name!r} is {column.type}, expected {field.type}")
        columns.append(column)
    # Nullability is the reader's schema's: a column added later is nullable anyway.
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _with_offsets(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the materialised ``offset`` column first."""
    return pa.schema([OFFSET_FIELD, *schema])


def iter_frames(
    buf: bytes | bytearray | memoryview, *, check_crc: bool = True
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Walk a buffer of back-to-back frames, yielding each header and its whole frame bytes.

    Raises:
        CorruptFrameError: at the first frame that is torn or damaged.
    """
    view = memoryview(buf)
    pos = 0
    while pos < len(view):
        header = verify_frame(view, pos) if check_crc else read_header(view, pos)
        end = pos + header.frame_length
        if end > len(view):
            raise CorruptFrameError(f"truncated payload at byte {pos}")
        yield header, view[pos:end]
        pos = end


def decode_frames(
    buf: bytes | bytearray | memoryview,
    *,
    schema: pa.Schema = RECORD_SCHEMA,
    with_offsets: bool = False,
    check_crc: bool = True,
) -> list[pa.RecordBatch]:
    """Decode back-to-back frames (as read from a log or a fetch reply) to record batches."""
    return [
        _decode_payload(frame[BATCH_HEADER_SIZE:], header, schema, with_offsets)
        for header, frame in iter_frames(buf, check_crc=check_crc)
    ]


def with_base_offset(frame: bytes | bytearray | memoryview, base_offset: int) -> bytes:
    """A copy of ``frame`` whose header carries ``base_offset`` (outside the crc)."""
    out = bytearray(frame)
    _BASE_OFFSET.pack_into(out, 8, base_offset)
    return bytes(out)
