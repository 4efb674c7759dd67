"""Leader controller on a real replica log, no network: produce, acks, ISR, sync, reads."""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from spark_stream.errors import (
    CorruptFrameError,
    InvalidRequestError,
    NotEnoughReplicasError,
    NotLeaderError,
    OffsetNotAvailableError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    RequestTimeoutError,
    SchemaMismatchError,
    StorageError,
)
from spark_stream.models import PartitionSpec
from spark_stream.models.topic_schema import TopicSchema, storage_schema
from spark_stream.protocol import Acks, Isolation
from spark_stream.protocol.control import LrsStatus, Replica
from spark_stream.records import (
    decode_frames,
    encode_batch,
    encode_records,
    null_headers,
    read_header,
)
from spu.frames import tail_signature
from spu.leader import LeaderController
from spu.private_messages import ReplicaOffsets
from spu.storage import ReplicaLog
from spu.storage import segment as segment_module
from tests.spu.helpers import run

LEADER, F1, F2 = 1, 2, 3


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def replica(replicas: tuple[int, ...] = (LEADER,), min_isr: int = 1) -> Replica:
    spec = PartitionSpec(initial_leader=LEADER, replicas=replicas, min_in_sync_replicas=min_isr)
    return Replica("orders-0", LEADER, spec, 1)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[ReplicaLog]:
    with ReplicaLog.open(tmp_path / "orders-0") as opened:
        yield opened


def make(
    log: ReplicaLog,
    rep: Replica,
    clock: Clock | None = None,
    online: set[int] | None = None,
    max_batch_bytes: int = 1 << 20,
    on_status: Callable[[str], None] | None = None,
) -> LeaderController:
    leader = LeaderController(
        rep,
        log,
        spu_id=LEADER,
        max_lag_ms=1000,
        max_batch_bytes=max_batch_bytes,
        is_online=(lambda s: online is None or s in online),
        clock=clock or Clock(),
        on_status=on_status,
    )
    leader.start()
    return leader


def frame(*values: str, pid: int = -1, seq: int = -1) -> bytes:
    return encode_records(list(values), producer_id=pid, sequence=seq)


def test_produce_assigns_offsets_and_a_lone_leader_commits_at_once(log: ReplicaLog) -> None:
    async def body() -> None:
        leader = make(log, replica())
        first = await leader.produce(memoryview(frame("a", "b")), Acks.LEADER, 1000)
        second = await leader.produce(memoryview(frame("c") + frame("d")), Acks.ALL, 1000)
        assert (first.base_offset, second.base_offset) == (0, 2)
        assert (second.leo, second.hw) == (4, 4)
        piece = leader.read(0, 1 << 20, Isolation.COMMITTED)
        values = [v for b in decode_frames(piece.data) for v in b.column("value").to_pylist()]
        assert values == [b"a", b"b", b"c", b"d"]
        await leader.stop()

    run(body)


def test_acks_all_waits_for_the_follower_and_committed_reads_lag(log: ReplicaLog) -> None:
    async def body() -> None:
        clock = Clock()
        leader = make(log, replica((LEADER, F1), min_isr=2), clock)
        assert leader.in_sync == {LEADER, F1}
        task = asyncio.create_task(leader.produce(memoryview(frame("x")), Acks.ALL, 5000))
        await asyncio.sleep(0)  # let the produce append and park on the high watermark
        assert leader.leo == 1 and leader.hw == 0 and not task.done()
        assert leader.read(0, 1024, Isolation.COMMITTED).length == 0
        assert leader.read(0, 1024, Isolation.UNCOMMITTED).length > 0
        assert leader.follower_report(F1, 1)
        reply = await task
        assert (reply.base_offset, reply.hw) == (0, 1)
        assert leader.read(0, 1024, Isolation.COMMITTED).length > 0
        await leader.stop()

    run(body)


