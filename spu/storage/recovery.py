"""Opening a replica directory: lock it, clean up after a crash, open and repair segments.

Theory of operation. Only the last segment can have been written to when the process
died, so it is always scanned in full: every frame's header and crc, and the contiguity
of offsets from the segment's base. The file is cut after the last good frame (a torn or
garbled tail) and both indexes are rebuilt from the scan.

Sealed segments were fsynced, indexes included, when they were rolled. Opening one is
cheap: its first frame must carry the base offset in its name; its offset index must be
sorted, point inside the file, and every entry must land on a frame header with the
offset it names (one vectorised gather); its time index must be sorted and name indexed
batches; and a crc-checked walk from the last index entry must end exactly at the end of
the file. An index that is missing or fails a check is rebuilt from a full scan. Damage
in the frames themselves raises ``CorruptSegmentError`` naming the file; the log then
sets that segment and everything after it aside. ``recovery_scan="all"`` scans sealed
segments in full too.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spark_stream.errors import CorruptFrameError, CorruptSegmentError, StorageError
from spark_stream.records import BATCH_HEADER_SIZE, BatchHeader, read_header
from spu.storage._fileio import fsync_dir
from spu.storage.config import LogConfig
from spu.storage.framing import BASE_OFFSET_AT, ScanResult, scan_frames
from spu.storage.index import (
    OFFSET_ENTRY,
    TIME_ENTRY,
    IndexCursor,
    offset_index_problem,
    time_index_problem,
)
from spu.storage.index_file import IndexFile
from spu.storage.layout import (
    CORRUPT_SUFFIX,
    INDEX_SUFFIX,
    LOCK_NAME,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIMEINDEX_SUFFIX,
    list_segment_bases,
    segment_paths,
)
from spu.storage.segment import Segment, restore_cursor
from spu.storage.slices import FileHandle

__all__ = [
    "RecoveryReport",
    "lock_directory",
    "open_active",
    "open_sealed",
    "open_segments",
    "remove_leftovers",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What opening the log had to repair.

    Attributes:
        cut_tail: what was cut off the active segment (torn or corrupt tail), or ``None``.
        corrupt_segments: the damaged sealed segment (its error names the file).
        set_aside: files renamed ``*.corrupt`` (the damaged segment and all after it).
    """

    cut_tail: str | None = None
    corrupt_segments: tuple[CorruptSegmentError, ...] = ()
    set_aside: tuple[Path, ...] = ()


def open_active(
    directory: Path, base_offset: int, interval: int, created_us: int
) -> tuple[Segment, str | None]:
    """Open the last segment for appends: full scan, cut a bad tail, rebuild indexes.

    Returns:
        The segment, and a description of what was cut off (``None`` if nothing was).
    """
    path, index_path, time_path = segment_paths(directory, base_offset)
    handle = FileHandle(os.open(path, os.O_RDWR))
    size = os.fstat(handle.fd).st_size
    if size:
        mapped = mmap.mmap(handle.fd, size, access=mmap.ACCESS_READ)
        result, cursor, offsets, times = _full_scan(mapped, base_offset, interval)
        _close_quietly(mapped)
    else:
        result = ScanResult(0, base_offset, 0, None)
        cursor = IndexCursor(interval)
        offsets, times = np.empty(0, OFFSET_ENTRY), np.empty(0, TIME_ENTRY)
    cut = None
    if result.error is not None:
        cut = f"{path.name}: kept {result.end} of {size} bytes: {result.error}"
        log.warning("recovery cut a torn or corrupt tail: %s", cut)
        os.ftruncate(handle.fd, result.end)
        os.fsync(handle.fd)
    segment = Segment(
        directory,
        base_offset,
        handle=handle,
        size=result.end,
        next_offset=result.next_offset,
        offset_index=IndexFile.write(index_path, OFFSET_ENTRY, offsets, writable=True),
        time_index=IndexFile.write(time_path, TIME_ENTRY, times, writable=True),
        cursor=cursor,
        sealed=False,
        created_us=created_us,
    )
    return segment, cut


