"""Scrub planning and checks (``spu.storage.scrub``), the segment reader, and the cut."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from spark_stream.errors import InvalidRequestError
from spark_stream.records import BATCH_HEADER_SIZE
from spu.scrubber import scrub_segment
from spu.storage import ReplicaLog
from spu.storage.framing import BASE_OFFSET_AT
from spu.storage.scrub import (
    ChunkResult,
    RateLimiter,
    check_chunk,
    finish,
    plan_scrub,
)
from spu.storage.segment import SegmentInfo
from tests.spu.storage.helpers import fill, make_frame, read_values

# --- the rate limiter --------------------------------------------------------------------

LIMITER_ROWS = [
    # (case, rate B/s, burst, [(bytes, now)], expected delays)
    ("within the burst: no wait", 100, 100, [(60, 0.0), (40, 0.0)], [0.0, 0.0]),
    ("over the burst: wait out the debt", 100, 100, [(100, 0.0), (50, 0.0)], [0.0, 0.5]),
    ("tokens refill with time", 100, 100, [(100, 0.0), (50, 0.5)], [0.0, 0.0]),
    ("refill stops at the burst", 100, 100, [(10, 0.0), (150, 60.0)], [0.0, 0.5]),
    ("a chunk larger than the burst waits its own share", 100, 50, [(250, 0.0)], [2.0]),
    ("a steady reader gets the rate", 1000, 1000,
     [(1000, 0.0), (1000, 0.0), (1000, 1.0), (1000, 2.0)], [0.0, 1.0, 1.0, 1.0]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rate", "burst", "calls", "delays"),
    [row[1:] for row in LIMITER_ROWS],
    ids=[row[0] for row in LIMITER_ROWS],
)
def test_rate_limiter(
    rate: float, burst: float, calls: list[tuple[int, float]], delays: list[float]
) -> None:
    limiter = RateLimiter(rate, burst)
    assert [limiter.reserve(n, now) for n, now in calls] == pytest.approx(delays)


@pytest.mark.parametrize("rate", [0, -1.5])
def test_rate_limiter_refuses_a_budget_that_is_not_positive(rate: float) -> None:
    with pytest.raises(InvalidRequestError, match="scrub rate"):
        RateLimiter(rate)


# --- planning ------------------------------------------------------------------------------


def _seg(base: int, size: int, sealed: bool = True) -> SegmentInfo:
    return SegmentInfo(base, base + 10, size, sealed, 0, Path(f"{base:020}.log"))


PLAN_ROWS = [
    # (case, segments, verified, expected bases)
    ("sealed ones, oldest first; the active one never",
     [_seg(0, 100), _seg(10, 100), _seg(20, 50, sealed=False)], set(), [0, 10]),
    ("verified ones are skipped", [_seg(0, 100), _seg(10, 100), _seg(20, 5, False)],
     {(0, 100)}, [10]),
    ("a segment cut since its check is checked again", [_seg(0, 60), _seg(10, 5, False)],
     {(0, 100)}, [0]),
    ("empty sealed segments hold nothing to check", [_seg(0, 0), _seg(0, 5, False)], set(), []),
    ("all verified: nothing", [_seg(0, 100), _seg(10, 5, False)], {(0, 100)}, []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("segments", "verified", "expected"),
    [row[1:] for row in PLAN_ROWS],
    ids=[row[0] for row in PLAN_ROWS],
)
def test_plan_scrub(
    segments: list[SegmentInfo], verified: set[tuple[int, int]], expected: list[int]
) -> None:
    assert plan_scrub(segments, verified) == expected


# --- frame checks ------------------------------------------------------------------------

A = make_frame(1, 3, base_offset=0)  # offsets 0..2
B = make_frame(2, 4, base_offset=3)  # offsets 3..6


def _flip(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at] ^= 0x20
    return bytes(out)


def _with_base(frame: bytes, base: int) -> bytes:
    out = bytearray(frame)
    out[BASE_OFFSET_AT : BASE_OFFSET_AT + 8] = base.to_bytes(8, "little")
    return bytes(out)


CHUNK_ROWS = [
    # (case, buffer, expected offset, consumed, next offset, error contains)
    ("two good frames", A + B, 0, len(A + B), 7, None),
    ("a frame cut by the chunk's end waits", A + B[:-5], 0, len(A), 3, None),
    ("a header cut by the chunk's end waits", A + B[:10], 0, len(A), 3, None),
    ("a flipped payload byte", A + _flip(B, BATCH_HEADER_SIZE + 30), 0, len(A), 3, "crc"),
    ("a flipped crc-covered header byte", _flip(A, 40) + B, 0, 0, 0, "crc"),
    ("a base offset out of sequence", A + _with_base(B, 9), 0, len(A), 3, "base offset 9"),
    ("garbage where a header should be", A + b"\xff" * 80, 0, len(A), 3, "magic"),
    ("empty", b"", 5, 0, 5, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("buf", "expected", "consumed", "next_offset", "error"),
    [row[1:] for row in CHUNK_ROWS],
    ids=[row[0] for row in CHUNK_ROWS],
)
def test_check_chunk(
    buf: bytes, expected: int, consumed: int, next_offset: int, error: str | None
) -> None:
    result = check_chunk(buf, expected)
    assert (result.consumed, result.next_offset) == (consumed, next_offset)
    if error is None:
        assert result == ChunkResult(consumed, next_offset)
    else:
        assert result.error is not None and error in result.error


FINISH_ROWS = [
    # (case, leftover, next offset, end offset, error contains)
    ("ends where the next segment starts", 0, 7, 7, None),
    ("a torn frame at the end", 12, 7, 7, "torn frame of 12 bytes"),
    ("frames missing at the end", 0, 5, 7, "end at offset 5, the next segment starts at 7"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("leftover", "next_offset", "end_offset", "error"),
    [row[1:] for row in FINISH_ROWS],
    ids=[row[0] for row in FINISH_ROWS],
)
def test_finish(leftover: int, next_offset: int, end_offset: int, error: str | None) -> None:
    got = finish(leftover, next_offset, end_offset)
    assert got is None if error is None else (got is not None and error in got)


# --- a real segment ------------------------------------------------------------------------


def _sealed(log: ReplicaLog) -> list[SegmentInfo]:
    segments = log.segments
    assert len(segments) >= 3
    return segments


def _flip_file(path: Path, at: int) -> None:
    with path.open("r+b") as out:
        out.seek(at)
        byte = out.read(1)
        out.seek(at)
        out.write(bytes([byte[0] ^ 0x01]))


def test_scrub_segment_passes_intact_segments_and_names_a_flipped_byte(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log()
    fill(log, 30, per_batch=5, size=40)
    segments = _sealed(log)
    first, second = segments[0], segments[1]
    limiter = RateLimiter(1 << 30)
    for s, nxt in zip(segments, segments[1:], strict=False):
        assert (
            scrub_segment(s.path, s.base_offset, nxt.base_offset, limiter, chunk_bytes=700) is None
        )
    frame = log.read(second.base_offset + 5, 1)  # the segment's second frame
    _flip_file(second.path, frame.position + BATCH_HEADER_SIZE + 3)
    damage = scrub_segment(second.path, second.base_offset, segments[2].base_offset, limiter)
    assert damage is not None
    assert (damage.segment, damage.offset, damage.position) == (
        second.base_offset,
        second.base_offset + 5,
        frame.position,
    )
    assert damage.end_offset == segments[2].base_offset and "crc" in damage.reason
    assert scrub_segment(first.path, 0, second.base_offset, limiter, chunk_bytes=100) is None


def test_scrub_segment_waits_as_the_limiter_says(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    fill(log, 30, per_batch=5, size=40)
    s, nxt = _sealed(log)[:2]
    slept: list[float] = []
    limiter = RateLimiter(1000, burst=1000)
    assert (
        scrub_segment(
            s.path,
            s.base_offset,
            nxt.base_offset,
            limiter,
            chunk_bytes=1000,
            clock=lambda: 0.0,
            sleep=slept.append,
        )
        is None
    )
    # Every chunk (the empty read at the end too) takes 1000 bytes: 1 s each past the burst.
    assert slept == pytest.approx([float(i) for i in range(1, len(slept) + 1)])
    assert len(slept) == -(-s.size // 1000)


def test_scrub_segment_of_a_deleted_file_finds_nothing(tmp_path: Path) -> None:
    assert scrub_segment(tmp_path / "gone.log", 0, 10, RateLimiter(1000)) is None


def test_cut_damage_cuts_at_the_damaged_frame_and_refills(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log()
    expected = fill(log, 30, per_batch=5, size=40)
    segments = _sealed(log)
    second = segments[1]
    frame = log.read(second.base_offset + 5, 1)
    _flip_file(second.path, frame.position + BATCH_HEADER_SIZE + 3)
    damage = scrub_segment(
        second.path, second.base_offset, segments[2].base_offset, RateLimiter(1 << 30)
    )
    assert damage is not None
    assert log.cut_damage() is None  # nothing recorded yet
    log.damage = damage
    assert log.cut_damage() == second.base_offset + 5
    assert log.damage is None and log.leo == second.base_offset + 5
    assert read_values(log) == {o: v for o, v in expected.items() if o < log.leo}