def test_acks_all_refused_below_min_isr_and_nothing_appended(log: ReplicaLog) -> None:
    async def body() -> None:
        leader = make(log, replica((LEADER, F1), min_isr=2), online={LEADER})
        assert leader.in_sync == {LEADER}
        with pytest.raises(NotEnoughReplicasError):
            await leader.produce(memoryview(frame("x")), Acks.ALL, 1000)
        assert leader.leo == 0
        await leader.produce(memoryview(frame("x")), Acks.LEADER, 1000)  # acks=1 still works
        assert leader.leo == 1
        await leader.stop()

    run(body)


def test_acks_all_times_out_when_the_follower_never_reports(log: ReplicaLog) -> None:
    async def body() -> None:
        leader = make(log, replica((LEADER, F1), min_isr=2))
        with pytest.raises(RequestTimeoutError, match="not committed"):
            await leader.produce(memoryview(frame("x")), Acks.ALL, 50)
        assert leader.leo == 1  # appended, just not committed
        await leader.stop()

    run(body)


def test_lagging_follower_is_evicted_and_readmitted(log: ReplicaLog) -> None:
    async def body() -> None:
        clock = Clock()
        leader = make(log, replica((LEADER, F1, F2)), clock)
        await leader.produce(memoryview(frame("a")), Acks.LEADER, 1000)
        leader.follower_report(F1, 1)
        assert leader.hw == 0  # F2 is in sync and has not reported
        clock.now += 1500  # F2 silent past max_lag_ms; F1 reports again
        leader.follower_report(F1, 1)
        leader.check()
        assert leader.in_sync == {LEADER, F1}
        assert leader.hw == 1  # a dead follower does not stall the high watermark
        status = {r.spu_id: r for r in leader.status().status.lrs}
        assert status[F2].in_sync is False and status[F1].in_sync is True
        leader.follower_report(F2, 1)  # caught up: back in
        assert leader.in_sync == {LEADER, F1, F2}
        await leader.stop()

    run(body)


def test_the_timer_evicts_a_silent_follower_among_repeated_unchanged_reports(
    log: ReplicaLog,
) -> None:
    """Unchanged reports and idle ticks skip the re-evaluation (nothing to decide), but
    the timer still drops a follower that went silent past max_lag_ms."""

    async def body() -> None:
        clock = Clock()
        leader = make(log, replica((LEADER, F1, F2)), clock)
        await leader.produce(memoryview(frame("a")), Acks.LEADER, 1000)
        for _ in range(3):  # both followers caught up and reporting the same LEO
            clock.now += 400
            assert leader.follower_report(F1, 1) and leader.follower_report(F2, 1)
            await asyncio.sleep(0.3)  # a tick (every 250 ms at max_lag_ms 1000)
            assert leader.in_sync == {LEADER, F1, F2} and leader.hw == 1
        clock.now += 400  # F2 goes silent; F1 reports once more, unchanged
        leader.follower_report(F1, 1)
        assert leader.in_sync == {LEADER, F1, F2}
        clock.now += 800  # F2 silent 1200 ms > max_lag_ms, F1 800 ms: no report comes
        assert leader.in_sync == {LEADER, F1, F2}
        await asyncio.sleep(0.3)
        assert leader.in_sync == {LEADER, F1}  # the tick saw F2 lag: evicted
        leader.follower_report(F2, 1)  # a report that changes the set is re-evaluated
        assert leader.in_sync == {LEADER, F1, F2}
        await leader.stop()

    run(body)


def test_acks_all_fails_at_once_when_the_isr_shrinks_below_min(log: ReplicaLog) -> None:
    async def body() -> None:
        clock = Clock()
        leader = make(log, replica((LEADER, F1), min_isr=2), clock)
        task = asyncio.create_task(leader.produce(memoryview(frame("x")), Acks.ALL, 5000))
        await asyncio.sleep(0)
        clock.now += 1500
        leader.check()  # F1 evicted: too few replicas to commit, the request fails now
        with pytest.raises(NotEnoughReplicasError, match="not committed: 1 in-sync"):
            await task
        # a leader cut off from its followers commits nothing only it holds
        assert leader.in_sync == {LEADER} and leader.hw == 0 and log.leo == 1
        leader.follower_report(F1, 1)  # the follower is back and holds it: committed
        assert leader.in_sync == {LEADER, F1} and leader.hw == 1
        await leader.stop()

    run(body)