def open_sealed(directory: Path, base_offset: int, interval: int, *, verify_all: bool) -> Segment:
    """Open a sealed segment read-only, checking it and rebuilding its indexes if needed.

    Raises:
        CorruptSegmentError: the segment's frames are damaged; the message names the file.
    """
    path, index_path, time_path = segment_paths(directory, base_offset)
    name = path.name
    handle = FileHandle(os.open(path, os.O_RDONLY))
    size = os.fstat(handle.fd).st_size
    if size <= BATCH_HEADER_SIZE:
        raise CorruptSegmentError(f"{name}: {size} bytes cannot hold a batch")
    mapped = mmap.mmap(handle.fd, size, access=mmap.ACCESS_READ)
    try:
        first = read_header(mapped, 0)
    except CorruptFrameError as exc:
        _close_quietly(mapped)
        raise CorruptSegmentError(f"{name}: {exc}") from None
    if first.base_offset != base_offset:
        _close_quietly(mapped)
        raise CorruptSegmentError(
            f"{name}: first batch has base offset {first.base_offset}, not {base_offset}"
        )
    loaded = None
    if not verify_all:
        loaded = _load_checked(mapped, base_offset, size, index_path, time_path, interval)
    if loaded is None:
        try:
            loaded = _rebuild(mapped, base_offset, size, index_path, time_path, interval)
        except CorruptSegmentError as exc:
            _close_quietly(mapped)
            raise CorruptSegmentError(f"{name}: {exc}") from None
    offset_index, time_index, result, cursor = loaded
    segment = Segment(
        directory,
        base_offset,
        handle=handle,
        size=size,
        next_offset=result.next_offset,
        offset_index=offset_index,
        time_index=time_index,
        cursor=cursor,
        sealed=True,
        created_us=0,
    )
    segment.adopt_map(mapped, size)
    return segment


def _full_scan(
    mapped: mmap.mmap, base_offset: int, interval: int, stop: int | None = None
) -> tuple[ScanResult, IndexCursor, np.ndarray, np.ndarray]:
    cursor = IndexCursor(interval)
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []

    def on_frame(pos: int, header: BatchHeader) -> None:
        entry, time_entry = cursor.on_batch(
            header.base_offset - base_offset, pos, header.frame_length, header.max_timestamp
        )
        if entry is not None:
            offsets.append(entry)
        if time_entry is not None:
            times.append(time_entry)

    result = scan_frames(
        mapped, start=0, expected_offset=base_offset, verify=True, on_frame=on_frame, stop=stop
    )
    return result, cursor, np.array(offsets, OFFSET_ENTRY), np.array(times, TIME_ENTRY)


def _rebuild(
    mapped: mmap.mmap,
    base_offset: int,
    size: int,
    index_path: Path,
    time_path: Path,
    interval: int,
) -> tuple[IndexFile, IndexFile, ScanResult, IndexCursor]:
    result, cursor, offsets, times = _full_scan(mapped, base_offset, interval, size)
    if result.error is not None:
        raise CorruptSegmentError(result.error)
    closing = cursor.seal_entry()
    if closing is not None:
        times = np.append(times, np.array([closing], TIME_ENTRY))
    return (
        IndexFile.write(index_path, OFFSET_ENTRY, offsets, writable=False),
        IndexFile.write(time_path, TIME_ENTRY, times, writable=False),
        result,
        cursor,
    )


def _load_checked(
    mapped: mmap.mmap,
    base_offset: int,
    size: int,
    index_path: Path,
    time_path: Path,
    interval: int,
) -> tuple[IndexFile, IndexFile, ScanResult, IndexCursor] | None:
    try:
        offset_index = IndexFile.open_read_only(index_path, OFFSET_ENTRY)
    except (FileNotFoundError, ValueError) as exc:
        log.info("rebuilding the indexes of %s: %s", index_path.stem, exc)
        return None
    try:
        time_index = IndexFile.open_read_only(time_path, TIME_ENTRY)
    except (FileNotFoundError, ValueError) as exc:
        offset_index.close()
        log.info("rebuilding the indexes of %s: %s", index_path.stem, exc)
        return None
    problem = _offset_problem(mapped, offset_index.entries, size, base_offset)
    if problem is None:
        result, cursor = restore_cursor(
            mapped, base_offset, size, offset_index, time_index, interval, verify=True
        )
        problem = result.error
        if problem is None and time_index.count == 0 and offset_index.count > 0:
            problem = "the time index is empty"
        if problem is None:
            problem = time_index_problem(
                time_index.entries, cursor.last_rel, offset_index.entries["rel"]
            )
        if problem is None:
            return offset_index, time_index, result, cursor
    log.info("rebuilding the indexes of %s: %s", index_path.stem, problem)
    offset_index.close()
    time_index.close()
    return None


