"""Partitions added to a live topic: real Redis, SC and SPU processes.

``fluvio topic add-partition`` (and ``add_partitions``) grows a topic; a producer made
before the growth spreads new records over every partition, a consumer of all
partitions made after it reads them all, and a consumer-group member of the topic is
granted the new partition and reads it from its start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.local.cluster import LocalCluster
from tests.integration.helpers import make_topic, running_cluster, unique
from tests.polling import until, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("add-partitions")), spus=3) as running:
        yield running


@pytest.fixture(scope="module")
def fluvio(cluster: LocalCluster) -> Iterator[Fluvio]:
    client = Fluvio.connect(cluster.endpoint, timeout=20.0)
    try:
        yield client
    finally:
        client.close()


def cli(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLUVIO_ENDPOINT": cluster.endpoint}
    argv = [sys.executable, "-m", "spark_stream.cli", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_cli_adds_partitions_and_clients_spread_over_them(
    fluvio: Fluvio, cluster: LocalCluster
) -> None:
    topic = make_topic(fluvio, partitions=2, replication=2)
    producer = fluvio.topic_producer(topic, acks="all")  # made before the growth
    first = [producer.send(None, f"a{i}") for i in range(4)]
    assert sorted(f.result(30).partition for f in first) == [0, 0, 1, 1]

    grown = cli(cluster, "topic", "add-partition", topic, "-c", "2", "-O", "json")
    assert grown.returncode == 0, grown.stderr
    rows = json.loads(grown.stdout)
    assert [r["partition"] for r in rows] == [2, 3]
    assert all(len(r["replicas"]) == 2 and r["spu"] == r["replicas"][0] for r in rows)
    one = cli(cluster, "topic", "add-partition", topic)  # one more, by default
    assert one.returncode == 0, one.stderr
    assert f'added 1 partition(s) to topic "{topic}"' in one.stdout
    assert one.stdout.splitlines()[1].split() == ["PARTITION", "SPU", "REPLICAS"]
    assert one.stdout.splitlines()[2].split()[0] == "4"

    missing = cli(cluster, "topic", "add-partition", "no-such-topic")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error:") and "does not exist" in missing.stderr
    shrink = cli(cluster, "topic", "add-partition", topic, "-c", "0")
    assert shrink.returncode == 1 and "count: partitions can only be added" in shrink.stderr
    assert "Traceback" not in missing.stderr + shrink.stderr

    # The producer's metadata follows the topic: round robin now covers 5 partitions.
    wait_until(lambda: len(fluvio.topic_partitions(topic)) == 5, 30, "5 partitions known")
    later = [producer.send(None, f"b{i}") for i in range(10)]
    assert sorted(f.result(30).partition for f in later) == sorted(list(range(5)) * 2)
    producer.close()

    stream = fluvio.consumer(topic).stream(Offset.beginning(), stop_at_end=True)
    try:
        got = sorted((r.partition, r.offset, r.value.decode()) for r in stream)
    finally:
        stream.close()
    assert len(got) == 14
    assert {p for p, _, _ in got} == set(range(5))
    for p in range(5):  # each partition from offset 0, no gap
        offsets = [o for q, o, _ in got if q == p]
        assert offsets == list(range(len(offsets)))


def test_group_member_is_granted_the_added_partition(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=1, replication=2)
    producer = fluvio.topic_producer(topic, acks="all")
    producer.send_batch(pa.table({"value": ["p0-0", "p0-1", "p0-2"]}), partition=0).result()
    group = unique()

    async def scenario(core: FluvioAsync) -> list[tuple[int, int, str]]:
        member = await core.group_consumer(topic, group=group, auto_offset_reset="earliest")
        seen: list[tuple[int, int, str]] = []
        batches = member.stream_batches()
        try:

            async def read_until(count: int) -> None:
                while len(seen) < count:
                    batch = await batches.__anext__()
                    seen.extend(
                        zip(
                            batch.column("partition").to_pylist(),
                            batch.column("offset").to_pylist(),
                            [v.decode() for v in batch.column("value").to_pylist()],
                            strict=True,
                        )
                    )

            await read_until(3)
            assert member.assignment() == [(topic, 0)]
            await core.admin().add_partitions(topic, 1)
            # Records written to the new partition before the member is granted it are
            # read too: a partition new to the group starts at its log start (earliest).
            await core.watcher.wait_for(lambda v: v.partition_count(topic) == 2, 30.0)
            writer = await core.topic_producer(topic, acks="all")
            await writer.send_batch(pa.table({"value": ["p1-0", "p1-1"]}), partition=1)
            await writer.close()
            await until(lambda: member.assignment() == [(topic, 0), (topic, 1)], 30.0, "grant")
            await read_until(5)
            return seen
        finally:
            await batches.aclose()
            await member.close()

    seen = fluvio.run(scenario(fluvio.core), timeout=120)
    producer.close()
    assert sorted(seen) == [
        (0, 0, "p0-0"),
        (0, 1, "p0-1"),
        (0, 2, "p0-2"),
        (1, 0, "p1-0"),
        (1, 1, "p1-1"),
    ]


def test_consumer_of_all_partitions_follows_added_ones(fluvio: Fluvio) -> None:
    # ``fluvio consume TOPIC`` (all partitions, forever): a partition added while it runs
    # is streamed too, from its beginning, so nothing written to it is lost.
    topic = make_topic(fluvio, partitions=1, replication=1)

    async def scenario(core: FluvioAsync) -> list[tuple[int, int, str]]:
        consumer = await core.consumer(topic)
        seen: list[tuple[int, int, str]] = []
        writer = await core.topic_producer(topic, acks="all")

        async def read() -> None:
            async with contextlib.aclosing(consumer.stream(Offset.beginning())) as records:
                async for record in records:
                    seen.append((record.partition, record.offset, record.value.decode()))

        reader = asyncio.create_task(read())
        try:
            await writer.send_batch(pa.table({"value": ["a0", "a1"]}), partition=0)
            await until(lambda: len(seen) == 2, 30.0, "records of partition 0")
            await core.admin().add_partitions(topic, 1)
            await core.watcher.wait_for(lambda v: v.partition_count(topic) == 2, 30.0)
            await writer.send_batch(pa.table({"value": ["b0", "b1", "b2"]}), partition=1)
            await until(
                lambda: len(seen) == 5 or reader.done(), 30.0, "records of the added partition"
            )
            assert not reader.done(), reader.exception()
            assert len(seen) == 5, (seen, consumer.partitions)
            assert consumer.partitions == [0, 1]
            return seen
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            await writer.close()

    seen = fluvio.run(scenario(fluvio.core), timeout=120)
    assert sorted(seen) == [(0, 0, "a0"), (0, 1, "a1"), (1, 0, "b0"), (1, 1, "b1"), (1, 2, "b2")]
