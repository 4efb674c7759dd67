"""Batch frames as the storage engine sees them: validating appends, scanning segments.

The engine never decodes records on its hot paths; it reads the fixed frame header
(``spark_stream.records.read_header``), checks the crc, and moves whole frames. Scanning a
segment walks frames from a position, checking each one and the contiguity of their
offsets (the base offset is outside the crc, so contiguity is what protects it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from spark_stream.errors import CorruptFrameError, InvalidRequestError, RecordTooLargeError
from spark_stream.frame_check import PayloadCheck, check_payload
from spark_stream.records import (
    BatchHeader,
    iter_frames,
    read_header,
    verify_frame,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer as ReadableBuffer  # a segment's mmap, too

__all__ = [
    "BASE_OFFSET_AT",
    "BatchFrame",
    "FramesInput",
    "ScanResult",
    "split_frames",
    "scan_frames",
]

# Byte position of the base offset in a frame header (the one field outside the crc,
# rewritten by the leader); tests check it against ``with_base_offset``.
BASE_OFFSET_AT = 8

Buffer = bytes | bytearray | memoryview
FramesInput = Buffer | Sequence[Buffer]


@dataclass(frozen=True, slots=True)
class BatchFrame:
    """One validated frame: its header and its whole bytes (header included)."""

    header: BatchHeader
    data: memoryview


def split_frames(
    frames: FramesInput,
    *,
    max_frame_bytes: int,
    schema: pa.Schema | None = None,
    check: PayloadCheck = "full",
) -> list[BatchFrame]:
    """Validate the frames of one append and split them.

    Args:
        frames: a buffer of back-to-back frames (as a produce or fetch reply carries
            them), or a sequence of buffers holding exactly one frame each.
        max_frame_bytes: the largest frame accepted, header included.
        schema: when given, each payload must be a record batch of this schema (a
            typed frame: of the schema it carries) with the header's row count.
        check: how much of each payload ``schema`` asks to check
            (``spark_stream.frame_check.check_payload``).

    Raises:
        InvalidRequestError: no frames at all.
        CorruptFrameError: a torn frame, bad header, crc mismatch, trailing bytes, or a
            payload that is not a record batch of ``schema``.
        RecordTooLargeError: a frame larger than ``max_frame_bytes``.
    """
    if isinstance(frames, bytes | bytearray | memoryview):
        out = [BatchFrame(h, v) for h, v in iter_frames(frames, check_crc=True)]
    else:
        out = []
        for item in frames:
            header = verify_frame(item)
            view = memoryview(item)
            if len(view) != header.frame_length:
                raise CorruptFrameError(
                    f"a buffer of {len(view)} bytes holds a frame of {header.frame_length}"
                )
            out.append(BatchFrame(header, view))
    if not out:
        raise InvalidRequestError("an append needs at least one batch frame")
    for index, frame in enumerate(out):
        if frame.header.frame_length > max_frame_bytes:
            raise RecordTooLargeError(
                f"batch of {frame.header.frame_length} bytes at offset "
                f"{frame.header.base_offset} is over the {max_frame_bytes}-byte limit"
            )
        if schema is not None:
            try:
                check_payload(frame.data, frame.header, schema, check)
            except CorruptFrameError as exc:  # a producer numbers its frames from 0
                raise CorruptFrameError(f"batch {index} of {len(out)}: {exc}") from None
    return out


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Where a scan stopped and why.

    Attributes:
        end: byte position after the last good frame.
        next_offset: offset after the last good frame.
        frames: good frames seen.
        error: why the scan stopped before the end of the buffer, or ``None``.
    """

    end: int
    next_offset: int
    frames: int
    error: str | None


def scan_frames(
    buf: ReadableBuffer,
    *,
    start: int,
    expected_offset: int,
    verify: bool,
    on_frame: Callable[[int, BatchHeader], None] | None = None,
    stop: int | None = None,
) -> ScanResult:
    """Walk frames from byte ``start`` until the end of ``buf`` (or ``stop``) or damage.

    Args:
        buf: the segment bytes.
        start: position of the first frame to check.
        expected_offset: the base offset the first frame must have.
        verify: check each frame's crc (otherwise headers only).
        on_frame: called with ``(position, header)`` for every good frame.
        stop: stop at this byte position instead of the end of ``buf``.
    """
    view = memoryview(buf)
    limit = len(view) if stop is None else stop
    pos, expected, count = start, expected_offset, 0
    while pos < limit:
        try:
            header = verify_frame(view, pos) if verify else read_header(view, pos)
        except CorruptFrameError as exc:
            return ScanResult(pos, expected, count, str(exc))
        if pos + header.frame_length > limit:
            return ScanResult(pos, expected, count, f"truncated frame at byte {pos}")
        if header.base_offset != expected:
            return ScanResult(
                pos,
                expected,
                count,
                f"frame at byte {pos} has base offset {header.base_offset}, expected {expected}",
            )
        if on_frame is not None:
            on_frame(pos, header)
        pos += header.frame_length
        expected = header.next_offset
        count += 1
    return ScanResult(pos, expected, count, None)