def test_with_an_sc_a_shrink_waits_for_its_acceptance(log: ReplicaLog) -> None:
    """A leader that reports to an SC shrinks only once the SC accepted: until then a
    follower it stopped hearing from holds the HW, and acks=all is not acknowledged."""

    async def body() -> None:
        clock = Clock()
        reports: list[str] = []
        leader = make(log, replica((LEADER, F1)), clock, on_status=reports.append)
        task = asyncio.create_task(leader.produce(memoryview(frame("x")), Acks.ALL, 300))
        await asyncio.sleep(0)
        clock.now += 1500  # F1 silent past max_lag_ms: the rules drop it
        leader.check()
        # Still in force (the SC has not accepted), so nothing only the leader holds commits.
        assert leader.in_sync == {LEADER, F1} and leader.hw == 0 and log.leo == 1
        proposal = leader.status()
        assert {r.spu_id: r.in_sync for r in proposal.status.lrs} == {LEADER: True, F1: False}
        assert proposal.status.leader_epoch == leader.leader_epoch and reports
        with pytest.raises(RequestTimeoutError, match="not committed"):
            await task  # the SC never answered: not acknowledged
        # A status from an older leadership is no acceptance.
        stale = proposal.status.model_copy(update={"leader_epoch": leader.leader_epoch - 1})
        leader.isr_accepted(LrsStatus(proposal.name, stale))
        assert leader.in_sync == {LEADER, F1} and leader.hw == 0
        leader.isr_accepted(proposal)  # the SC accepted the smaller set: it applies
        assert leader.in_sync == {LEADER} and leader.hw == 1
        leader.follower_report(F1, 1)  # growing is local
        assert leader.in_sync == {LEADER, F1}
        await leader.stop()

    run(body)


def test_sync_cuts_a_follower_whose_hw_is_inside_a_leader_frame(tmp_path: Path) -> None:
    """A deposed leader committed a frame alone; the new leader's frame there is longer.
    The cut must be at the new leader's frame boundary, or every push would overlap."""

    async def body() -> None:
        with (
            ReplicaLog.open(tmp_path / "leader") as leader_log,
            ReplicaLog.open(tmp_path / "follower") as follower_log,
        ):
            leader_log.append_produced(frame("a"))
            follower_log.append_produced(frame("a"))
            leader_log.append_produced(frame("n1", "n2", "n3", "n4", "n5"))  # [1, 6)
            follower_log.append_produced(frame("old1", "old2"))  # [1, 3), committed alone
            follower_log.hw = 3
            leader = make(leader_log, replica((LEADER, F1)))
            start, tail = tail_signature(follower_log, follower_log.hw, 100)
            assert (start, tail) == (3, [])
            point, reset = leader.sync_follower(F1, ReplicaOffsets(3, start, tuple(tail)))
            assert (point, reset) == (1, False)
            assert leader.log.read(point, 1).base_offset == point  # pushes append there
            follower_log.truncate_to(point)
            follower_log.append_replicated([leader_log.read(point, 1 << 20).data])
            assert follower_log.leo == 6
            await leader.stop()

    run(body)


def test_follower_offline_leaves_the_isr_at_once(log: ReplicaLog) -> None:
    async def body() -> None:
        leader = make(log, replica((LEADER, F1)))
        await leader.produce(memoryview(frame("a")), Acks.LEADER, 1000)
        assert leader.hw == 0
        leader.spu_offline(F1)
        assert leader.in_sync == {LEADER} and leader.hw == 1
        await leader.stop()

    run(body)


