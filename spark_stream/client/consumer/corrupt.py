"""A frame that fails its checks on the way to a reader: name its offsets, or skip it.

The leader refuses produced frames no reader could decode (``spark_stream.frame_check``),
but bytes can still rot on disk after they were accepted. Every reader checks each frame
it receives (crc, then the decode). By default a damaged frame ends the read with
``CorruptFrameError`` naming the frame's offset range; with the explicit
``skip_corrupt_frames`` option the reader logs a WARNING naming the range and goes on
after it: those records are lost to this read, nothing else is.

A frame whose *header* does not parse cannot be skipped (its length is unknown): that
still raises, naming the byte position.
"""

from __future__ import annotations

import logging

import pyarrow as pa

from spark_stream.errors import CorruptFrameError
from spark_stream.records import BatchHeader, decode_frame, frame_range, verify_frame

__all__ = ["checked", "read_frame"]

log = logging.getLogger(__name__)

SKIP_HINT = "the consumer option skip_corrupt_frames reads past it"


def _damaged(where: str, header: BatchHeader, exc: CorruptFrameError, skip: bool) -> None:
    """Log the skip of a damaged frame, or raise naming it."""
    if not skip:
        raise CorruptFrameError(f"{where}: {exc} ({SKIP_HINT})") from exc
    log.warning(
        "%s: skipping %s, damaged (%d records not read): %s",
        where,
        frame_range(header),
        header.record_count,
        exc,
    )


def checked(frame: memoryview, header: BatchHeader, *, where: str, skip: bool) -> bool:
    """Whether the frame's crc matches; False when it does not and ``skip`` is set.

    Args:
        frame: one whole frame.
        header: its parsed header.
        where: the partition, for the message.
        skip: log a WARNING and answer False instead of raising.

    Raises:
        CorruptFrameError: naming the frame's offsets (without ``skip``).
    """
    try:
        verify_frame(frame)
    except CorruptFrameError as exc:
        _damaged(where, header, exc, skip)
        return False
    return True


def read_frame(
    frame: memoryview,
    header: BatchHeader,
    *,
    schema: pa.Schema,
    with_offsets: bool,
    where: str,
    skip: bool,
    check_crc: bool = False,
) -> pa.RecordBatch | None:
    """The frame's records, or None when it is damaged and ``skip`` is set.

    Args:
        frame: one whole frame.
        header: its parsed header.
        schema: the schema to decode with (``records.decode_frame``).
        with_offsets: materialise the ``offset`` column.
        where: the partition, for the message.
        skip: log a WARNING and answer None instead of raising.
        check_crc: check the crc too (False when ``checked`` already did).

    Raises:
        CorruptFrameError: naming the frame's offsets (without ``skip``).
    """
    if check_crc and not checked(frame, header, where=where, skip=skip):
        return None
    try:
        return decode_frame(frame, schema=schema, with_offsets=with_offsets, check_crc=False)
    except CorruptFrameError as exc:
        _damaged(where, header, exc, skip)
        return None
