"""Bit rot on an SPU: the scrubber finds it, a leader's reads meet it, repairs show.

Real logs on disk with a byte flipped in a sealed segment; the leader controller and the
scrubber run on a real event loop (no sockets needed: the SC and follower sides are the
controller's own methods).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.errors import CorruptSegmentError, NotLeaderError
from spark_stream.models import PartitionSpec
from spark_stream.protocol import Acks, Isolation
from spark_stream.protocol.control import Replica
from spark_stream.records import BATCH_HEADER_SIZE, encode_records
from spu.leader import LeaderController
from spu.private_messages import ReplicaOffsets
from spu.scrubber import Scrubber
from spu.storage import LogConfig, ReplicaLog
from spu.storage.scrub import Damage
from tests.spu.helpers import run

LEADER, F1 = 1, 2
CONFIG = LogConfig(segment_max_bytes=4096, index_interval_bytes=600, flush_interval_ms=None)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def log(tmp_path: Path) -> Iterator[ReplicaLog]:
    with ReplicaLog.open(tmp_path / "orders-0", CONFIG) as opened:
        yield opened


def _leader(log: ReplicaLog, replicas: tuple[int, ...], clock: Clock) -> LeaderController:
    spec = PartitionSpec(initial_leader=LEADER, replicas=replicas, min_in_sync_replicas=1)
    leader = LeaderController(
        Replica("orders-0", LEADER, spec, 1),
        log,
        spu_id=LEADER,
        max_lag_ms=1000,
        max_batch_bytes=1 << 20,
        clock=clock,
    )
    leader.start()
    return leader


def _fill(log: ReplicaLog, batches: int = 40) -> None:
    for i in range(batches):
        log.append_produced(encode_records([f"v{i}-{k}".encode() * 20 for k in range(3)]))


def _flip_second_frame(log: ReplicaLog) -> tuple[int, int]:
    """Flip a payload byte of the second frame of the first segment (sealed); returns the
    frame's base offset and byte position."""
    assert len(log.segments) >= 3
    piece = log.read(3, 1)  # frames of 3 records: offsets 3..5 are the second frame
    assert piece.base_offset == 3
    with log.segments[0].path.open("r+b") as out:
        at = piece.position + BATCH_HEADER_SIZE + 11
        out.seek(at)
        byte = out.read(1)
        out.seek(at)
        out.write(bytes([byte[0] ^ 0x10]))
    return piece.base_offset, piece.position


def test_a_leader_read_meets_damage_serves_the_intact_prefix_then_hands_over(
    log: ReplicaLog,
) -> None:
    async def body() -> None:
        _fill(log)
        offset, position = _flip_second_frame(log)
        clock = Clock()
        leader = _leader(log, (LEADER, F1), clock)
        leader.follower_report(F1, log.leo)
        assert leader.in_sync == {LEADER, F1}
        first = leader.read(0, 1 << 20, Isolation.COMMITTED)
        assert (first.base_offset, first.next_offset) == (0, offset)  # the intact frame only
        assert log.damage is not None
        assert (log.damage.offset, log.damage.position, log.damage.segment) == (offset, position, 0)
        with pytest.raises(NotLeaderError, match="damaged copy .* at offset 3"):
            leader.read(offset, 1 << 20, Isolation.COMMITTED)
        own = leader.status().status.replica(LEADER)
        assert own is not None and own.damaged and not own.in_sync
        assert own.repair is not None and own.repair.startswith("damaged: offsets [3, ")
        # Reads past the damaged frame still work (another frame, another check).
        assert leader.read(offset + 3, 1 << 20, Isolation.COMMITTED).base_offset == offset + 3
        await leader.stop()

    run(body)


def test_a_lone_damaged_leader_names_the_range_it_cannot_serve(log: ReplicaLog) -> None:
    async def body() -> None:
        _fill(log)
        offset, _ = _flip_second_frame(log)
        leader = _leader(log, (LEADER,), Clock())
        with pytest.raises(CorruptSegmentError, match=r"offsets \[3, \d+\) are damaged on SPU 1"):
            leader.read(offset, 1 << 20, Isolation.UNCOMMITTED)
        await leader.stop()

    run(body)