def test_idempotent_retry_keeps_original_offsets_across_a_new_leader(log: ReplicaLog) -> None:
    async def body() -> None:
        leader = make(log, replica())
        await leader.produce(memoryview(frame("noise")), Acks.LEADER, 1000)
        batch = frame("a", "b", pid=42, seq=0)
        first = await leader.produce(memoryview(batch), Acks.LEADER, 1000)
        again = await leader.produce(memoryview(batch), Acks.LEADER, 1000)
        assert first.base_offset == again.base_offset == 1 and leader.leo == 3
        with pytest.raises(OutOfOrderSequenceError):
            await leader.produce(memoryview(frame("z", pid=42, seq=5)), Acks.LEADER, 1000)
        await leader.stop()
        successor = make(log, replica())  # rebuilds producer state from the log headers
        retried = await successor.produce(memoryview(batch), Acks.ALL, 1000)
        assert retried.base_offset == 1 and successor.leo == 3
        nxt = await successor.produce(memoryview(frame("c", pid=42, seq=2)), Acks.LEADER, 1000)
        assert nxt.base_offset == 3
        await successor.stop()

    run(body)


def test_a_topic_set_to_one_codec_refuses_frames_of_another(log: ReplicaLog) -> None:
    async def body() -> None:
        spec = PartitionSpec(initial_leader=LEADER, replicas=(LEADER,), compression="lz4")
        leader = make(log, Replica("orders-0", LEADER, spec, 1))
        lz4 = encode_records(["a"], compression="lz4")
        with pytest.raises(InvalidRequestError, match="stores lz4 batches.*batch 1 is zstd"):
            await leader.produce(
                memoryview(lz4 + encode_records(["b"], compression="zstd")), Acks.LEADER, 1000
            )
        with pytest.raises(InvalidRequestError, match="batch 0 is none"):
            await leader.produce(memoryview(frame("c")), Acks.LEADER, 1000)
        assert leader.leo == 0
        assert (await leader.produce(memoryview(lz4), Acks.LEADER, 1000)).leo == 1
        await leader.stop()

    run(body)


def test_bad_frames_get_typed_errors_and_append_nothing(log: ReplicaLog) -> None:
    async def body() -> None:
        leader = make(log, replica(), max_batch_bytes=2048)
        good = frame("a")
        corrupt = bytearray(good)
        corrupt[-1] ^= 0xFF
        with pytest.raises(CorruptFrameError):
            await leader.produce(memoryview(bytes(corrupt)), Acks.LEADER, 1000)
        with pytest.raises(CorruptFrameError):
            await leader.produce(memoryview(good + good[:30]), Acks.LEADER, 1000)
        with pytest.raises(CorruptFrameError):
            await leader.produce(
                memoryview(b"not a frame at all, just some bytes here" * 2), Acks.LEADER, 1000
            )
        with pytest.raises(RecordTooLargeError):
            await leader.produce(memoryview(frame("x" * 4096)), Acks.LEADER, 1000)
        assert leader.leo == 0
        await leader.stop()
        with pytest.raises(NotLeaderError):
            await leader.produce(memoryview(good), Acks.LEADER, 1000)
        with pytest.raises(NotLeaderError):
            leader.read(0, 10, Isolation.UNCOMMITTED)

    run(body)


def test_sync_keeps_the_matching_prefix_and_cuts_the_divergence(tmp_path: Path) -> None:
    async def body() -> None:
        with (
            ReplicaLog.open(tmp_path / "leader") as leader_log,
            ReplicaLog.open(tmp_path / "follower") as follower_log,
        ):
            common = [frame("a"), frame("b", "c")]
            for f in common:
                leader_log.append_produced(f)
                follower_log.append_produced(f)
            leader_log.append_produced(frame("leader-only"))
            follower_log.append_produced(frame("diverged", "tail"))
            follower_log.hw = 1  # below its HW: known committed
            leader = make(leader_log, replica((LEADER, F1)))
            start, tail = tail_signature(follower_log, follower_log.hw, 100)
            assert start == 1 and [b for b, _ in tail] == [1, 3]
            offsets = ReplicaOffsets(follower_log.leo, start, tuple(tail))
            assert leader.sync_follower(F1, offsets) == (3, False)
            # A follower with nothing past its HW keeps everything up to it.
            assert leader.sync_follower(F1, ReplicaOffsets(3, 3, ())) == (3, False)
            # A follower ahead of this log (unclean history) is cut to the leader's LEO.
            assert leader.sync_follower(F1, ReplicaOffsets(9, 9, ()))[0] == leader.leo
            await leader.stop()

    run(body)


