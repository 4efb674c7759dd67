"""Recovery at open: torn and garbled tails, lost or corrupt indexes, damaged segments."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_stream.errors import CorruptFrameError, CorruptSegmentError
from spark_stream.records import read_header
from spu.storage import LogConfig, ReplicaLog

from .helpers import fill, read_values


def closed_log(
    open_log: Callable[..., ReplicaLog], batches: int = 60, config: LogConfig | None = None
) -> tuple[ReplicaLog, dict[int, bytes]]:
    log = open_log(config)
    expected = fill(log, batches)
    log.hw = log.leo
    log.close()
    return log, expected


def flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x5A
    path.write_bytes(bytes(data))


def test_garbled_tail_is_cut_to_the_last_valid_frame(
    open_log: Callable[..., ReplicaLog],
) -> None:
    old, expected = closed_log(open_log)
    active = old.segments[-1].path
    with open(active, "ab") as f:
        f.write(os.urandom(300))
    log = open_log()
    assert log.recovery.cut_tail is not None and active.name in log.recovery.cut_tail
    assert log.leo == old.leo and read_values(log) == expected
    assert active.stat().st_size == old.segments[-1].size
    assert min(fill(log, 1, first_tag=500)) == old.leo


def test_torn_last_frame_is_dropped(open_log: Callable[..., ReplicaLog]) -> None:
    old, expected = closed_log(open_log)
    active = old.segments[-1].path
    os.truncate(active, active.stat().st_size - 7)
    log = open_log()
    assert log.leo == old.leo - 5
    assert read_values(log) == {o: v for o, v in expected.items() if o < old.leo - 5}


def test_corruption_inside_the_active_segment_cuts_from_there(
    open_log: Callable[..., ReplicaLog],
) -> None:
    old, expected = closed_log(open_log)
    last = old.segments[-1]
    assert last.next_offset - last.base_offset >= 10
    first_length = read_header(last.path.read_bytes()).frame_length
    flip(last.path, first_length + 70)  # inside the second frame
    log = open_log()
    assert log.leo == last.base_offset + 5
    assert "crc mismatch" in (log.recovery.cut_tail or "")
    assert read_values(log) == {o: v for o, v in expected.items() if o < log.leo}


@pytest.mark.parametrize("which", ["index", "timeindex", "both"])
def test_deleted_index_files_are_rebuilt_identical(
    open_log: Callable[..., ReplicaLog], which: str
) -> None:
    old, expected = closed_log(open_log)
    directory = old.directory
    suffixes = {"index": [".index"], "timeindex": [".timeindex"], "both": [".index", ".timeindex"]}[
        which
    ]
    originals = {p.name: p.read_bytes() for p in directory.iterdir() if p.suffix in suffixes}
    assert len(originals) >= 2 * len(suffixes)
    for name in originals:
        (directory / name).unlink()
    log = open_log()
    assert read_values(log) == expected
    assert {name: (directory / name).read_bytes() for name in originals} == originals
    assert log.offset_for_timestamp(0) == 0


def _sealed_index(old: ReplicaLog, suffix: str) -> Path:
    path = old.segments[1].path.with_suffix(suffix)
    assert path.stat().st_size > 0
    return path


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: os.urandom(len(data)),  # garbage
        lambda data: data[:-3],  # partial entry
        lambda data: (
            data[:4] + (int.from_bytes(data[4:8], "little") + 8).to_bytes(4, "little") + data[8:]
        ),  # a plausible wrong position
        lambda data: data[8:] + data[:8],  # out of order
    ],
)
def test_corrupt_offset_index_is_rebuilt(
    open_log: Callable[..., ReplicaLog], damage: Callable[[bytes], bytes]
) -> None:
    old, expected = closed_log(
        open_log, config=LogConfig(segment_max_bytes=8192, index_interval_bytes=600)
    )
    path = _sealed_index(old, ".index")
    original = path.read_bytes()
    path.write_bytes(damage(original))
    log = open_log(LogConfig(segment_max_bytes=8192, index_interval_bytes=600))
    assert path.read_bytes() == original
    assert read_values(log) == expected
    assert not log.recovery.corrupt_segments


def test_corrupt_time_index_is_rebuilt(open_log: Callable[..., ReplicaLog]) -> None:
    old, expected = closed_log(open_log)
    path = _sealed_index(old, ".timeindex")
    original = path.read_bytes()
    path.write_bytes(original[16:] + original[:16])
    log = open_log()
    assert path.read_bytes() == original
    assert log.offset_for_timestamp(0) == 0


def test_damaged_sealed_segment_is_reported_and_the_log_opens_up_to_it(
    open_log: Callable[..., ReplicaLog],
) -> None:
    old, expected = closed_log(open_log)
    damaged = old.segments[3]
    flip(damaged.path, damaged.size - 20)  # in its last frame
    log = open_log()
    (error,) = log.recovery.corrupt_segments
    assert isinstance(error, CorruptSegmentError)
    assert damaged.path.name in str(error)
    assert log.leo == damaged.base_offset
    assert read_values(log) == {o: v for o, v in expected.items() if o < damaged.base_offset}
    set_aside = {p.name for p in log.recovery.set_aside}
    for later in old.segments[3:]:
        assert f"{later.path.name}.corrupt" in set_aside
        assert not later.path.exists()
    assert log.hw == log.leo
    assert min(fill(log, 1, first_tag=900)) == damaged.base_offset


def test_damage_in_the_first_segment_leaves_an_empty_log_at_its_base(
    open_log: Callable[..., ReplicaLog],
) -> None:
    old, _ = closed_log(open_log)
    flip(old.segments[0].path, 0)  # bad magic
    log = open_log()
    assert "00000000000000000000.log" in str(log.recovery.corrupt_segments[0])
    assert (log.log_start_offset, log.leo) == (0, 0)


def test_only_a_full_scan_finds_damage_in_the_middle_of_a_sealed_segment(
    open_log: Callable[..., ReplicaLog],
) -> None:
    old, _ = closed_log(open_log)
    damaged = old.segments[2]
    piece_at = damaged.size // 3
    flip(damaged.path, piece_at)
    cheap = open_log()
    assert not cheap.recovery.corrupt_segments  # the cheap check reads the tail only
    with pytest.raises(CorruptFrameError):  # a verifying reader still catches it
        offset = damaged.base_offset
        while offset < damaged.next_offset:
            piece = cheap.read(offset, 1 << 20)
            piece.decode()
            offset = piece.next_offset
    cheap.close()
    full = open_log(
        LogConfig(segment_max_bytes=4096, index_interval_bytes=600, recovery_scan="all")
    )
    assert damaged.path.name in str(full.recovery.corrupt_segments[0])
    assert full.leo == damaged.base_offset


def test_a_missing_middle_segment_is_a_gap(open_log: Callable[..., ReplicaLog]) -> None:
    old, _ = closed_log(open_log)
    gone = old.segments[2]
    gone.path.unlink()
    log = open_log()
    assert "starts at offset" in str(log.recovery.corrupt_segments[0])
    assert log.leo == gone.base_offset


def test_leftovers_of_a_crash_are_removed(open_log: Callable[..., ReplicaLog]) -> None:
    old, expected = closed_log(open_log)
    directory = old.directory
    stray = [
        directory / "00000000000000000000.log.swap",
        directory / "replication.chk.tmp",
        directory / "00000000000000099999.index",
    ]
    for path in stray:
        path.write_bytes(b"junk")
    (directory / "replication.chk").write_text("garbage")
    log = open_log()
    assert not any(p.exists() for p in stray)
    assert read_values(log) == expected
    assert log.hw == log.log_start_offset  # unreadable checkpoint: start over