def test_reads_of_the_active_segment_and_intact_sealed_ones_pass_untouched(
    log: ReplicaLog,
) -> None:
    async def body() -> None:
        _fill(log)
        leader = _leader(log, (LEADER,), Clock())
        offset = 0
        while offset < log.leo:
            piece = leader.read(offset, 1 << 20, Isolation.UNCOMMITTED)
            offset = piece.next_offset
        assert log.damage is None
        own = leader.status().status.replica(LEADER)
        assert own is not None and not own.damaged and own.repair is None
        await leader.stop()

    run(body)


def test_a_repairing_follower_is_out_of_sync_then_repaired(log: ReplicaLog) -> None:
    async def body() -> None:
        _fill(log)
        clock = Clock()
        leader = _leader(log, (LEADER, F1), clock)
        leader.follower_report(F1, log.leo)
        await leader.produce(memoryview(encode_records([b"x"])), Acks.LEADER, 1000)
        leader.follower_report(F1, log.leo)
        assert log.hw == log.leo and leader.in_sync == {LEADER, F1}
        # The follower cut its damaged log at 3 and opens a stream saying so.
        assert leader.sync_follower(F1, ReplicaOffsets(3, 3, (), repair_from=3)) == (3, False)
        assert leader.in_sync == {LEADER}  # below the HW: lacks committed records
        rep = leader.status().status.replica(F1)
        assert rep is not None and (rep.in_sync, rep.damaged) == (False, True)
        assert rep.repair == "repairing from offset 3"
        clock.now += 10
        leader.follower_report(F1, log.leo)  # refetched everything
        rep = leader.status().status.replica(F1)
        assert rep is not None and (rep.in_sync, rep.damaged) == (True, False)
        assert rep.repair == "repaired from offset 3"
        await leader.stop()

    run(body)


def test_the_scrubber_reports_a_damaged_segment_once_per_pass(tmp_path: Path) -> None:
    async def body() -> None:
        with (
            ReplicaLog.open(tmp_path / "a-0", CONFIG) as damaged,
            ReplicaLog.open(tmp_path / "b-0", CONFIG) as healthy,
        ):
            _fill(damaged)
            _fill(healthy)
            offset, position = _flip_second_frame(damaged)
            found: list[tuple[str, Damage]] = []
            scrubber = Scrubber(
                lambda: {"a-0": damaged, "b-0": healthy},
                lambda name, _log, damage: found.append((name, damage)),
                mb_per_s=1024,
                pass_interval_s=60,
            )
            await scrubber.scrub_pass()
            sealed = len(damaged.segments) - 1 + len(healthy.segments) - 1
            assert scrubber.segments_checked == sealed
            assert [(n, d.offset, d.position, d.segment) for n, d in found] == [
                ("a-0", offset, position, 0)
            ]
            assert found[0][1].end_offset == damaged.segments[1].base_offset
            await scrubber.scrub_pass()  # a new pass checks everything again
            assert len(found) == 2 and scrubber.passes == 2

    run(body)


def test_the_scrubber_runs_off_the_event_loop(tmp_path: Path) -> None:
    """While a slow scrub (a tight budget) reads, the loop keeps running other tasks."""

    async def body() -> None:
        with ReplicaLog.open(tmp_path / "a-0", CONFIG) as log:
            _fill(log)
            scrubber = Scrubber(
                lambda: {"a-0": log}, lambda *_: None, mb_per_s=0.01, pass_interval_s=60
            )
            task = asyncio.create_task(scrubber.scrub_pass())
            ticks = 0
            for _ in range(20):
                await asyncio.sleep(0.01)
                ticks += 1
            assert ticks == 20 and not task.done()  # 10 KiB/s: the pass is still reading
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    run(body)


def test_history_is_checked_once_until_a_damage_is_reported(log: ReplicaLog) -> None:
    async def body() -> None:
        _fill(log)
        leader = _leader(log, (LEADER,), Clock())

        def read_all() -> int:
            offset = 0
            while offset < log.leo:
                offset = leader.read(offset, 1 << 20, Isolation.UNCOMMITTED).next_offset
            return offset

        assert read_all() == log.leo
        offset, position = _flip_second_frame(log)
        assert read_all() == log.leo  # checked already: the scrub's to find now
        leader.damaged(Damage(0, offset, log.segments[1].base_offset, position, "crc mismatch"))
        with pytest.raises(CorruptSegmentError, match=r"offsets \[3, "):
            leader.read(offset, 1 << 20, Isolation.UNCOMMITTED)
        await leader.stop()

    run(body)
