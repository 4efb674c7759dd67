"""The sender's failover ordering, against two in-process fake leaders on loopback.

Leader A refuses every produce with ``NotLeaderError`` (the earliest frame's refusal
arrives last) and, on the first one, the metadata moves the partition to leader B.
B keeps an idempotent producer table like the SPU's: a producer id it does not know
may start at any sequence. If a later frame
reached B before the earlier frames' retries, B would take it as the producer's start
and drop the earlier ones as duplicates. The sender must deliver in sequence order.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa
import pytest

from spark_stream.client.config import ProducerConfig
from spark_stream.client.leader import LeaderClient
from spark_stream.client.metadata import MetadataWatcher
from spark_stream.client.pool import ConnectionPool
from spark_stream.client.producer.producer import AsyncTopicProducer
from spark_stream.errors import (
    DuplicateSequenceError,
    NotLeaderError,
    OutOfOrderSequenceError,
)
from spark_stream.models import (
    IngressAddr,
    Partition,
    PartitionSpec,
    PartitionStatus,
    PublicEndpoint,
    Spu,
    SpuSpec,
    SpuStatus,
    Topic,
    TopicSpec,
)
from spark_stream.net.server import ConnContext, Server
from spark_stream.protocol import ApiKey, ProduceRequest, ProduceResponse, Request
from spark_stream.protocol.control import MetadataUpdate
from spark_stream.records import decode_frames, iter_frames

pytestmark = pytest.mark.integration


def metadata(revision: int, ports: dict[int, int], leader: int) -> MetadataUpdate:
    spus = [
        Spu.new(
            f"spu-{i}",
            SpuSpec(
                spu_id=i,
                public_endpoint=PublicEndpoint(
                    port=port, ingress=(IngressAddr(hostname="127.0.0.1"),)
                ),
            ),
            SpuStatus(resolution="Online"),
        )
        for i, port in ports.items()
    ]
    topic = Topic.new("t", TopicSpec(partitions=1, replication_factor=2))
    part = Partition.new(
        "t",
        0,
        PartitionSpec(initial_leader=1, replicas=(1, 2)),
        PartitionStatus(resolution="Online", leader=leader),
    )
    return MetadataUpdate(
        True, revision, [s.to_dict() for s in spus], [topic.to_dict()], [part.to_dict()]
    )


class IdempotentLeader:
    """B: appends in sequence order, drops duplicates, refuses gaps (like the SPU)."""

    def __init__(self) -> None:
        self.log: list[bytes] = []
        self.arrivals: list[int] = []
        self.expected: int | None = None

    async def produce(self, request: Request, ctx: ConnContext) -> ProduceResponse:
        msg = request.message()
        assert isinstance(msg, ProduceRequest)
        base = len(self.log)
        for header, frame in iter_frames(request.tail):
            self.arrivals.append(header.sequence)
            end = header.sequence + header.record_count
            if self.expected is not None and end <= self.expected:
                raise DuplicateSequenceError(f"sequence {header.sequence} already appended")
            if self.expected is not None and header.sequence != self.expected:
                raise OutOfOrderSequenceError(f"expected {self.expected}, got {header.sequence}")
            self.log.append(bytes(frame))
            self.expected = end
        return ProduceResponse(base, len(self.log), len(self.log))


def test_failover_retries_keep_sequence_order() -> None:
    async def main() -> tuple[IdempotentLeader, list[Any]]:
        watcher = MetadataWatcher(connect=None)  # type: ignore[arg-type]  # fed by hand
        b_leader = IdempotentLeader()
        ports: dict[int, int] = {}

        async def refuse(request: Request, ctx: ConnContext) -> None:
            if watcher.view.leader("t", 0).spu_id == 1:  # type: ignore[union-attr]
                watcher.view.apply(metadata(2, ports, leader=2))
            first = next(iter_frames(request.tail))[0].sequence == 0
            if first:  # the earliest frame's refusal comes last (handlers run concurrently)
                await asyncio.sleep(0.3)
            raise NotLeaderError("partition t-0 moved to SPU 2")

        a = Server({ApiKey.PRODUCE: refuse}, host="127.0.0.1", port=0, name="a")
        b = Server({ApiKey.PRODUCE: b_leader.produce}, host="127.0.0.1", port=0, name="b")
        async with a, b:
            ports.update({1: a.port, 2: b.port})
            watcher.view.apply(metadata(1, ports, leader=1))
            pool = ConnectionPool()
            config = ProducerConfig(
                idempotence=True,
                producer_id=7,
                batch_size=200,
                linger_ms=0,
                max_in_flight=5,
                retry_backoff_ms=5,
            )
            producer = AsyncTopicProducer("t", config, watcher, LeaderClient(watcher, pool))
            table = pa.table({"value": [f"v{i:03d}" for i in range(200)]})
            future = await producer.send_batch(table, partition=0)
            results = await future
            await producer.close()
            await pool.close()
        return b_leader, results

    b_leader, results = asyncio.run(main())
    assert len(results) > 5  # many frames were in flight when A refused them
    assert all(r.base_offset >= 0 for r in results)  # none dropped as a "duplicate"
    sequences = [r.base_offset for r in results]
    assert sequences == sorted(sequences)
    assert b_leader.arrivals[0] == 0  # B saw the producer's first frame first
    values = [
        v
        for batch in decode_frames(b"".join(b_leader.log))
        for v in batch.column("value").to_pylist()
    ]
    assert values == [f"v{i:03d}".encode() for i in range(200)]


def test_at_linger_0_an_idle_partition_sends_at_once_and_a_burst_shares_a_frame() -> None:
    """The first record to an idle partition is its own request, started by ``send``
    itself (no turn of the sender's tasks first); the records sent while it is in flight
    wait for the worker and go out together, not one frame each."""

    async def main() -> tuple[list[int], int]:
        watcher = MetadataWatcher(connect=None)  # type: ignore[arg-type]  # fed by hand
        frames: list[int] = []

        async def produce(request: Request, ctx: ConnContext) -> ProduceResponse:
            msg = request.message()
            assert isinstance(msg, ProduceRequest)
            base = sum(frames)
            frames.extend(header.record_count for header, _ in iter_frames(request.tail))
            return ProduceResponse(base, sum(frames), sum(frames))

        async with Server({ApiKey.PRODUCE: produce}, host="127.0.0.1", port=0) as leader:
            watcher.view.apply(metadata(1, {1: leader.port, 2: leader.port}, leader=1))
            pool = ConnectionPool()
            config = ProducerConfig(linger_ms=0)
            producer = AsyncTopicProducer("t", config, watcher, LeaderClient(watcher, pool))
            await (await producer.send(None, b"warm-up", partition=0))  # starts the worker
            first = await producer.send(None, b"0", partition=0)
            started = len(producer._sender._delivering)  # before this task yields once
            rest = [await producer.send(None, b"%d" % i, partition=0) for i in range(1, 50)]
            for future in [first, *rest]:
                await future
            await producer.close()
            await pool.close()
        return frames, started

    frames, started = asyncio.run(main())
    assert started == 1
    assert frames == [1, 1, 49]