def test_sync_resets_a_follower_below_the_log_start(tmp_path: Path) -> None:
    async def body() -> None:
        with ReplicaLog.open(tmp_path / "leader", initial_offset=100) as leader_log:
            leader_log.append_produced(frame("a"))
            leader = make(leader_log, replica((LEADER, F1)))
            assert leader.sync_follower(F1, ReplicaOffsets(5, 5, ())) == (100, True)
            await leader.stop()

    run(body)


def test_status_reports_every_replica(log: ReplicaLog) -> None:
    async def body() -> None:
        leader = make(log, replica((LEADER, F1, F2)), online={LEADER, F1})
        await leader.produce(memoryview(frame("a", "b")), Acks.LEADER, 1000)
        leader.follower_report(F1, 2)
        report = leader.status()
        assert report.name == "orders-0"
        status = report.status
        assert (status.leader, status.leo, status.hw, status.log_start_offset) == (LEADER, 2, 2, 0)
        lrs = {r.spu_id: (r.leo, r.in_sync) for r in status.lrs}
        assert lrs == {LEADER: (2, True), F1: (2, True), F2: (-1, False)}
        assert read_header(leader.read(0, 10, Isolation.COMMITTED).data).record_count == 2
        await leader.stop()

    run(body)


def _typed_frame(user: pa.Schema, columns: dict[str, list[object]], version: int) -> bytes:
    n = len(next(iter(columns.values())))
    arrays = [pa.array(columns[f.name], f.type) for f in user]
    system = [
        pa.nulls(n, pa.binary()),
        pa.array([1] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        null_headers(n),
    ]
    batch = pa.RecordBatch.from_arrays([*arrays, *system], schema=storage_schema(user))
    return encode_batch(batch, schema_version=version)


def test_a_typed_topic_refuses_frames_of_other_columns_naming_them(log: ReplicaLog) -> None:
    user = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    typed = TopicSchema.of(user)

    async def body() -> None:
        spec = PartitionSpec(initial_leader=LEADER, replicas=(LEADER,), topic_schema=typed)
        leader = make(log, Replica("orders-0", LEADER, spec, 1))
        good = _typed_frame(user, {"id": [1, 2], "name": ["a", None]}, 1)
        wrong = pa.schema([pa.field("id", pa.float64(), nullable=False), user.field("name")])
        bad = _typed_frame(wrong, {"id": [1.5], "name": ["b"]}, 1)
        with pytest.raises(SchemaMismatchError, match="batch 1: column 'id' is double.*int64"):
            await leader.produce(memoryview(good + bad), Acks.LEADER, 1000)
        with pytest.raises(SchemaMismatchError, match="batch 0 holds untyped records"):
            await leader.produce(memoryview(frame("c")), Acks.LEADER, 1000)
        with pytest.raises(SchemaMismatchError, match="schema version 2; the topic's latest is 1"):
            await leader.produce(
                memoryview(_typed_frame(user, {"id": [1], "name": ["x"]}, 2)), Acks.LEADER, 1000
            )
        assert leader.leo == 0  # nothing of a refused request is appended
        assert (await leader.produce(memoryview(good), Acks.LEADER, 1000)).leo == 2
        await leader.stop()

    run(body)


def test_an_untyped_topic_refuses_typed_frames(log: ReplicaLog) -> None:
    user = pa.schema([pa.field("id", pa.int64())])

    async def body() -> None:
        leader = make(log, replica())
        with pytest.raises(SchemaMismatchError, match="schema version 1, but the topic is untyped"):
            await leader.produce(memoryview(_typed_frame(user, {"id": [1]}, 1)), Acks.LEADER, 1000)
        assert leader.leo == 0
        await leader.stop()

    run(body)


def test_produce_counts_traffic_once_per_request_and_duplicates_not_at_all(
    log: ReplicaLog,
) -> None:
    async def body() -> None:
        leader = make(log, replica((LEADER, F1)))
        sent = frame("a", "b", pid=7, seq=0)
        await leader.produce(memoryview(sent + frame("c")), Acks.LEADER, 1000)
        await leader.produce(memoryview(sent), Acks.LEADER, 1000)  # a retried duplicate
        assert (leader.traffic.produced_records, leader.traffic.produced_bytes) == (
            3,
            len(sent) + len(frame("c")),
        )
        assert leader.follower_lag() == {F1: 3}  # in sync at the start, reported nothing
        assert leader.follower_report(F1, 2)
        assert leader.follower_lag() == {F1: 1}
        await leader.stop()

    run(body)


def test_a_full_disk_is_logged_at_error_naming_the_partition(
    log: ReplicaLog, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def disk_full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    async def body() -> None:
        leader = make(log, replica())
        monkeypatch.setattr(segment_module, "pwrite_all", disk_full)
        with (
            caplog.at_level(logging.ERROR, logger="spu.leader"),
            pytest.raises(StorageError, match="No space left on device"),
        ):
            await leader.produce(memoryview(frame("a")), Acks.LEADER, 1000)
        assert leader.leo == 0 and leader.traffic.produced_records == 0
        [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert "partition=orders-0" in record.getMessage()
        assert "No space left on device" in record.getMessage()
        await leader.stop()

    run(body)


def test_a_new_leadership_reports_no_hw_below_its_starting_leo(log: ReplicaLog) -> None:
    async def body() -> None:
        alone = make(log, replica())
        await alone.produce(memoryview(frame("a", "b", "c")), Acks.LEADER, 1000)
        await alone.stop()
        log.hw = 1  # a stale checkpoint (or a promoted follower's view)
        leader = make(log, replica((LEADER, F1), min_isr=1))
        assert (leader.hw, leader.leo) == (1, 3)
        with pytest.raises(OffsetNotAvailableError, match="below the leader's start 3"):
            leader.check_hw_current()
        assert leader.follower_report(F1, 3)
        assert leader.hw == 3
        leader.check_hw_current()  # current now
        await leader.stop()

    run(body)


def test_a_lone_leader_starts_with_its_hw_at_its_leo(log: ReplicaLog) -> None:
    async def body() -> None:
        first = make(log, replica())
        await first.produce(memoryview(frame("a", "b")), Acks.LEADER, 1000)
        await first.stop()
        log.hw = 0  # the checkpoint of a SIGKILLed SPU: written every 10 s
        leader = make(log, replica())
        assert leader.hw == 2  # before anything is served, not at the first tick
        leader.check_hw_current()
        await leader.stop()

    run(body)


def test_an_acks_leader_produce_answers_after_the_readers_it_woke(log: ReplicaLog) -> None:
    """A stream waiting at the end pushes a record before the record's own ack is
    written: the produce handler yields once to the readers its append woke."""

    async def body() -> None:
        leader = make(log, replica())
        woken = asyncio.Event()
        leader.subscribe(woken)
        seen: list[int] = []

        async def reader() -> None:
            await woken.wait()
            seen.append(leader.read(0, 1 << 20, Isolation.COMMITTED).records)

        task = asyncio.ensure_future(reader())
        await asyncio.sleep(0)  # the reader waits
        await leader.produce(memoryview(frame("a")), Acks.LEADER, 1000)
        assert seen == [1]  # it ran (and read the record) before produce returned
        await task
        await leader.stop()

    run(body)
