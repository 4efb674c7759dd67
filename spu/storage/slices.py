"""What a read returns: whole frames of one segment, as bytes that were never decoded.

A ``LogSlice`` holds a memoryview of the segment's memory map (zero copy: hand it to a
transport, or decode it with ``pyarrow.ipc`` without copying buffers) and the same range
as ``(fileno(), position, length)`` for ``os.sendfile``. The slice keeps the map and the
file descriptor alive, so it stays readable even after retention deletes the segment.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from spark_stream.errors import CorruptFrameError
from spark_stream.records import (
    BATCH_HEADER_SIZE,
    OFFSET_FIELD,
    RECORD_SCHEMA,
    BatchHeader,
    decode_frames,
    iter_frames,
)

__all__ = ["FileHandle", "LogSlice", "decode_trusted"]


class FileHandle:
    """An OS file descriptor that closes when its last holder (segment or slice) drops it."""

    __slots__ = ("fd", "__weakref__")

    def __init__(self, fd: int) -> None:
        """Own ``fd``."""
        self.fd = fd

    def fileno(self) -> int:
        """The descriptor."""
        return self.fd

    def __del__(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


@dataclass(frozen=True, slots=True, eq=False)
class LogSlice:
    """Back-to-back frames from one segment, ``[base_offset, next_offset)``.

    Attributes:
        offset: the offset the read asked for (``base_offset <= offset``: the first frame
            is the one holding it, so a consumer skips its records below ``offset``).
        base_offset: base offset of the first frame (``offset`` when empty).
        next_offset: where the next read starts (``offset`` when empty).
        data: the frame bytes, a view of the segment's memory map.
        position: byte position of ``data`` in the segment file.
        path: the segment file, ``None`` when empty.
    """

    offset: int
    base_offset: int
    next_offset: int
    data: memoryview
    position: int = 0
    path: Path | None = None
    file: FileHandle | None = field(default=None, repr=False)

    @classmethod
    def empty(cls, offset: int) -> LogSlice:
        """A slice with nothing visible at ``offset``."""
        return cls(offset, offset, offset, memoryview(b""))

    @property
    def length(self) -> int:
        """Bytes in the slice."""
        return len(self.data)

    def __len__(self) -> int:
        return len(self.data)

    @property
    def records(self) -> int:
        """Records in the slice's frames (some may be below ``offset``)."""
        return self.next_offset - self.base_offset

    def fileno(self) -> int:
        """The segment's file descriptor, for ``os.sendfile(out, fileno, position, length)``.

        Raises:
            ValueError: the slice is empty.
        """
        if self.file is None:
            raise ValueError("an empty slice has no file")
        return self.file.fileno()

    def frames(self) -> Iterator[tuple[BatchHeader, memoryview]]:
        """Each frame's header and bytes (no crc check: use ``decode`` for that)."""
        return iter_frames(self.data, check_crc=False)

    def decode(
        self,
        schema: pa.Schema = RECORD_SCHEMA,
        *,
        trusted: bool = False,
        with_offsets: bool = False,
    ) -> list[pa.RecordBatch]:
        """Decode the frames to record batches without copying their buffers.

        Args:
            schema: the topic's schema.
            trusted: skip the crc and the full Arrow validation (bytes this process's own
                log verified on append); ``False`` does both, as for bytes from a network.
            with_offsets: prepend the materialised ``offset`` column.
        """
        if trusted:
            return decode_trusted(self.data, schema, with_offsets=with_offsets)
        return decode_frames(self.data, schema=schema, with_offsets=with_offsets)


def decode_trusted(
    buf: bytes | bytearray | memoryview,
    schema: pa.Schema = RECORD_SCHEMA,
    *,
    with_offsets: bool = False,
) -> list[pa.RecordBatch]:
    """Decode back-to-back frames trusting their bytes: no crc, no full validation.

    This is what pyarrow's own IPC reader does with a file; use it only on bytes whose crc
    was checked when they entered the log.

    Raises:
        CorruptFrameError: a header, or a payload's metadata, that does not parse.
    """
    out: list[pa.RecordBatch] = []
    names = None
    for header, frame in iter_frames(buf, check_crc=False):
        try:
            batch = ipc.read_record_batch(pa.py_buffer(frame[BATCH_HEADER_SIZE:]), schema)
        except (pa.ArrowException, ValueError, OSError) as exc:
            raise CorruptFrameError(
                f"payload at offset {header.base_offset} is not a record batch: {exc}"
            ) from exc
        if with_offsets:
            if names is None:
                names = pa.schema([OFFSET_FIELD, *schema])
            offsets = pa.array(
                np.arange(header.base_offset, header.next_offset, dtype=np.int64), pa.int64()
            )
            batch = pa.RecordBatch.from_arrays([offsets, *batch.columns], schema=names)
        out.append(batch)
    return out
