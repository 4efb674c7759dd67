"""Scrub planning and checking, pure: what to read next, how fast, and what is damaged.

Theory of operation. A sealed segment never changes after its roll (fsync), so a frame
that fails its crc later is bit rot (or a stray write). The SPU's scrubber
(``spu.scrubber``) re-reads every sealed segment of every replica it holds, oldest first,
in chunks, and checks each frame as recovery would (header, crc, contiguous offsets,
the segment ending exactly where the next one starts):

- ``plan_scrub`` picks the sealed segments not verified yet (a segment is known by its
  base offset and size, so a segment cut and written again is checked again); once all
  are verified a new pass starts after a pause (the scrubber's business);
- ``check_chunk`` walks the complete frames of a buffer and says how many bytes it
  consumed, the next expected offset, and the damage if a complete frame is bad; a frame
  cut by the end of the buffer waits for the next chunk; ``finish`` checks the end;
- ``RateLimiter`` is a token bucket in bytes: it says how long to wait before reading
  a chunk so the scrub stays under its MB/s budget, whatever the disk could do.

The first damaged offset is where a repair cuts the log: every frame below it is intact.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from spark_stream.errors import CorruptFrameError, InvalidRequestError
from spark_stream.records import BATCH_HEADER_SIZE, read_header, verify_frame
from spu.storage.segment import SegmentInfo

__all__ = [
    "ChunkResult",
    "Damage",
    "RateLimiter",
    "SegmentKey",
    "check_chunk",
    "finish",
    "plan_scrub",
]

Buffer = bytes | bytearray | memoryview
SegmentKey = tuple[int, int]
"""A sealed segment as the scrub knows it: ``(base_offset, size)``."""


@dataclass(frozen=True, slots=True)
class Damage:
    """A frame of a sealed segment that does not check.

    Attributes:
        segment: base offset of the segment.
        offset: the offset the bad frame should start at (every offset below is intact).
        end_offset: where the segment ends (the next segment's base).
        position: byte position of the bad frame in the segment's log.
        reason: what is wrong, as the checks say it.
    """

    segment: int
    offset: int
    end_offset: int
    position: int
    reason: str

    def describe(self) -> str:
        """One line for logs and the replica status."""
        return (
            f"offsets [{self.offset}, {self.end_offset}) of segment {self.segment}: "
            f"{self.reason} (byte {self.position})"
        )


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """What ``check_chunk`` found.

    Attributes:
        consumed: bytes of whole, good frames from the start of the buffer.
        next_offset: the offset the next frame must start at.
        error: why a complete frame is bad (``None``: all complete frames are good).
    """

    consumed: int
    next_offset: int
    error: str | None = None


def check_chunk(buf: Buffer, expected_offset: int) -> ChunkResult:
    """Check the complete frames at the start of ``buf``; stop at a cut or a bad one.

    Args:
        buf: bytes from a frame boundary of a segment log.
        expected_offset: the base offset the first frame must have.
    """
    view = memoryview(buf)
    pos, expected = 0, expected_offset
    while len(view) - pos >= BATCH_HEADER_SIZE:
        try:
            header = read_header(view, pos)
        except CorruptFrameError as exc:
            return ChunkResult(pos, expected, str(exc))
        if pos + header.frame_length > len(view):
            break  # the rest of the frame is in the next chunk
        try:
            verify_frame(view, pos)
        except CorruptFrameError as exc:
            return ChunkResult(pos, expected, str(exc))
        if header.base_offset != expected:
            return ChunkResult(
                pos, expected, f"frame has base offset {header.base_offset}, expected {expected}"
            )
        pos += header.frame_length
        expected = header.next_offset
    return ChunkResult(pos, expected)


def finish(leftover: int, next_offset: int, end_offset: int) -> str | None:
    """Why a fully read segment is damaged at its end, or ``None`` when it is not.

    Args:
        leftover: bytes after the last whole frame.
        next_offset: the offset after the last whole frame.
        end_offset: where the segment must end (the next segment's base offset).
    """
    if leftover:
        return f"a torn frame of {leftover} bytes ends the segment"
    if next_offset != end_offset:
        return f"the frames end at offset {next_offset}, the next segment starts at {end_offset}"
    return None


def plan_scrub(segments: Sequence[SegmentInfo], verified: Collection[SegmentKey]) -> list[int]:
    """Base offsets of the sealed segments to check, oldest first.

    Args:
        segments: the log's segments, oldest first (the active one, last, is skipped:
            it is still written and recovery checks it at open).
        verified: segments already checked in this pass.
    """
    return [
        s.base_offset
        for s in segments
        if s.sealed and s.size and (s.base_offset, s.size) not in verified
    ]


class RateLimiter:
    """A token bucket in bytes: at most ``bytes_per_s`` on average, ``burst`` at once.

    Pure: the caller passes the clock (seconds) and sleeps for the returned delay.

    Args:
        bytes_per_s: the budget.
        burst: bytes that may be read at once after an idle spell (default one second's).

    Raises:
        InvalidRequestError: a budget that is not positive.
    """

    def __init__(self, bytes_per_s: float, burst: float | None = None) -> None:
        if bytes_per_s <= 0:
            raise InvalidRequestError(f"a scrub rate must be > 0 bytes/s, got {bytes_per_s}")
        self.rate = float(bytes_per_s)
        self.burst = float(bytes_per_s if burst is None else burst)
        self._tokens = self.burst
        self._at: float | None = None

    def reserve(self, nbytes: int, now: float) -> float:
        """Take ``nbytes`` from the bucket; returns the seconds to wait before using them.

        A request larger than the burst is allowed: it leaves the bucket in debt, which
        later requests wait out.
        """
        if self._at is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        self._tokens -= nbytes
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate
