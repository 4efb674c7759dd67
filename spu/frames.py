"""Header-only walks over batch frames: a produce request's tail, a replica log's frames.

The SPU never decodes records on its hot paths. Controllers need a frame's header
(record count, producer id and sequence, crc) and its bytes, which ``read_header``
gives without touching the payload; the crc is checked once, by the storage engine on
append. These helpers bound every walk by the bytes it was given.
"""

from __future__ import annotations

from collections.abc import Iterator

from spark_stream.errors import (
    CorruptFrameError,
    InvalidRequestError,
    RecordTooLargeError,
    SchemaMismatchError,
)
from spark_stream.models.topic_schema import TopicSchema, check_columns, storage_schema
from spark_stream.records import BATCH_HEADER_SIZE, BatchHeader, frame_schema, read_header
from spu.storage import ReplicaStorage

__all__ = [
    "split_request",
    "check_codec",
    "check_schemas",
    "log_headers",
    "tail_signature",
    "SCAN_READ_BYTES",
]

SCAN_READ_BYTES = 8 << 20
"""Bytes of log viewed per step of a header scan (a view of the mmap, not a copy)."""


def split_request(
    buf: memoryview, max_batch_bytes: int
) -> tuple[list[BatchHeader], list[memoryview]]:
    """The headers and whole-frame views of back-to-back frames in a produce tail.

    Only headers are read; the crc and payload are checked by the append.

    Raises:
        InvalidRequestError: no frame at all.
        CorruptFrameError: a header that does not parse, or a frame cut short.
        RecordTooLargeError: a frame over ``max_batch_bytes`` (header included).
    """
    headers: list[BatchHeader] = []
    frames: list[memoryview] = []
    pos, size = 0, len(buf)
    while pos < size:
        header = read_header(buf, pos)
        length = header.frame_length
        if length > max_batch_bytes:
            raise RecordTooLargeError(
                f"batch {len(headers)} is {length} bytes, over the {max_batch_bytes}-byte limit"
            )
        if pos + length > size:
            raise CorruptFrameError(
                f"batch {len(headers)} at byte {pos} needs {length} bytes, "
                f"{size - pos} remain in the request"
            )
        headers.append(header)
        frames.append(buf[pos : pos + length])
        pos += length
    if not headers:
        raise InvalidRequestError("a produce request needs at least one batch frame")
    return headers, frames


def check_codec(headers: list[BatchHeader], accepted: str, partition: str) -> None:
    """Refuse a request whose frames use another codec than the topic stores.

    ``accepted`` is the topic's ``compression`` setting; ``any`` accepts every codec.

    Raises:
        InvalidRequestError: a frame compressed otherwise (nothing is appended).
    """
    if accepted == "any":
        return
    for index, header in enumerate(headers):
        if header.compression != accepted:
            raise InvalidRequestError(
                f"{partition} stores {accepted} batches (the topic's compression setting); "
                f"batch {index} is {header.compression}"
            )


def check_schemas(
    headers: list[BatchHeader],
    frames: list[memoryview],
    schema: TopicSchema | None,
    partition: str,
) -> None:
    """Refuse a request whose frames do not match the topic's schema (or its lack of one).

    An untyped topic takes untyped frames only; a typed topic takes frames of any of its
    schema versions whose carried schema is that version's storage schema exactly.
    Only each frame's schema message is read, never its records.

    Raises:
        SchemaMismatchError: naming the batch, the column and the types (nothing is
            appended).
        CorruptFrameError: a typed frame whose payload does not start with a schema.
    """
    for index, (header, frame) in enumerate(zip(headers, frames, strict=True)):
        version = header.schema_version
        where = f"{partition} batch {index}"
        if schema is None:
            if version:
                raise SchemaMismatchError(
                    f"{where} carries schema version {version}, but the topic is untyped"
                )
            continue
        if version == 0:
            raise SchemaMismatchError(
                f"{where} holds untyped records (key, value); the topic is typed "
                f"(schema version {schema.version}: "
                f"{', '.join(c.name + ' ' + c.type for c in schema.columns)})"
            )
        if version > schema.version:
            raise SchemaMismatchError(
                f"{where} carries schema version {version}; the topic's latest is {schema.version}"
            )
        expected = storage_schema(schema.user_schema(version))
        check_columns(expected, frame_schema(frame[BATCH_HEADER_SIZE:]), where)


def log_headers(
    log: ReplicaStorage, start: int | None = None, end: int | None = None
) -> Iterator[BatchHeader]:
    """Headers of the log's frames from the one holding ``start`` (default: log start).

    Args:
        log: the replica's storage.
        start: first offset of interest.
        end: stop before the frame starting at or after this offset (default: LEO).
    """
    offset = log.log_start_offset if start is None else max(start, log.log_start_offset)
    stop = log.leo if end is None else min(end, log.leo)
    while offset < stop:
        piece = log.read(offset, SCAN_READ_BYTES)
        if piece.next_offset <= offset:
            return
        for header, _ in piece.frames():
            if header.base_offset >= stop:
                return
            yield header
        offset = piece.next_offset


def tail_signature(
    log: ReplicaStorage, start: int, limit: int
) -> tuple[int, list[tuple[int, int]]]:
    """Where a follower's unverified tail begins and ``(base offset, crc)`` of its frames.

    Args:
        log: the follower's replica log.
        start: the offset from which the log is not known to match the leader's (its HW).
        limit: at most this many frames are listed.

    Returns:
        The base offset of the frame holding ``start`` (``start`` itself at a frame
        boundary or the LEO), and the signatures of the frames from there on.
    """
    start = min(max(start, log.log_start_offset), log.leo)
    signature: list[tuple[int, int]] = []
    first = start
    for header in log_headers(log, start):
        if not signature:
            first = min(first, header.base_offset)
        signature.append((header.base_offset, header.crc))
        if len(signature) >= limit:
            break
    return first, signature
