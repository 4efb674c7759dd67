"""The retention policy (pure) and retention applied to a log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from spark_stream.errors import OffsetOutOfRangeError
from spu.storage import LogConfig, ReplicaLog
from spu.storage.retention import segments_to_delete
from spu.storage.segment import SegmentInfo

from .helpers import TS0, fill, make_frame, read_values

HOUR_US = 3600 * 1_000_000


def info(base: int, size: int, max_ts: int, sealed: bool = True) -> SegmentInfo:
    return SegmentInfo(base, base + 10, size, sealed, max_ts, Path(f"{base}.log"))


SEGMENTS = [
    info(0, 100, 1 * HOUR_US),
    info(10, 100, 2 * HOUR_US),
    info(20, 100, 3 * HOUR_US),
    info(30, 100, 4 * HOUR_US, sealed=False),
]


@pytest.mark.parametrize(
    "retention_ms, retention_bytes, hw, expected",
    [
        (None, None, 40, 0),
        (3600_000, None, 40, 2),  # older than 1 h at t=4h: the first two (max 1h, 2h)
        (None, 250, 40, 1),  # 400 bytes; without the first still >= 250
        (None, 0, 40, 3),  # never the active segment
        (None, 0, 15, 1),  # only segments ending at or below the hw
        (3600_000, 350, 40, 2),  # time deletes two, size alone one: a prefix of two
        (10 * 3600_000, None, 40, 0),
    ],
)
def test_segments_to_delete(
    retention_ms: int | None, retention_bytes: int | None, hw: int, expected: int
) -> None:
    assert (
        segments_to_delete(
            SEGMENTS,
            now_us=4 * HOUR_US,
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
            high_watermark=hw,
        )
        == expected
    )


def test_a_young_segment_stops_time_retention() -> None:
    segments = [info(0, 100, 5 * HOUR_US), info(10, 100, 1 * HOUR_US), info(20, 1, 0, False)]
    assert (
        segments_to_delete(
            segments,
            now_us=6 * HOUR_US,
            retention_ms=3600_000,
            retention_bytes=None,
            high_watermark=100,
        )
        == 0
    )


def test_retention_by_size_deletes_whole_oldest_segments(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log(
        LogConfig(
            segment_max_bytes=4096,
            index_interval_bytes=600,
            retention_bytes=10_000,
            retention_ms=None,
        )
    )
    expected = fill(log, 60)
    assert log.apply_retention() == []  # nothing is committed yet
    log.hw = log.leo
    before = log.segments
    removed = log.apply_retention()
    after = log.segments
    assert removed == before[: len(removed)] and removed
    assert log.size_bytes >= 10_000
    assert log.size_bytes - after[0].size < 10_000
    assert log.log_start_offset == after[0].base_offset == removed[-1].next_offset
    assert not any(s.path.exists() for s in removed)
    assert read_values(log) == {o: v for o, v in expected.items() if o >= log.log_start_offset}


def test_retention_by_time_uses_record_timestamps(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log(
        LogConfig(segment_max_bytes=4096, index_interval_bytes=600, retention_ms=3600_000)
    )
    for tag in range(30):
        log.append_produced(make_frame(tag, 5, ts=TS0 + tag * 10 * 60 * 1_000_000))
    log.hw = log.leo
    now = TS0 + 30 * 10 * 60 * 1_000_000  # the newest record is 10 minutes old
    removed = log.apply_retention(now)
    assert removed
    assert all(s.max_timestamp < now - 3600 * 1_000_000 for s in removed)
    kept = log.segments
    assert kept[0].max_timestamp >= now - 3600 * 1_000_000 or not kept[0].sealed
    assert kept[-1].sealed is False
    with pytest.raises(OffsetOutOfRangeError, match="outside the log"):
        log.read(0)


@pytest.mark.parametrize(
    "floor, expected",
    [
        (None, 3),  # not tiered: size 0 deletes every sealed segment
        (0, 0),  # tier holds nothing (or is not known yet): nothing goes
        (15, 1),  # the tier holds [.., 15): only the first segment (ends at 10)
        (20, 2),
        (40, 3),  # never the active segment
    ],
)
def test_a_tier_floor_holds_segments_back(floor: int | None, expected: int) -> None:
    count = segments_to_delete(
        SEGMENTS,
        now_us=4 * HOUR_US,
        retention_ms=None,
        retention_bytes=0,
        high_watermark=40,
        floor=floor,
    )
    assert count == expected
