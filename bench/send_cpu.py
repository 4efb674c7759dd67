"""Client-only CPU of the per-record produce path and of one small frame's round trip.

For PROFILING only (integration tests use real servers): the producer runs on its own
event loop against a fake leader that answers every produce at once, so the figures are
the client's CPU (``time.process_time``) and do not depend on a loaded machine.

- ``send_us_per_record``: ``append_record`` of 100 B values, batch_size 1 MiB, linger 2 ms
  (as ``bench.cluster``'s ``send_100b`` run), flushed: partitioning, the append, sealing,
  encoding and settling, per record.
- ``blocking_send_us_per_record``: the same through the blocking ``TopicProducer.send``
  (what ``bench.cluster`` calls), its sender on the client's loop thread: both threads'
  CPU, so the GIL hand-offs between them count.
- ``single_us_per_record``: linger 0, one record sent and its delivery awaited before the
  next (as ``bench.cluster``'s e2e run), plus decoding its frame as a consumer does.

    .venv/bin/python -m bench.send_cpu [--records 200000] [--single 5000] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import time
from collections.abc import Callable
from typing import Any

from spark_stream.client._blocking import LoopThread
from spark_stream.client.config import ProducerConfig
from spark_stream.client.metadata import MetadataView
from spark_stream.client.producer.producer import AsyncTopicProducer
from spark_stream.client.sync import TopicProducer
from spark_stream.models import (
    IngressAddr,
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    PublicEndpoint,
    Spu,
    SpuResolution,
    SpuSpec,
    SpuStatus,
    Topic,
    TopicSpec,
)
from spark_stream.protocol import Message, ProduceRequest, ProduceResponse
from spark_stream.protocol.control import MetadataUpdate
from spark_stream.records import decode_frames

TOPIC = "bench"


class _FakeWatcher:
    """A metadata watcher whose view holds one topic of one partition led by SPU 1."""

    def __init__(self) -> None:
        self.view = MetadataView()
        ep = PublicEndpoint(port=9, ingress=(IngressAddr(hostname="127.0.0.1"),))
        online = SpuStatus(resolution=SpuResolution.ONLINE)
        spu = Spu.new("spu-1", SpuSpec(spu_id=1, public_endpoint=ep), online)
        topic = Topic.new(TOPIC, TopicSpec(partitions=1, replication_factor=1))
        part = Partition.new(
            TOPIC,
            0,
            PartitionSpec(initial_leader=1, replicas=(1,)),
            PartitionStatus(resolution=PartitionResolution.ONLINE, leader=1),
        )
        self.view.apply(
            MetadataUpdate(True, 1, [spu.to_dict()], [topic.to_dict()], [part.to_dict()])
        )


class _FakeLeaders:
    """Answers every produce at once; keeps the last request's frames (decoded by ``single``)."""

    def __init__(self, watcher: _FakeWatcher) -> None:
        self.watcher = watcher
        self.offset = 0
        self.last: list[bytes] = []

    async def call(self, topic: str, partition: int, request: Message, *_: Any, **__: Any) -> Any:
        assert isinstance(request, ProduceRequest)
        tail = request.tail  # the sender passes its frames as a list of bytes
        self.last = [p for p in tail if isinstance(p, bytes)] if isinstance(tail, list) else []
        base = self.offset
        self.offset += 1
        return ProduceResponse(base, self.offset, self.offset)


def _producer(**options: Any) -> tuple[AsyncTopicProducer, _FakeLeaders]:
    watcher = _FakeWatcher()
    leaders = _FakeLeaders(watcher)
    config = ProducerConfig(**options)
    return AsyncTopicProducer(TOPIC, config, watcher, leaders), leaders  # type: ignore[arg-type]


async def send_many(records: int) -> float:
    """Client CPU µs per record of ``records`` 100 B sends (bench.cluster's settings)."""
    producer, _ = _producer(batch_size=1 << 20, linger_ms=2)
    value = bytes(100)
    start = time.process_time()
    for _ in range(records):
        producer.append_record(None, value, partition=0)
    await producer.flush()
    elapsed = time.process_time() - start
    await producer.close()
    return elapsed / records * 1e6


def send_blocking(records: int) -> float:
    """Client CPU µs per record of ``records`` 100 B blocking sends (both threads)."""
    runner = LoopThread("bench-send")
    try:

        async def build() -> AsyncTopicProducer:
            return _producer(batch_size=1 << 20, linger_ms=2)[0]

        producer = TopicProducer(runner.run(build()), runner)
        send = producer.send
        value = bytes(100)
        start = time.process_time()
        for _ in range(records):
            send(None, value, partition=0)
        producer.flush()
        elapsed = time.process_time() - start
        producer.close()
    finally:
        runner.stop()
    return elapsed / records * 1e6


async def send_single(records: int) -> float:
    """Client CPU µs per record sent alone at linger 0, delivered, and its frame decoded."""
    producer, leaders = _producer(linger_ms=0)
    value = bytes(8)
    start = time.process_time()
    for _ in range(records):
        future = await producer.send(None, value, partition=0)
        await future
        for frame in leaders.last:
            decode_frames(frame)
    elapsed = time.process_time() - start
    await producer.close()
    return elapsed / records * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000, help="records of send_many")
    parser.add_argument("--single", type=int, default=5_000, help="records of send_single")
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile")
    args = parser.parse_args()
    results: dict[str, float] = {}
    profile = cProfile.Profile() if args.profile else None
    runs: tuple[tuple[str, Callable[[int], float], int], ...] = (
        ("send_us_per_record", lambda n: asyncio.run(send_many(n)), args.records),
        ("blocking_send_us_per_record", send_blocking, args.records),
        ("single_us_per_record", lambda n: asyncio.run(send_single(n)), args.single),
    )
    for name, run, count in runs:
        best = min(run(count) for _ in range(3))
        results[name] = round(best, 3)
        if profile is not None:
            profile.enable()
            run(count)
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(18)
            profile = cProfile.Profile()
    for key, value in results.items():
        print(f"{key:28s} {value}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
