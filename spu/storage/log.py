"""``ReplicaLog``: the append-only log of one partition replica, in its own directory.

Theory of operation. The log is a list of segments with contiguous offset ranges; the
last one is *active* (takes appends), the others are *sealed* (immutable, fsynced).

* **Append.** A leader appends producer batches with ``append_produced``: each frame is
  validated (header, crc, size, payload metadata) and gets the next base offset by
  rewriting the 8 header bytes outside the crc. A follower appends the leader's batches
  with ``append_replicated``: offsets are kept and must continue the log exactly, or
  ``LogGapError`` names the offsets. Before a batch that would overflow
  ``segment_max_bytes`` (or when the active segment is older than ``segment_max_age_ms``)
  the active segment is sealed (fsync) and a new one starts at the batch's offset.
* **Read.** ``read(offset, max_bytes, end_offset=...)`` returns whole frames of one
  segment as a ``LogSlice`` (a view of the memory-mapped file, never decoded), starting
  with the frame that holds ``offset``. Only frames ending at or before ``end_offset``
  are visible: pass ``log.hw`` for committed reads, nothing (LEO) for uncommitted ones.
  At least one visible frame is returned whatever ``max_bytes`` says, so a consumer
  never stalls on a large batch. A read stops at the end of a segment; read again from
  ``slice.next_offset``.
* **Offsets.** ``log_start_offset`` is the first segment's base, ``leo`` (log end
  offset) the active segment's next offset, ``hw`` the high watermark the owner sets; it
  is checkpointed in ``replication.chk`` on flush and close and clamped to
  ``[log_start_offset, leo]`` on open.
* **Truncation.** ``truncate_to(offset)`` cuts at a batch boundary at or below
  ``offset`` (a batch is never split: the new LEO is ``offset`` when a batch starts
  there, else the base of the batch holding it); ``reset(offset)`` empties the log and
  starts it again at ``offset`` (a follower that fell below the leader's log start).
* **Durability.** fsync after ``flush_bytes`` or ``flush_interval_ms`` (checked on
  append and by ``maybe_flush``), and always on roll and close. Recovery at open is in
  ``recovery.py``; a damaged sealed segment is set aside (renamed ``*.corrupt``) with all
  later segments, reported in ``recovery.corrupt_segments``, and the log opens up to it.
* **Damage.** A sealed segment that fails its checks later (bit rot, found by the SPU's
  scrub or a read) is recorded in ``damage``; ``cut_damage`` is a repair's first step:
  the log is cut at the damaged frame (every offset below it is intact) and the replica
  fetches the rest again from a healthy copy.

Concurrency. One writer (the replica's leader or follower controller) and any number of
readers, all on one asyncio event loop: every method is synchronous and never yields, so
each call sees and leaves a consistent log, and no lock is taken. A slice stays readable
after the call that made it (retention may unlink its segment; the slice keeps the map
and file open). fsync runs on the calling thread. A process-wide ``.lock`` (``flock``)
keeps a second opener, in this or another process, out of the directory. Segments close
their files when unused for a while or beyond a per-process bound and reopen them on
their next use (``open_files``), so an idle log holds only that lock open.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import pyarrow as pa

from spark_stream.errors import (
    CorruptSegmentError,
    InvalidRequestError,
    LogGapError,
    NotFoundError,
    OffsetOutOfRangeError,
    StorageError,
)
from spark_stream.frame_check import PayloadCheck
from spark_stream.records import RECORD_SCHEMA, now_us
from spu.storage._fileio import fsync_dir
from spu.storage.checkpoint import read_checkpoint, write_checkpoint
from spu.storage.config import MIB, LogConfig
from spu.storage.framing import BatchFrame, FramesInput, split_frames
from spu.storage.index import MAX_RELATIVE_OFFSET
from spu.storage.layout import (
    CHECKPOINT_NAME,
)
from spu.storage.recovery import (
    RecoveryReport,
    lock_directory,
    open_segments,
    remove_leftovers,
)
from spu.storage.retention import segments_to_delete
from spu.storage.scrub import Damage
from spu.storage.segment import Segment, SegmentInfo
from spu.storage.slices import LogSlice
from spu.storage.tier import write_parquet

__all__ = ["ReplicaLog", "DEFAULT_READ_BYTES"]

log = logging.getLogger(__name__)

DEFAULT_READ_BYTES = 1 * MIB


class ReplicaLog:
    """The segmented, indexed, append-only log of one partition replica."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        schema: pa.Schema,
        clock: Callable[[], int],
        lock_fd: int,
        segments: list[Segment],
        high_watermark: int,
        recovery: RecoveryReport,
    ) -> None:
        """Assemble an opened log; use ``ReplicaLog.open``."""
        self.directory = directory
        self.config = config
        self.schema = schema
        self.recovery = recovery
        self._clock = clock
        self._lock_fd = lock_fd
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._hw = high_watermark
        self._hw_dirty = False
        self._unflushed = 0
        self._last_flush_us = clock()
        self._closed = False
        self.damage: Damage | None = None
        """The first damaged frame found in a sealed segment and not cut away yet."""

    @classmethod
    def open(
        cls,
        directory: Path | str,
        config: LogConfig | None = None,
        *,
        schema: pa.Schema = RECORD_SCHEMA,
        clock: Callable[[], int] = now_us,
        initial_offset: int = 0,
    ) -> ReplicaLog:
        """Open (or create) the log in ``directory``, recovering it as needed.

        Args:
            directory: the replica's directory (see ``replica_dir``); created if missing.
            config: segment, retention and flush settings.
            schema: the topic's record schema (timestamp lookups and Parquet exports).
            clock: microseconds since the epoch; injectable for tests.
            initial_offset: base offset of a brand-new log.

        Raises:
            StorageError: another log holds the directory, or it cannot be used (an
                ``OSError`` of the file system, e.g. out of file descriptors, included).
        """
        config = config or LogConfig()
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            lock_fd = lock_directory(directory)
        except OSError as exc:
            raise StorageError(f"cannot open the log in {directory}: {exc}") from exc
        try:
            remove_leftovers(directory)
            segments, recovery = open_segments(directory, config, clock, initial_offset)
        except BaseException as exc:
            os.close(lock_fd)
            if isinstance(exc, OSError):  # e.g. out of file descriptors: one bad replica
                raise StorageError(f"cannot open the log in {directory}: {exc}") from exc
            raise
        try:
            checkpointed = read_checkpoint(directory / CHECKPOINT_NAME)
        except StorageError as exc:
            log.warning("ignoring the high-watermark checkpoint: %s", exc)
            checkpointed = None
        start, leo = segments[0].base_offset, segments[-1].next_offset
        hw = start if checkpointed is None else min(max(checkpointed, start), leo)
        return cls(directory, config, schema, clock, lock_fd, segments, hw, recovery)

    # -- offsets -------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first offset still in the log."""
        return self._segments[0].base_offset

    @property
    def leo(self) -> int:
        """The log end offset: the offset the next appended record gets."""
        return self._segments[-1].next_offset

    @property
    def hw(self) -> int:
        """The high watermark: offsets below it are committed (set by the owner)."""
        return self._hw

    @hw.setter
    def hw(self, value: int) -> None:
        if not self.log_start_offset <= value <= self.leo:
            raise OffsetOutOfRangeError(
                f"high watermark {value} is outside the log [{self.log_start_offset}, {self.leo}]"
            )
        if value != self._hw:
            self._hw, self._hw_dirty = value, True

    @property
    def active_base(self) -> int:
        """Base offset of the active segment: offsets below it are in sealed segments."""
        return self._bases[-1]

    @property
    def segments(self) -> list[SegmentInfo]:
        """Snapshots of the segments, oldest first (the last one is active)."""
        return [s.info() for s in self._segments]

    @property
    def size_bytes(self) -> int:
        """Bytes of all segment logs."""
        return sum(s.size for s in self._segments)

    @property
    def closed(self) -> bool:
        """True after ``close``."""
        return self._closed

    # -- appends -------------------------------------------------------------------------

    def append_produced(self, frames: FramesInput) -> list[int]:
        """Append producer batches, assigning their offsets (the leader's path).

        Args:
            frames: back-to-back frames in one buffer, or one frame per buffer.

        Returns:
            The base offset each batch was given.

        Raises:
            CorruptFrameError: a frame is torn or damaged; nothing was appended.
            RecordTooLargeError: a frame is over ``max_batch_bytes``; nothing was appended.
            StorageError: the write failed (batches before the failing write may remain).
        """
        batch = self._validate(frames)
        bases, next_offset = [], self.leo
        for frame in batch:
            bases.append(next_offset)
            next_offset += frame.header.record_count
        self._write(batch, bases)
        return bases

    def append_replicated(self, frames: FramesInput) -> list[int]:
        """Append batches fetched from the leader, keeping their offsets (the follower's).

        Frames are checked whole and by crc, not by payload: the leader checked each
        payload before appending it (``check_payload``), and a follower refusing what its
        leader holds would only fall out of sync.

        Returns:
            The batches' base offsets.

        Raises:
            LogGapError: a batch does not start where the log (or the batch before it)
                ends; the message names both offsets. Nothing was appended.
            CorruptFrameError, RecordTooLargeError, StorageError: as ``append_produced``.
        """
        batch = self._validate(frames, check="none")
        expected = self.leo
        for frame in batch:
            base = frame.header.base_offset
            if base != expected:
                kind = "gap" if base > expected else "overlap"
                raise LogGapError(
                    f"{kind}: batch starts at offset {base} but the log expects {expected}"
                )
            expected = frame.header.next_offset
        bases = [f.header.base_offset for f in batch]
        self._write(batch, bases)
        return bases

    # -- reads ---------------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int = DEFAULT_READ_BYTES, *, end_offset: int | None = None
    ) -> LogSlice:
        """Whole frames from the one holding ``offset``, within one segment.

        Args:
            offset: first offset wanted (``log_start_offset <= offset <= leo``).
            max_bytes: byte budget; exceeded only to return one frame that is larger.
            end_offset: exclusive visibility bound (``hw`` for committed reads); defaults
                to, and is capped at, the LEO.

        Raises:
            OffsetOutOfRangeError: ``offset`` is below the log start or past the LEO.
        """
        self._check_open()
        start, leo = self.log_start_offset, self.leo
        if not start <= offset <= leo:
            raise OffsetOutOfRangeError(f"offset {offset} is outside the log [{start}, {leo}]")
        end = leo if end_offset is None else min(end_offset, leo)
        if offset >= end:
            return LogSlice.empty(offset)
        return self._segment_for(offset).read(offset, max_bytes, end)

    def offset_for_timestamp(self, ts_us: int, *, end_offset: int | None = None) -> int | None:
        """The first offset whose record timestamp is ``>= ts_us``, or ``None``.

        Args:
            ts_us: microseconds since the epoch.
            end_offset: only look below this offset (``hw`` for committed); default LEO.
        """
        self._check_open()
        end = self.leo if end_offset is None else min(end_offset, self.leo)
        for segment in self._segments:
            if segment.base_offset >= end:
                break
            if segment.is_empty or segment.max_timestamp < ts_us:
                continue
            hit = segment.find_timestamp(ts_us, end, self.schema)
            if hit is not None:
                return hit
        return None

    # -- truncation and retention --------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Cut the log at the batch boundary at or below ``offset`` (a diverged follower).

        Returns:
            The new LEO (``offset`` when a batch starts there, else the base offset of the
            batch holding ``offset``; unchanged when ``offset >= leo``). At or below the
            log start, the log is emptied and starts again at ``offset``.
        """
        self._check_open()
        if offset >= self.leo:
            return self.leo
        if offset <= self.log_start_offset:
            self.reset(offset)
            return self.leo
        i = bisect_right(self._bases, offset) - 1
        for segment in self._segments[i + 1 :]:
            segment.delete()
        del self._segments[i + 1 :], self._bases[i + 1 :]
        self._segments[i].truncate(offset, self._clock())
        fsync_dir(self.directory)
        self._unflushed = 0
        if self._hw > self.leo:
            self._hw, self._hw_dirty = self.leo, True
        self.checkpoint()
        return self.leo

    def cut_damage(self) -> int | None:
        """Cut the log at its recorded ``damage`` and forget it (a repair's first step).

        The cut is at the damaged frame; when the walk to it fails (the damage hit a frame
        header), at the start of the damaged segment.

        Returns:
            The new LEO, or ``None`` when no damage was recorded.
        """
        damage = self.damage
        if damage is None:
            return None
        try:
            self.truncate_to(damage.offset)
        except CorruptSegmentError:
            self.truncate_to(damage.segment)
        self.damage = None
        return self.leo

    def reset(self, offset: int) -> None:
        """Delete every segment and start an empty log at ``offset``."""
        self._check_open()
        if offset < 0:
            raise InvalidRequestError(f"offset {offset} is negative")
        for segment in self._segments:
            segment.delete()
        interval = self.config.index_interval_bytes
        self._segments = [Segment.create(self.directory, offset, interval, self._clock())]
        self._bases = [offset]
        fsync_dir(self.directory)
        self._unflushed = 0
        self._hw, self._hw_dirty = offset, True
        self.checkpoint()

    def apply_retention(
        self, now: int | None = None, floor: int | None = None
    ) -> list[SegmentInfo]:
        """Delete the oldest sealed segments the retention policy no longer keeps.

        Args:
            now: microseconds since the epoch; defaults to the clock.
            floor: keep every segment reaching past this offset (a tiered partition's
                tier end: nothing is deleted before its tier copy is recorded).

        Returns:
            The deleted segments.
        """
        self._check_open()
        count = segments_to_delete(
            self.segments,
            now_us=self._clock() if now is None else now,
            retention_ms=self.config.retention_ms,
            retention_bytes=self.config.retention_bytes,
            high_watermark=self._hw,
            floor=floor,
        )
        removed = [s.info() for s in self._segments[:count]]
        for segment in self._segments[:count]:
            segment.delete()
        del self._segments[:count], self._bases[:count]
        if count:
            fsync_dir(self.directory)
            log.info("retention deleted %d segments below offset %d", count, self.log_start_offset)
        return removed

    # -- durability ----------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the active segment and checkpoint the high watermark if it changed."""
        self._check_open()
        self._segments[-1].flush()
        self._unflushed = 0
        self._last_flush_us = self._clock()
        if self._hw_dirty:
            self.checkpoint()

    def maybe_flush(self) -> bool:
        """Flush if the flush policy says so (call it on a timer); True if it flushed."""
        self._check_open()
        if self._flush_due(self._clock()):
            self.flush()
            return True
        return False

    def checkpoint(self) -> None:
        """Write the high watermark to ``replication.chk``."""
        write_checkpoint(self.directory / CHECKPOINT_NAME, self._hw)
        self._hw_dirty = False

    def export_parquet(self, base_offset: int, tier_url: str | Path | None = None) -> str:
        """Write the sealed segment at ``base_offset`` as Parquet into the tier directory.

        Args:
            base_offset: which segment.
            tier_url: fsspec URL or local path; defaults to ``config.tier_url``, then to
                ``tier/`` in the replica directory.

        Returns:
            The written file's URL.

        Raises:
            NotFoundError: no segment starts at ``base_offset``.
            InvalidRequestError: the segment is the active one.
        """
        self._check_open()
        i = bisect_right(self._bases, base_offset) - 1
        if i < 0 or self._bases[i] != base_offset:
            raise NotFoundError(f"no segment starts at offset {base_offset}")
        segment = self._segments[i]
        if not segment.sealed:
            raise InvalidRequestError(f"{segment.path.name} is active; only sealed ones export")
        url = tier_url or self.config.tier_url or self.directory / "tier"
        return write_parquet(
            segment.frames_view(),
            base_offset=base_offset,
            next_offset=segment.next_offset,
            schema=self.schema,
            tier_url=url,
        )

    def close(self) -> None:
        """Flush, checkpoint, trim the active indexes, close files and release the lock."""
        if self._closed:
            return
        try:
            self._segments[-1].flush()
            self.checkpoint()
        finally:
            for segment in self._segments:
                segment.close()
            os.close(self._lock_fd)
            self._closed = True

    def __enter__(self) -> ReplicaLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"the log in {self.directory} is closed")

    def _validate(self, frames: FramesInput, check: PayloadCheck | None = None) -> list[BatchFrame]:
        self._check_open()
        return split_frames(
            frames,
            max_frame_bytes=self.config.max_batch_bytes,
            schema=self.schema,
            check=self.config.check_payload if check is None else check,
        )

    def _segment_for(self, offset: int) -> Segment:
        return self._segments[bisect_right(self._bases, offset) - 1]

    def _write(self, frames: Sequence[BatchFrame], bases: Sequence[int]) -> None:
        now = self._clock()
        active = self._segments[-1]
        first, pending = 0, 0
        for k, frame in enumerate(frames):
            if self._should_roll(active, active.size + pending, frame, bases[k], now):
                if pending:
                    active.append(frames[first:k], bases[first:k])
                active = self._roll(bases[k], now)
                first, pending = k, 0
                self._unflushed = 0
            pending += frame.header.frame_length
        active.append(frames[first:], bases[first:])
        self._unflushed += pending
        if self._flush_due(now):
            self.flush()

    def _should_roll(
        self, active: Segment, size: int, frame: BatchFrame, base: int, now: int
    ) -> bool:
        if size == 0:
            return False
        config = self.config
        if size + frame.header.frame_length > config.segment_max_bytes:
            return True
        if base - active.base_offset > MAX_RELATIVE_OFFSET:
            return True
        age = config.segment_max_age_ms
        return age is not None and now - active.created_us >= age * 1000

    def _roll(self, base_offset: int, now: int) -> Segment:
        self._segments[-1].seal()
        segment = Segment.create(self.directory, base_offset, self.config.index_interval_bytes, now)
        fsync_dir(self.directory)
        self._segments.append(segment)
        self._bases.append(base_offset)
        return segment

    def _flush_due(self, now: int) -> bool:
        if self._unflushed == 0:
            return False
        config = self.config
        if config.flush_bytes is not None and self._unflushed >= config.flush_bytes:
            return True
        interval = config.flush_interval_ms
        return interval is not None and now - self._last_flush_us >= interval * 1000
