"""ReplicaLog: appends, reads, offsets, rolls, truncation, flush policy and reattachment."""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_stream.errors import (
    CorruptFrameError,
    InvalidRequestError,
    LogGapError,
    NotFoundError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StorageError,
)
from spark_stream.records import read_header, with_base_offset
from spu.storage import LogConfig, ReplicaLog, ReplicaStorage, replica_dir

from .helpers import TS0, fill, make_frame, read_values, values_for


def test_produced_batches_get_consecutive_offsets(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    assert isinstance(log, ReplicaStorage)
    assert (log.log_start_offset, log.leo, log.hw) == (0, 0, 0)
    assert log.append_produced(make_frame(0, 3, base_offset=999)) == [0]
    assert log.append_produced([make_frame(1, 2), make_frame(2, 4)]) == [3, 5]
    assert log.append_produced(make_frame(3, 1) + make_frame(4, 1)) == [9, 10]
    assert log.leo == 11
    first = log.read(0, 1)
    assert read_header(first.data).base_offset == 0  # the producer's 999 was rewritten
    assert read_values(log) == {
        **{i: v for i, v in enumerate(values_for(0, 3))},
        3: values_for(1, 2)[0],
        4: values_for(1, 2)[1],
        **{5 + i: v for i, v in enumerate(values_for(2, 4))},
        9: values_for(3, 1)[0],
        10: values_for(4, 1)[0],
    }


def test_a_bad_frame_rejects_the_whole_append(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log(LogConfig(max_batch_bytes=4096))
    good, bad = make_frame(0, 3), bytearray(make_frame(1, 3))
    bad[-3] ^= 0xFF
    with pytest.raises(CorruptFrameError):
        log.append_produced([good, bytes(bad)])
    with pytest.raises(RecordTooLargeError, match="over the 4096-byte limit"):
        log.append_produced([good, make_frame(2, 500, size=10)])
    assert log.leo == 0 and log.size_bytes == 0


def test_replicated_batches_keep_offsets_and_reject_gaps_and_overlaps(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log()
    a = with_base_offset(make_frame(0, 3), 0)
    b = with_base_offset(make_frame(1, 4), 3)
    assert log.append_replicated(a + b) == [0, 3]
    with pytest.raises(LogGapError, match="gap: batch starts at offset 9 but the log expects 7"):
        log.append_replicated(with_base_offset(make_frame(2, 1), 9))
    with pytest.raises(LogGapError, match="overlap: batch starts at offset 5 but .* expects 7"):
        log.append_replicated(with_base_offset(make_frame(2, 1), 5))
    c = with_base_offset(make_frame(2, 2), 7)
    d = with_base_offset(make_frame(3, 2), 10)  # a gap inside one append
    with pytest.raises(LogGapError, match="expects 9"):
        log.append_replicated([c, d])
    assert log.leo == 7


def test_a_leader_slice_replicates_byte_for_byte(tmp_path: Path, small_config: LogConfig) -> None:
    with (
        ReplicaLog.open(tmp_path / "leader", small_config) as leader,
        ReplicaLog.open(tmp_path / "follower", small_config) as follower,
    ):
        fill(leader, 30)
        while follower.leo < leader.leo:
            follower.append_replicated(leader.read(follower.leo, 2000).data)
        assert read_values(follower) == read_values(leader)
        assert [s.base_offset for s in follower.segments] == [
            s.base_offset for s in leader.segments
        ]


def test_reads_return_whole_frames_within_the_budget(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log(LogConfig(segment_max_bytes=1 << 20, index_interval_bytes=0))
    fill(log, 10, per_batch=10)  # batches [0,10) [10,20) ...
    frame_len = len(log.read(0, 1).data)
    one = log.read(15, 1)  # budget below one frame: still one frame
    assert (one.base_offset, one.next_offset, one.offset) == (10, 20, 15)
    two = log.read(15, 2 * frame_len + frame_len // 2)
    assert (two.base_offset, two.next_offset) == (10, 30)
    assert [h.base_offset for h, _ in two.frames()] == [10, 20]
    everything = log.read(0, 1 << 30)
    assert (everything.base_offset, everything.next_offset) == (0, 100)


def test_end_offset_bounds_what_is_visible(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log(LogConfig(segment_max_bytes=1 << 20, index_interval_bytes=0))
    fill(log, 5, per_batch=10)
    log.hw = 30
    committed = log.read(0, 1 << 20, end_offset=log.hw)
    assert committed.next_offset == 30
    assert log.read(30, 1 << 20, end_offset=log.hw).length == 0
    assert log.read(35, 1 << 20, end_offset=35).length == 0  # inside a batch: not visible
    assert log.read(20, 1 << 20, end_offset=35).next_offset == 30
    assert log.read(30).next_offset == 50  # uncommitted: up to LEO
    assert log.read(50).length == 0  # at LEO: empty, no error


@pytest.mark.parametrize("offset", [-1, 51])
def test_offsets_outside_the_log_raise(open_log: Callable[..., ReplicaLog], offset: int) -> None:
    log = open_log()
    fill(log, 5, per_batch=10)
    with pytest.raises(OffsetOutOfRangeError, match=f"offset {offset} is outside the log"):
        log.read(offset)


def test_a_read_stays_in_one_segment(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    fill(log, 40)
    segments = log.segments
    assert len(segments) > 3
    piece = log.read(0, 1 << 30)
    assert piece.next_offset == segments[1].base_offset
    assert log.read(piece.next_offset, 1 << 30).base_offset == segments[1].base_offset


def test_segments_roll_by_size(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    expected = fill(log, 60)
    segments = log.segments
    assert len(segments) > 5
    assert all(s.size <= 4096 for s in segments)
    assert all(s.sealed for s in segments[:-1]) and not segments[-1].sealed
    for earlier, later in zip(segments, segments[1:], strict=False):
        assert earlier.next_offset == later.base_offset
        assert later.path.name == f"{later.base_offset:020d}.log"
    assert read_values(log) == expected


def test_a_batch_larger_than_a_segment_gets_its_own(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log(LogConfig(segment_max_bytes=2000, max_batch_bytes=1 << 20))
    fill(log, 1)
    log.append_produced(make_frame(1, 100, size=100))
    fill(log, 1, first_tag=2)
    sizes = [s.size for s in log.segments]
    assert len(sizes) == 3 and sizes[1] > 2000


def test_segments_roll_by_age(open_log: Callable[..., ReplicaLog]) -> None:
    now = [TS0]
    log = open_log(LogConfig(segment_max_age_ms=60_000), clock=lambda: now[0])
    fill(log, 3)
    assert len(log.segments) == 1
    now[0] += 59_000_000
    fill(log, 1, first_tag=3)
    assert len(log.segments) == 1
    now[0] += 2_000_000
    fill(log, 1, first_tag=4)
    assert [s.base_offset for s in log.segments] == [0, 20]


def test_high_watermark_is_checked_checkpointed_and_clamped(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 4)
    with pytest.raises(OffsetOutOfRangeError, match="high watermark 21"):
        log.hw = 21
    log.hw = 15
    log.flush()
    assert (tmp_path / "replica" / "replication.chk").read_text().endswith(" 15\n")
    log.close()
    assert open_log().hw == 15


def test_checkpointed_high_watermark_above_the_leo_is_clamped(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 4)
    log.hw = 20
    log.close()
    # Lose the tail (as if the last batches never reached the disk): HW must follow.
    path = log.segments[-1].path
    os.truncate(path, path.stat().st_size - 10)
    again = open_log()
    assert again.leo == 15 and again.hw == 15


def test_truncate_to_a_batch_boundary_or_below(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    expected = fill(log, 60)
    log.hw = log.leo
    boundary = log.segments[3].base_offset + 5  # batches hold 5 records
    assert log.truncate_to(boundary) == boundary
    assert log.truncate_to(boundary - 2) == boundary - 5  # inside a batch: its base
    leo = log.leo
    assert log.hw == leo
    assert len(log.segments) == 4 and not log.segments[-1].sealed
    assert read_values(log) == {o: v for o, v in expected.items() if o < leo}
    more = fill(log, 3, first_tag=100)
    assert min(more) == leo
    assert read_values(log) == {**{o: v for o, v in expected.items() if o < leo}, **more}
    assert log.truncate_to(10**6) == log.leo


def test_truncate_at_or_below_the_log_start_empties_the_log(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log()
    fill(log, 10)
    assert log.truncate_to(0) == 0
    assert (log.log_start_offset, log.leo, log.hw, len(log.segments)) == (0, 0, 0, 1)
    log.reset(500)
    assert (log.log_start_offset, log.leo) == (500, 500)
    assert fill(log, 1) == {500 + i: v for i, v in enumerate(values_for(0, 5))}
    with pytest.raises(InvalidRequestError):
        log.reset(-1)


def test_truncate_under_a_live_slice_keeps_the_slice_readable(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log(LogConfig(segment_max_bytes=1 << 20))
    fill(log, 10)
    piece = log.read(20, 1 << 20)
    before = bytes(piece.data)
    assert log.truncate_to(25) == 25
    fill(log, 5, first_tag=50, size=200)  # overwrite the cut region with other bytes
    assert bytes(piece.data) == before
    assert piece.decode()[0].column("value")[0].as_py() == values_for(4, 5)[0]
    assert read_values(log, 25, 30) == dict(zip(range(25, 30), values_for(50, 5, 200), strict=True))
    assert not any(p.name.endswith(".swap") for p in log.directory.iterdir())


def test_flush_policy_by_bytes_and_interval(
    open_log: Callable[..., ReplicaLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (syncs.append(fd), real(fd))[1])
    now = [TS0]
    frame_len = len(make_frame(0, 5))
    log = open_log(
        LogConfig(flush_bytes=3 * frame_len, flush_interval_ms=1000), clock=lambda: now[0]
    )
    fill(log, 2)
    assert syncs == []
    fill(log, 1, first_tag=2)  # 3 frames: the byte limit
    assert len(syncs) == 1
    fill(log, 1, first_tag=3)
    assert len(syncs) == 1 and not log.maybe_flush()
    now[0] += 1_000_000
    assert log.maybe_flush() and len(syncs) == 2
    assert not log.maybe_flush()  # nothing new to flush
    now[0] += 1_000_000
    fill(log, 1, first_tag=4)  # the interval passed: this append flushes
    assert len(syncs) == 3


def test_roll_and_close_always_fsync(
    open_log: Callable[..., ReplicaLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (syncs.append(fd), real(fd))[1])
    log = open_log(LogConfig(segment_max_bytes=4096, flush_interval_ms=None))
    fill(log, 12)
    rolls = len(log.segments) - 1
    assert rolls >= 1 and len(syncs) == rolls
    log.close()
    assert len(syncs) == rolls + 1


def test_reattach_after_close_under_the_same_replica_id(
    tmp_path: Path, small_config: LogConfig
) -> None:
    directory = replica_dir(tmp_path, "orders", 2)
    with ReplicaLog.open(directory, small_config) as log:
        expected = fill(log, 50)
        log.hw = 100
        segments = log.segments
    with ReplicaLog.open(replica_dir(tmp_path, "orders", 2), small_config) as again:
        assert again.recovery.cut_tail is None and not again.recovery.corrupt_segments
        assert (again.leo, again.hw) == (250, 100)
        assert again.segments == segments
        assert read_values(again) == expected
        more = fill(again, 2, first_tag=99)
        assert min(more) == 250


def test_a_directory_is_opened_by_one_log_at_a_time(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log()
    with pytest.raises(StorageError, match="already open"):
        open_log()
    log.close()
    with pytest.raises(StorageError, match="closed"):
        log.read(0)
    open_log().close()


def test_offset_for_timestamp(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    # batch t has records at TS0 + t*1000 + i, i < 5; batch 7 goes back in time.
    for tag in range(40):
        ts = TS0 + 7 * 1000 - 500 if tag == 8 else None
        log.append_produced(make_frame(tag, 5, ts=ts))
    assert len(log.segments) > 3
    assert log.offset_for_timestamp(0) == 0
    assert log.offset_for_timestamp(TS0 + 3 * 1000 + 2) == 17
    assert log.offset_for_timestamp(TS0 + 3 * 1000 + 5) == 20  # between batches
    assert log.offset_for_timestamp(TS0 + 25 * 1000) == 125
    assert log.offset_for_timestamp(TS0 + 39 * 1000 + 4) == 199
    assert log.offset_for_timestamp(TS0 + 39 * 1000 + 5) is None
    assert log.offset_for_timestamp(TS0 + 25 * 1000, end_offset=100) is None
    assert log.offset_for_timestamp(TS0 + 6 * 1000 + 700) == 35  # first record >= ts
    log.close()
    again = open_log()
    assert again.offset_for_timestamp(TS0 + 25 * 1000) == 125


def test_export_parquet_errors(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    fill(log, 30)
    with pytest.raises(NotFoundError):
        log.export_parquet(3)
    with pytest.raises(InvalidRequestError, match="active"):
        log.export_parquet(log.segments[-1].base_offset)


def test_a_directory_that_cannot_be_made_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "t-0").write_text("a file where the replica directory goes")
    with pytest.raises(StorageError, match="^cannot open the log in .*t-0/x: "):
        ReplicaLog.open(tmp_path / "t-0" / "x")


def test_running_out_of_file_descriptors_is_a_storage_error_and_releases_the_lock(
    tmp_path: Path,
) -> None:
    """An SPU with thousands of replicas can hit its descriptor limit: that replica fails
    to open with the typed error (the dispatcher logs it and goes on), not a raw
    ``OSError`` that ended the SPU's link to the SC."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 3, hard))
    # The limit caps descriptor numbers, not their count: fill the holes a long test
    # run leaves below it, then free two, so the log's lock opens and a later file fails.
    filler: list[int] = []
    try:
        with contextlib.suppress(OSError):
            while True:
                filler.append(os.open(os.devnull, os.O_RDONLY))
        for fd in filler[-2:]:
            os.close(fd)
        del filler[-2:]
        with pytest.raises(StorageError, match="Too many open files"):
            ReplicaLog.open(tmp_path / "t-0")
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    ReplicaLog.open(tmp_path / "t-0").close()  # the lock was not left held
