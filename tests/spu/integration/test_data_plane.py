"""The SPU data plane with real processes: Redis, ``python -m sc``, ``python -m spu`` x N.

Produce and consume across partitions with both isolation levels, ``acks=all`` with
replication 3, a leader SIGKILL with no acknowledged record lost, a follower SIGKILL that
does not stall the high watermark, storage reattached after a restart, bad input, and
committed versus uncommitted visibility with a follower held back.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable
from typing import Any

import pytest

from spark_stream.errors import (
    CorruptFrameError,
    InvalidRequestError,
    NotEnoughReplicasError,
    NotLeaderError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    RequestTimeoutError,
    UnknownPartitionError,
    UnknownTopicError,
)
from spark_stream.protocol import Acks, ApiKey, FetchOffsetsRequest, Isolation, ProduceRequest
from spark_stream.records import encode_records, now_us
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import (
    fetch_values,
    local_values,
    offsets,
    produce,
    run,
    stream_values,
    until,
    values,
)
from tests.spu.integration.client import RetryingProducer

pytestmark = pytest.mark.integration


async def partition_status(cluster: Any, name: str) -> Any:
    for part in await cluster.admin.list_partitions():
        if part.name == name:
            return part.status
    raise AssertionError(f"no partition {name}")


def test_produce_consume_across_partitions_both_isolations_and_bad_input(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        async with spu_cluster([1, 2, 3], spu_settings={"max_batch_bytes": 64 * 1024}) as cluster:
            await cluster.create_topic(
                "orders", partitions=2, replicationFactor=3, minInSyncReplicas=2
            )
            for partition in (0, 1):
                leader = await cluster.leader_of(f"orders-{partition}")
                conn = await cluster.connect(leader)
                sent = [f"p{partition}-{i}" for i in range(6)]
                for i in range(0, 6, 3):
                    reply = await produce(conn, "orders", partition, sent[i : i + 3], acks=Acks.ALL)
                    assert reply.base_offset == i and reply.hw == i + 3
                assert await fetch_values(conn, "orders", partition) == values(*sent)
                assert await fetch_values(
                    conn, "orders", partition, 4, Isolation.UNCOMMITTED
                ) == values(*sent[4:])
                # A stream from offset 2 gets what is there, then what is produced later.
                streamed = asyncio.create_task(stream_values(conn, "orders", partition, 2, count=6))
                await produce(conn, "orders", partition, ["late-1", "late-2"], acks=Acks.ALL)
                got, pushes = await streamed
                assert got == values(*sent[2:], "late-1", "late-2")
                assert pushes[-1].hw == 8
                # Followers answer NotLeaderError.
                follower = next(i for i in cluster.spu_ids if i != leader)
                with pytest.raises(NotLeaderError):
                    await produce(await cluster.connect(follower), "orders", partition, ["x"])

            leader = await cluster.leader_of("orders-0")
            conn = await cluster.connect(leader)
            # Timestamps: the first offset at or after a time.
            base = (await offsets(conn, "orders", 0)).leo
            later = now_us() + 3600 * 10**6  # after every record produced so far
            frame = encode_records(["t1", "t2", "t3"], timestamps=[later, later + 2, later + 4])
            await produce(conn, "orders", 0, [], frame=frame, acks=Acks.ALL)
            reply = await conn.call(FetchOffsetsRequest("orders", 0, timestamp_us=later + 1))
            assert reply.offset == base + 1  # type: ignore[attr-defined]
            # Bad input: typed errors, and the SPU keeps serving.
            with pytest.raises(CorruptFrameError):
                await produce(conn, "orders", 0, [], frame=b"\x00" * 80)
            damaged = bytearray(encode_records(["ok"]))
            damaged[-3] ^= 0x55
            with pytest.raises(CorruptFrameError):
                await produce(conn, "orders", 0, [], frame=bytes(damaged))
            with pytest.raises(RecordTooLargeError):
                await produce(conn, "orders", 0, ["x" * 100_000])
            with pytest.raises(UnknownTopicError):
                await produce(conn, "nope", 0, ["x"])
            with pytest.raises(UnknownPartitionError):
                await produce(conn, "orders", 7, ["x"])
            with pytest.raises(OffsetOutOfRangeError):
                await fetch_values(conn, "orders", 0, 10_000)
            with pytest.raises(InvalidRequestError):
                await conn.request(
                    ApiKey.PRODUCE, {"topic": "orders", "partition": "zero"}, b"x", timeout=10
                )
            with pytest.raises(InvalidRequestError, match="no batch frames"):
                await conn.request(
                    ApiKey.PRODUCE, {"topic": "orders", "partition": 0}, b"", timeout=10
                )
            with pytest.raises(CorruptFrameError, match="truncated"):
                await conn.call(ProduceRequest("orders", 0, Acks.LEADER, 1000, b"j"), timeout=10)
            assert (await offsets(conn, "orders", 0)).leo == base + 3  # nothing bad appended
            assert all(spu.alive for spu in cluster.spus.values())

    run(body)


def test_leader_sigkill_loses_no_acknowledged_record(spu_cluster: ClusterFactory) -> None:
    async def body() -> None:
        async with spu_cluster([1, 2, 3], spu_settings={"replica_max_lag_ms": 2000}) as cluster:
            await cluster.create_topic(
                "events", partitions=1, replicationFactor=3, minInSyncReplicas=2
            )
            producer = RetryingProducer(cluster, "events", 0)
            first_leader = await cluster.leader_of("events-0")
            acked: list[int] = []
            total = 60

            async def produce_all() -> None:
                for seq in range(total):
                    frame = encode_records([f"r{seq}"], producer_id=77, sequence=seq)
                    await producer.send(frame, Acks.ALL)  # same frame until acknowledged
                    acked.append(seq)

            task = asyncio.create_task(produce_all())
            await until(lambda: len(acked) >= 20 or task.done(), what="20 acknowledged")
            await cluster.kill_spu(first_leader)
            await task
            assert acked == list(range(total))
            new_leader = await cluster.leader_of("events-0", not_in={first_leader})
            conn = await cluster.connect(new_leader)
            # Every acknowledged record, once, in order (retries across the leader change
            # were deduplicated by producer id and sequence).
            expected = values(*(f"r{i}" for i in range(total)))
            assert await fetch_values(conn, "events", 0) == expected
            got, _ = await stream_values(conn, "events", 0, 0, count=total)
            assert got == expected
            # The killed leader comes back as a follower: NotLeaderError, and it catches up.
            await cluster.start_spu(first_leader)
            old = await cluster.connect(first_leader)
            await until(lambda: _fetch_is_not_leader(old), what="old leader answers NotLeader")
            status = await until(
                lambda: _in_sync(cluster, "events-0", first_leader), what="old leader in sync"
            )
            assert status.hw == total

    run(body)


async def _fetch_is_not_leader(conn: Any) -> bool:
    try:
        await offsets(conn, "events", 0)
    except NotLeaderError:
        return True
    return False


async def _in_sync(cluster: Any, name: str, spu_id: int) -> Any:
    status = await partition_status(cluster, name)
    replica = status.replica(spu_id)
    return status if replica is not None and replica.in_sync else None


def test_follower_sigkill_does_not_stall_the_high_watermark(spu_cluster: ClusterFactory) -> None:
    async def body() -> None:
        async with spu_cluster([1, 2, 3], spu_settings={"replica_max_lag_ms": 2000}) as cluster:
            await cluster.create_topic(
                "clicks", partitions=1, replicationFactor=3, minInSyncReplicas=2
            )
            leader = await cluster.leader_of("clicks-0")
            follower = next(i for i in cluster.spu_ids if i != leader)
            conn = await cluster.connect(leader)
            await produce(conn, "clicks", 0, ["a", "b"], acks=Acks.ALL)
            await cluster.kill_spu(follower)
            for i in range(5):  # the other follower keeps the in-sync set at 2
                reply = await produce(conn, "clicks", 0, [f"c{i}"], acks=Acks.ALL)
                assert reply.hw == reply.leo == 3 + i
            # The SC hears of it through the leader's live replica status.
            await until(
                lambda: _out_of_sync(cluster, "clicks-0", follower, hw=7),
                what="follower reported out of sync at hw 7",
            )
            # Back from the dead: its storage is reattached and it catches up.
            await cluster.start_spu(follower)
            await until(lambda: _in_sync(cluster, "clicks-0", follower), what="follower back")
            await produce(conn, "clicks", 0, ["d"], acks=Acks.ALL)
            assert await fetch_values(conn, "clicks", 0) == values(
                "a", "b", *(f"c{i}" for i in range(5)), "d"
            )

    run(body)


async def _out_of_sync(cluster: Any, name: str, spu_id: int, hw: int) -> bool:
    status = await partition_status(cluster, name)
    replica = status.replica(spu_id)
    return replica is not None and not replica.in_sync and status.hw == hw


def test_spu_restart_reattaches_its_storage(spu_cluster: ClusterFactory) -> None:
    async def body() -> None:
        async with spu_cluster([1]) as cluster:
            await cluster.create_topic("logs", partitions=2, replicationFactor=1)
            conn = await cluster.connect(1)
            for partition in (0, 1):
                await produce(conn, "logs", partition, [f"{partition}-a", f"{partition}-b"])
            for sig in (signal.SIGTERM, signal.SIGKILL):
                cluster.spus[1].kill(sig)
                await cluster.start_spu(1)
                conn = await cluster.connect(1)
                for partition in (0, 1):
                    got = await until(
                        lambda p=partition, c=conn: fetch_values(c, "logs", p),
                        what=f"logs-{partition} served again",
                    )
                    assert got == values(f"{partition}-a", f"{partition}-b")
            reply = await produce(conn, "logs", 0, ["after"])
            assert reply.base_offset == 2

    run(body)


def test_committed_and_uncommitted_visibility_with_a_held_back_follower(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        async with spu_cluster(
            [1, 2], heartbeat_timeout_s=30.0, spu_settings={"replica_max_lag_ms": 5000}
        ) as cluster:
            await cluster.create_topic(
                "audit", partitions=1, replicationFactor=2, minInSyncReplicas=2
            )
            leader = await cluster.leader_of("audit-0")
            follower = next(i for i in cluster.spu_ids if i != leader)
            conn = await cluster.connect(leader)
            await produce(conn, "audit", 0, ["committed"], acks=Acks.ALL)
            pid = cluster.spus[follower].pid
            assert pid is not None
            # Alive and connected but replicating nothing, for less than replica_max_lag_ms.
            os.kill(pid, signal.SIGSTOP)
            try:
                await produce(conn, "audit", 0, ["pending"], acks=Acks.LEADER)
                assert await fetch_values(conn, "audit", 0) == values("committed")
                assert await fetch_values(conn, "audit", 0, 0, Isolation.UNCOMMITTED) == values(
                    "committed", "pending"
                )
                # A local fetch names the same bounded range of the segment file.
                assert await local_values(conn, "audit", 0) == values("committed")
                assert await local_values(conn, "audit", 0, 1) == []
                assert await local_values(conn, "audit", 0, 0, Isolation.UNCOMMITTED) == values(
                    "committed", "pending"
                )
                with pytest.raises(RequestTimeoutError):
                    await produce(conn, "audit", 0, ["waits"], acks=Acks.ALL, timeout_ms=300)
            finally:
                os.kill(pid, signal.SIGCONT)
            everything = values("committed", "pending", "waits")
            await until(
                lambda: _equals(fetch_values(conn, "audit", 0), everything),
                what="committed once the follower caught up",
            )
            # A dead follower, once evicted, leaves too few in-sync replicas for acks=all.
            await cluster.kill_spu(follower)
            await until(lambda: _acks_all_refused(conn), what="acks=all refused")
            reply = await produce(conn, "audit", 0, ["alone"], acks=Acks.LEADER)
            # only the leader in sync, below minInSyncReplicas: appended, not committed
            assert reply.hw < reply.leo

    run(body)


async def _equals(value: Awaitable[Any], expected: Any) -> bool:
    return bool(await value == expected)


async def _acks_all_refused(conn: Any) -> bool:
    """True once ``acks=all`` fails with ``NotEnoughReplicasError`` (success: not yet)."""
    try:
        await produce(conn, "audit", 0, ["x"], acks=Acks.ALL, timeout_ms=500)
    except NotEnoughReplicasError:
        return True
    return False


def test_spus_keep_serving_without_the_sc_and_reconnect_to_it(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        async with spu_cluster([1, 2]) as cluster:
            await cluster.create_topic("metrics", partitions=1, replicationFactor=2)
            leader = await cluster.leader_of("metrics-0")
            conn = await cluster.connect(leader)
            await produce(conn, "metrics", 0, ["before"], acks=Acks.ALL)
            cluster.sc.kill(signal.SIGKILL)
            # The data plane does not need the SC: produce (replicated) and consume go on.
            reply = await produce(conn, "metrics", 0, ["during"], acks=Acks.ALL)
            assert reply.hw == 2
            await cluster.restart_sc()
            await cluster.wait_online({1, 2})
            await cluster.create_topic("fresh", partitions=1, replicationFactor=2)
            fresh = await cluster.connect(await cluster.leader_of("fresh-0"))
            await produce(fresh, "fresh", 0, ["new"], acks=Acks.ALL)
            assert await fetch_values(fresh, "fresh", 0) == values("new")
            assert await fetch_values(conn, "metrics", 0) == values("before", "during")

    run(body)
