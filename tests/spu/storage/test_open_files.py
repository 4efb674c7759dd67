"""The per-process bound on open segment files: many replicas, few descriptors.

Real logs on disk, descriptors counted in ``/proc/self/fd``. The bound is made tight
(``tight``) so that every segment use may close another segment's files; everything a
log holds must still read back, append, truncate and recover as before.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.errors import StorageError
from spu.storage import LogConfig, ReplicaLog
from spu.storage.open_files import OPEN_FILES, OpenFiles

from .helpers import fill, make_frame, read_values

CAPACITY = 8
FDS_PER_SEGMENT = 6  # the log, two indexes, and CPython's duplicate for each memory map


def open_fds() -> int:
    """Descriptors this process holds now."""
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def tight() -> Iterator[None]:
    """At most CAPACITY segments open; idle means unused at all (the sweep closes all)."""
    OPEN_FILES.configure(capacity=CAPACITY, min_idle_s=0.0, idle_s=0.0)
    yield
    OPEN_FILES.configure()


@pytest.mark.usefixtures("tight")
def test_many_replicas_hold_a_bounded_number_of_descriptors(tmp_path: Path) -> None:
    config = LogConfig(segment_max_bytes=2048, index_interval_bytes=300, flush_interval_ms=None)
    before = open_fds()
    count = 200
    logs: list[ReplicaLog] = []
    expected: list[dict[int, bytes]] = []
    try:
        for i in range(count):
            log = ReplicaLog.open(tmp_path / f"t-{i}", config)
            logs.append(log)
            expected.append(fill(log, 12, per_batch=3, size=40))
        assert all(len(log.segments) >= 3 for log in logs)  # rolled: sealed segments too
        bound = before + count + CAPACITY * FDS_PER_SEGMENT  # a lock each, plus the bound
        assert open_fds() <= bound
        for log, values in zip(logs, expected, strict=True):  # every segment read again
            assert read_values(log) == values
            assert open_fds() <= bound
        OPEN_FILES.sweep()
        assert open_fds() <= before + count  # idle replicas: their directory lock only
        for i, log in enumerate(logs):  # released active segments take appends again
            base, cut = log.append_produced([make_frame(100 + i, 2), make_frame(200 + i, 2)])
            assert base == max(expected[i]) + 1
            assert log.truncate_to(cut + 1) == cut  # a cut inside a batch keeps none of it
        assert open_fds() <= bound
    finally:
        for log in logs:
            log.close()
    assert open_fds() <= before
    for i in range(count):  # recovery after closing released segments
        with ReplicaLog.open(tmp_path / f"t-{i}", config) as log:
            assert read_values(log, end=max(expected[i]) + 1) == expected[i]
            assert log.leo == max(expected[i]) + 3
            assert log.recovery.cut_tail is None and not log.recovery.corrupt_segments


@pytest.mark.usefixtures("tight")
def test_an_unsynced_released_segment_is_synced_by_flush(tmp_path: Path) -> None:
    with ReplicaLog.open(tmp_path / "t-0", LogConfig(flush_interval_ms=None)) as log:
        fill(log, 3)
        active = log._segments[-1]
        OPEN_FILES.sweep()
        assert active.is_released
        log.flush()  # reopens the file: the data appended before the release is synced
        assert not active.is_released
        OPEN_FILES.sweep()
        log.flush()  # nothing appended since: no reopen
        assert active.is_released


@pytest.mark.usefixtures("tight")
def test_retention_and_timestamps_on_released_segments(tmp_path: Path) -> None:
    config = LogConfig(segment_max_bytes=2048, retention_bytes=4096, flush_interval_ms=None)
    with ReplicaLog.open(tmp_path / "t-0", config) as log:
        fill(log, 30, per_batch=3, size=40)
        log.hw = log.leo
        OPEN_FILES.sweep()
        first = log.offset_for_timestamp(0)
        assert first == log.log_start_offset
        removed = log.apply_retention()
        assert removed and log.log_start_offset == removed[-1].next_offset
        assert not any(info.path.exists() for info in removed)
        assert read_values(log)  # what is left still reads


@pytest.mark.usefixtures("tight")
def test_reopening_a_released_segment_without_descriptors_is_a_storage_error(
    tmp_path: Path,
) -> None:
    log = ReplicaLog.open(tmp_path / "t-0", LogConfig(flush_interval_ms=None))
    try:
        values = fill(log, 2)
        OPEN_FILES.sweep()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, hard))
        filler: list[int] = []
        try:
            with contextlib.suppress(OSError):
                while True:
                    filler.append(os.open(os.devnull, os.O_RDONLY))
            with pytest.raises(StorageError, match="Too many open files"):
                log.read(0)
        finally:
            for fd in filler:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert read_values(log) == values  # the next use opens it
    finally:
        log.close()


class Owner:
    """Something the bound can release; ``busy`` refuses, as a segment in use does."""

    def __init__(self, bound: OpenFiles, *, busy: bool = False) -> None:
        self.bound, self.busy, self.releases = bound, busy, 0

    def release(self) -> bool:
        if self.busy:
            return False
        self.releases += 1
        self.bound.closed(self)
        return True


def test_the_bound_releases_the_excess_and_keeps_a_busy_owner() -> None:
    now = [0.0]
    bound = OpenFiles(capacity=2, min_idle_s=1.0, idle_s=5.0, clock=lambda: now[0])
    busy, idle, fresh = Owner(bound, busy=True), Owner(bound), Owner(bound)
    bound.opened(busy)
    now[0] = 1.0
    bound.opened(idle)
    now[0] = 3.0
    bound.opened(fresh)  # over capacity: busy is the oldest but refuses; kept as used
    assert (busy.releases, idle.releases, len(bound)) == (0, 0, 3)
    now[0] = 4.5
    bound.used(fresh)
    bound.opened(Owner(bound))  # idle (unused since 1.0) goes now
    assert idle.releases == 1 and len(bound) == 3
    now[0] = 20.0
    busy.busy = False
    assert bound.sweep() == 3 and len(bound) == 0 and bound.released == 4
