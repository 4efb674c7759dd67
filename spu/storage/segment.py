"""One segment at run time: append frames, locate an offset, read slices, seal, cut.

A segment is ``{base:020}.log`` (back-to-back frames) with its ``.index`` and
``.timeindex``. Appends go through ``pwritev`` (the leader's new base offset is written as
a patched 56-byte header followed by the untouched payload, so no frame is copied); reads
go through a read-only memory map of the log that is re-mapped when the file has grown
past it. Opening a segment from disk (scan, checks, index rebuild) is ``recovery.py``.

Memory maps and slices: a slice holds a view of the map that was current when it was
read. When the map must be replaced (growth, truncation, close), a map that still has
views is not closed but *retired*: it is dropped and unmapped by the last view going away.
A cut (``truncate``) done while a retired or current map still has views would turn their
pages past the new end of file into SIGBUS; in that case the segment writes the kept
prefix to a new file and renames it over the old one, so old views keep the old inode.

Open files are bounded per process (``spu.storage.open_files``): a segment registers when
it opens its files and is *released* (log descriptor, map and indexes closed; the state in
memory kept) when it was the least recently used beyond the bound or idle too long, then
opens them again on its next use. Every method that touches a file holds the segment's
lock and goes through ``_use``, so a release from another thread never closes a file in
use (it is refused instead). Releasing an active segment does not fsync it: the data
stays in the page cache and the next ``flush`` (reopening the file) syncs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import mmap
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from spark_stream.errors import CorruptFrameError, CorruptSegmentError, StorageError
from spark_stream.records import BATCH_HEADER_SIZE, BatchHeader, read_header, with_base_offset
from spu.storage._fileio import copy_range, fsync_dir, pwrite_all
from spu.storage.framing import BatchFrame, ScanResult, scan_frames
from spu.storage.index import (
    OFFSET_ENTRY,
    TIME_ENTRY,
    IndexCursor,
    count_below_pos,
    count_below_rel,
    floor_by_pos,
    floor_by_rel,
    last_below_ts,
)
from spu.storage.index_file import IndexFile
from spu.storage.layout import SWAP_SUFFIX, segment_paths
from spu.storage.open_files import OPEN_FILES
from spu.storage.slices import FileHandle, LogSlice

__all__ = ["Segment", "SegmentInfo", "restore_cursor"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _using(
    method: Callable[Concatenate[Segment, _P], _R],
) -> Callable[Concatenate[Segment, _P], _R]:
    """Run ``method`` under the segment's lock with its files open (reopened if released)."""

    @functools.wraps(method)
    def wrapper(self: Segment, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            self._use()
            return method(self, *args, **kwargs)

    return wrapper


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A snapshot of one segment, for retention, reports and the demo."""

    base_offset: int
    next_offset: int
    size: int
    sealed: bool
    max_timestamp: int
    path: Path


class Segment:
    """One segment's log, indexes and read map.

    One writer at a time (see ``ReplicaLog``); the lock only keeps ``release`` (called
    from any thread by the open-files bound) from closing files another call is using.
    """

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        handle: FileHandle,
        size: int,
        next_offset: int,
        offset_index: IndexFile,
        time_index: IndexFile,
        cursor: IndexCursor,
        sealed: bool,
        created_us: int,
    ) -> None:
        """Wrap opened files; use ``Segment.create`` or the ``recovery`` functions."""
        self.directory = directory
        self.base_offset = base_offset
        self.path, _, _ = segment_paths(directory, base_offset)
        self.size = size
        self.next_offset = next_offset
        self.sealed = sealed
        self.created_us = created_us
        self._handle: FileHandle | None = handle
        self._oindex = offset_index
        self._tindex = time_index
        self._cursor = cursor
        self._map: mmap.mmap | None = None
        self._mapped = 0
        self._retired: list[weakref.ref[mmap.mmap]] = []
        self._lock = threading.RLock()
        self._closed = False
        self._unsynced = False  # appended since the last fdatasync through this segment
        OPEN_FILES.opened(self)

    @classmethod
    def create(cls, directory: Path, base_offset: int, interval: int, created_us: int) -> Segment:
        """Create an empty active segment (replacing any stale files of that name)."""
        log, index, timeindex = segment_paths(directory, base_offset)
        fd = os.open(log, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        return cls(
            directory,
            base_offset,
            handle=FileHandle(fd),
            size=0,
            next_offset=base_offset,
            offset_index=IndexFile.write(
                index, OFFSET_ENTRY, np.empty(0, OFFSET_ENTRY), writable=True
            ),
            time_index=IndexFile.write(
                timeindex, TIME_ENTRY, np.empty(0, TIME_ENTRY), writable=True
            ),
            cursor=IndexCursor(interval),
            sealed=False,
            created_us=created_us,
        )

    # -- state ---------------------------------------------------------------------------

    @property
    def max_timestamp(self) -> int:
        """Largest record timestamp in the segment (``NO_TIMESTAMP`` when empty)."""
        return self._cursor.max_timestamp

    @property
    def is_empty(self) -> bool:
        """True when the segment holds no frame."""
        return self.size == 0

    def info(self) -> SegmentInfo:
        """A snapshot of this segment."""
        return SegmentInfo(
            self.base_offset,
            self.next_offset,
            self.size,
            self.sealed,
            self.max_timestamp,
            self.path,
        )

    # -- writes --------------------------------------------------------------------------

    @property
    def is_released(self) -> bool:
        """True while the segment's files are closed (until its next use, or for good)."""
        return self._handle is None

    @_using
    def append(self, frames: Sequence[BatchFrame], bases: Sequence[int]) -> None:
        """Write ``frames`` at the end with base offsets ``bases`` and index them.

        Raises:
            StorageError: the write failed; the file is cut back to where it was.
        """
        if self.sealed:
            raise StorageError(f"{self.path.name} is sealed")
        saved = dataclasses.replace(self._cursor)
        buffers: list[bytes | memoryview] = []
        offset_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        pos = self.size
        for frame, base in zip(frames, bases, strict=True):
            header = frame.header
            if header.base_offset == base:
                buffers.append(frame.data)
            else:
                buffers.append(with_base_offset(frame.data[:BATCH_HEADER_SIZE], base))
                buffers.append(frame.data[BATCH_HEADER_SIZE:])
            entry, time_entry = self._cursor.on_batch(
                base - self.base_offset, pos, header.frame_length, header.max_timestamp
            )
            if entry is not None:
                offset_entries.append(entry)
            if time_entry is not None:
                time_entries.append(time_entry)
            pos += header.frame_length
        try:
            pwrite_all(self._fd(), buffers, self.size)
        except OSError as exc:
            self._cursor = saved
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd(), self.size)
            raise StorageError(f"append to {self.path.name} failed: {exc}") from exc
        for entry in offset_entries:
            self._oindex.append(*entry)
        for time_entry in time_entries:
            self._tindex.append(*time_entry)
        self.size = pos
        self.next_offset = bases[-1] + frames[-1].header.record_count
        self._unsynced = True

    def flush(self) -> None:
        """fsync the log's data (the active indexes are rebuilt at open, not synced).

        A released segment with nothing appended since its last flush is not reopened.
        """
        with self._lock:
            if self._closed or (self._handle is None and not self._unsynced):
                return
            self._use()
            os.fdatasync(self._fd())
            self._unsynced = False

    @_using
    def seal(self) -> None:
        """Make the segment immutable: close the time index, fsync log and indexes."""
        if self.sealed:
            return
        closing = self._cursor.seal_entry()
        if closing is not None:
            self._tindex.append(*closing)
        self.flush()
        self._oindex.seal()
        self._tindex.seal()
        self.sealed = True

    @_using
    def reopen_for_append(self, created_us: int) -> None:
        """Make a sealed segment the active one again (a cut or recovery ended the log here)."""
        if not self.sealed:
            return
        self._handle = FileHandle(os.open(self.path, os.O_RDWR))
        self._oindex.make_writable()
        self._tindex.make_writable()
        self.sealed = False
        self.created_us = created_us

    @_using
    def truncate(self, offset: int, created_us: int) -> int:
        """Cut the segment at the batch holding ``offset`` (at or below it).

        Returns:
            The new ``next_offset``: ``offset`` itself when it starts a batch, else the
            base offset of the batch that held it.
        """
        if offset >= self.next_offset:
            return self.next_offset
        if offset <= self.base_offset:
            cut, new_next = 0, self.base_offset
        else:
            cut, header = self.locate(offset)
            new_next = header.base_offset
        self.reopen_for_append(created_us)
        self._cut_file(cut)
        self._oindex.truncate(count_below_pos(self._oindex.entries, cut))
        self._tindex.truncate(count_below_rel(self._tindex.entries, new_next - self.base_offset))
        self.size, self.next_offset = cut, new_next
        if cut:
            result, cursor = restore_cursor(
                self._buffer(),
                self.base_offset,
                cut,
                self._oindex,
                self._tindex,
                self._cursor.interval,
                verify=False,
            )
            if result.error is not None:
                raise CorruptSegmentError(f"{self.path.name}: {result.error}")
            self._cursor = cursor
        else:
            self._cursor = IndexCursor(self._cursor.interval)
        return new_next

    def close(self) -> None:
        """Unmap, trim the active indexes, and drop the file (slices keep it open)."""
        with self._lock:
            self._close_files()
            self._closed = True
        OPEN_FILES.closed(self)

    def delete(self) -> None:
        """Close and remove the segment's files (open slices still read the old inode)."""
        with self._lock:
            self._retire_map()
            for index in (self._oindex, self._tindex):
                index.delete()
            self._handle = None
            self._closed = True
            self.path.unlink(missing_ok=True)
        OPEN_FILES.closed(self)

    def release(self) -> bool:
        """Close the files until the next use (the open-files bound asks; any thread).

        Returns:
            False when the segment is in use on another thread right now (nothing closed).
        """
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if not self._closed and self._handle is not None:
                self._close_files()
        finally:
            self._lock.release()
        OPEN_FILES.closed(self)
        return True

    # -- reads ---------------------------------------------------------------------------

    @_using
    def locate(self, offset: int) -> tuple[int, BatchHeader]:
        """Position and header of the frame holding ``offset`` (in this segment).

        Raises:
            CorruptSegmentError: the walk from the index ran off the log.
        """
        entries = self._oindex.entries
        i = floor_by_rel(entries, offset - self.base_offset)
        pos = int(entries["pos"][i]) if i >= 0 else 0
        del entries
        buf = self._buffer()
        try:
            while True:
                header = read_header(buf, pos)
                if header.next_offset > offset:
                    return pos, header
                pos += header.frame_length
        except CorruptFrameError as exc:
            raise CorruptSegmentError(
                f"{self.path.name}: no frame holds offset {offset}: {exc}"
            ) from None

    @_using
    def read(self, offset: int, max_bytes: int, end_offset: int) -> LogSlice:
        """Whole frames from the one holding ``offset``, about ``max_bytes`` of them.

        Only frames that end at or before ``end_offset`` are visible; at least one frame is
        returned when one is visible, whatever its size.
        """
        pos, first = self.locate(offset)
        visible = self.size if end_offset >= self.next_offset else self.locate(end_offset)[0]
        if visible <= pos:
            return LogSlice.empty(offset)
        limit = pos + max(max_bytes, 0)
        if limit >= visible:
            stop = visible
        elif limit < pos + first.frame_length:
            stop = pos + first.frame_length  # one frame, whatever the budget
        else:
            stop = self._boundary_at_or_below(limit, pos)
        buf = self._buffer()
        next_offset = self.next_offset if stop == self.size else read_header(buf, stop).base_offset
        return LogSlice(
            offset,
            first.base_offset,
            next_offset,
            memoryview(buf)[pos:stop],
            pos,
            self.path,
            self._handle,
        )

    @_using
    def find_timestamp(self, ts: int, end_offset: int, schema: pa.Schema) -> int | None:
        """First offset below ``end_offset`` whose record timestamp is ``>= ts``, if any."""
        entries = self._tindex.entries
        i = last_below_ts(entries, ts)
        rel = int(entries["rel"][i]) if i >= 0 else -1
        del entries
        pos = self.locate(self.base_offset + rel)[0] if rel >= 0 else 0
        buf = self._buffer()
        while pos < self.size:
            header = read_header(buf, pos)
            if header.next_offset > end_offset:
                return None
            if header.max_timestamp >= ts:
                row = _first_row_at_or_after(buf, pos, header, ts, schema)
                if row is not None:
                    return header.base_offset + row
            pos += header.frame_length
        return None

    @_using
    def frames_view(self) -> memoryview:
        """All frame bytes of the segment (for export); empty when the segment is."""
        return memoryview(self._buffer())[: self.size] if self.size else memoryview(b"")

    # -- internals -----------------------------------------------------------------------

    def _use(self) -> None:
        """Make the files usable: reopen them when released; tell the bound either way."""
        if self._closed:
            raise StorageError(f"{self.path.name} is closed")
        if self._handle is not None:
            OPEN_FILES.used(self)
            return
        try:
            handle = FileHandle(os.open(self.path, os.O_RDONLY if self.sealed else os.O_RDWR))
            self._oindex.reopen()
            self._tindex.reopen()
        except (OSError, ValueError) as exc:
            self._oindex.close(trim=False)
            self._tindex.close(trim=False)
            raise StorageError(f"cannot reopen {self.path.name}: {exc}") from exc
        self._handle = handle
        OPEN_FILES.opened(self)

    def _close_files(self) -> None:
        self._retire_map()
        self._oindex.close()
        self._tindex.close()
        self._handle = None

    def _fd(self) -> int:
        if self._handle is None:
            raise StorageError(f"{self.path.name} is closed")
        return self._handle.fileno()

    def _buffer(self) -> mmap.mmap:
        if self._map is None or self._mapped < self.size:
            self._retire_map()
            self._map = mmap.mmap(self._fd(), self.size, access=mmap.ACCESS_READ)
            self._mapped = self.size
        return self._map

    def adopt_map(self, mapped: mmap.mmap, size: int) -> None:
        """Use a map the opener already made of ``size`` bytes."""
        self._retire_map()
        self._map, self._mapped = mapped, size

    def _retire_map(self) -> None:
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                self._retired = [r for r in self._retired if r() is not None]
                self._retired.append(weakref.ref(self._map))
            self._map, self._mapped = None, 0

    def _boundary_at_or_below(self, limit: int, floor: int) -> int:
        entries = self._oindex.entries
        i = floor_by_pos(entries, limit)
        pos = max(int(entries["pos"][i]) if i >= 0 else 0, floor)
        del entries
        buf = self._buffer()
        while True:
            length = read_header(buf, pos).frame_length
            if pos + length > limit:
                return pos
            pos += length

    def _cut_file(self, cut: int) -> None:
        self._retire_map()
        self._retired = [ref for ref in self._retired if ref() is not None]
        if not self._retired:
            os.ftruncate(self._fd(), cut)
            os.fsync(self._fd())
            return
        # Views of the old bytes are alive: keep their inode, give the log a new one.
        swap = self.path.with_name(self.path.name + SWAP_SUFFIX)
        out = os.open(swap, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            copy_range(self._fd(), out, cut)
            os.fsync(out)
        except OSError:
            os.close(out)
            raise
        os.replace(swap, self.path)
        fsync_dir(self.directory)
        self._handle = FileHandle(out)
        self._retired = []


def restore_cursor(
    buf: mmap.mmap | memoryview,
    base_offset: int,
    size: int,
    offset_index: IndexFile,
    time_index: IndexFile,
    interval: int,
    *,
    verify: bool,
) -> tuple[ScanResult, IndexCursor]:
    """Rebuild the indexing state of a segment from its indexes and a walk of its tail.

    The walk starts at the last offset-index entry (byte 0 if none), so it reads about
    ``interval`` bytes. Returns the ``ScanResult`` of the walk and the cursor.
    """
    cursor = IndexCursor(interval)
    last_time = time_index.last()
    if last_time is not None:
        cursor.max_timestamp = cursor.last_time_key = int(last_time[0])
    last_entry = offset_index.last()
    start, expected = (
        (0, base_offset)
        if last_entry is None
        else (int(last_entry[1]), base_offset + int(last_entry[0]))
    )

    def on_frame(pos: int, header: BatchHeader) -> None:
        cursor.max_timestamp = max(cursor.max_timestamp, header.max_timestamp)
        cursor.bytes_since_entry += header.frame_length
        cursor.last_rel = header.base_offset - base_offset

    result = scan_frames(
        buf, start=start, expected_offset=expected, verify=verify, on_frame=on_frame, stop=size
    )
    return result, cursor


def _first_row_at_or_after(
    buf: mmap.mmap, pos: int, header: BatchHeader, ts: int, schema: pa.Schema
) -> int | None:
    if schema.get_field_index("timestamp") < 0:
        return 0
    payload = memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + header.frame_length]
    try:
        batch = ipc.read_record_batch(pa.py_buffer(payload), schema)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise CorruptSegmentError(
            f"batch at offset {header.base_offset} does not decode: {exc}"
        ) from None
    column = batch.column("timestamp")
    if pa.types.is_timestamp(column.type):
        column = pc.cast(column, pa.timestamp("us", tz=column.type.tz)).view(pa.int64())
    values = column.to_numpy(zero_copy_only=False)
    hits = np.flatnonzero(values >= ts)
    return int(hits[0]) if len(hits) else None