def _offset_problem(
    mapped: mmap.mmap, entries: np.ndarray, size: int, base_offset: int
) -> str | None:
    problem = offset_index_problem(entries, size, None, base_offset)
    if problem is not None or len(entries) == 0:
        return problem
    return offset_index_problem(entries, size, _bases_at(mapped, entries["pos"]), base_offset)


def _bases_at(mapped: mmap.mmap, positions: np.ndarray) -> np.ndarray:
    """The base offsets in the frame headers at ``positions`` (one gather, no loop)."""
    raw = np.frombuffer(mapped, dtype=np.uint8)
    at = positions.astype(np.int64)[:, None] + np.arange(BASE_OFFSET_AT, BASE_OFFSET_AT + 8)
    out = np.ascontiguousarray(raw[at]).view("<i8").reshape(-1)
    del raw
    return out


def _close_quietly(mapped: mmap.mmap) -> None:
    with contextlib.suppress(BufferError):  # a view is alive; the map goes when it does
        mapped.close()


def lock_directory(directory: Path) -> int:
    """Take the directory's ``.lock`` (flock) for this open log; return its descriptor.

    Raises:
        StorageError: another open log, in this process or another, holds it.
    """
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StorageError(f"{directory} is already open (its {LOCK_NAME} is held)") from None
    return fd


def remove_leftovers(directory: Path) -> None:
    """Delete what a crash can leave half-done: swap and temp files, orphan indexes."""
    for path in directory.iterdir():
        if not path.is_file():
            continue
        name = path.name
        orphan = name.endswith((INDEX_SUFFIX, TIMEINDEX_SUFFIX)) and not (
            path.with_suffix(LOG_SUFFIX).exists()
        )
        if name.endswith((SWAP_SUFFIX, ".tmp")) or orphan:
            path.unlink(missing_ok=True)


def open_segments(
    directory: Path, config: LogConfig, clock: Callable[[], int], initial_offset: int
) -> tuple[list[Segment], RecoveryReport]:
    """Open every segment of ``directory``: the last one active, the others sealed.

    A damaged sealed segment (or a gap between two segments) sets that segment and all
    later ones aside; the survivors are opened again, the last of them as the active
    segment. With no segment at all, an empty one starts at ``initial_offset``.
    """
    interval = config.index_interval_bytes
    bases = list_segment_bases(directory)
    segments: list[Segment] = []
    cut_tail = None
    for i, base in enumerate(bases):
        try:
            if i == len(bases) - 1:
                segment, cut_tail = open_active(directory, base, interval, clock())
            else:
                segment = open_sealed(
                    directory, base, interval, verify_all=config.recovery_scan == "all"
                )
            if segments and segments[-1].next_offset != segment.base_offset:
                segment.close()
                raise CorruptSegmentError(
                    f"{segment.path.name} starts at offset {segment.base_offset} but "
                    f"{segments[-1].path.name} ends at {segments[-1].next_offset}"
                )
        except CorruptSegmentError as exc:
            for opened in segments:
                opened.close()
            log.error("setting aside a damaged segment and all after it: %s", exc)
            moved = _set_aside(directory, bases[i:])
            # The survivors open again without the set-aside files; the last one is now
            # the active segment. With no survivor the log restarts at the damaged base.
            segments, report = open_segments(directory, config, clock, base)
            return segments, RecoveryReport(
                report.cut_tail, (exc, *report.corrupt_segments), moved + report.set_aside
            )
        segments.append(segment)
    if not segments:
        segments.append(Segment.create(directory, initial_offset, interval, clock()))
        fsync_dir(directory)
    return segments, RecoveryReport(cut_tail=cut_tail)


def _set_aside(directory: Path, bases: Sequence[int]) -> tuple[Path, ...]:
    moved = []
    for base in bases:
        for path in segment_paths(directory, base):
            if path.exists():
                target = path.with_name(path.name + CORRUPT_SUFFIX)
                os.replace(path, target)
                moved.append(target)
    fsync_dir(directory)
    return tuple(moved)
