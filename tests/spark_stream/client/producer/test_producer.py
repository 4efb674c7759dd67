"""The producer against a real cluster: partitioning, acks, compression, idempotence."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pyarrow as pa
import pytest

from spark_stream.client import Fluvio, FluvioAsync, Offset, fnv1a_32, producer_id_for
from spark_stream.errors import InvalidConfigError, UnknownPartitionError, UnknownTopicError
from spark_stream.local.cluster import LocalCluster
from spark_stream.records import read_header
from tests.integration.helpers import make_topic

pytestmark = pytest.mark.integration


def read_all(fluvio: Fluvio, topic: str, partition: int, isolation: str = "committed") -> pa.Table:
    batches = list(fluvio.fetch_batches(topic, partition, 0, isolation=isolation))
    return pa.Table.from_batches(batches) if batches else pa.table({})


def test_keyed_records_land_on_their_hash_partition(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=3, replication=2)
    producer = fluvio.topic_producer(topic, acks="all")
    keys = [f"user-{i}".encode() for i in range(60)]
    futures = [producer.send(k, b"v-" + k) for k in keys]
    producer.flush()
    metas = [f.result(10) for f in futures]
    assert [m.partition for m in metas] == [fnv1a_32(k) % 3 for k in keys]
    for part in range(3):
        table = read_all(fluvio, topic, part)
        expected = [k for k in keys if fnv1a_32(k) % 3 == part]
        assert table.column("key").to_pylist() == expected
        assert table.column("offset").to_pylist() == list(range(len(expected)))
        got = {m.offset for m in metas if m.partition == part}
        assert got == set(range(len(expected)))


def test_bulk_send_batch_across_partitions_both_isolations(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=2, replication=3)
    n = 5000
    keys = pa.array([f"k{i % 97}" for i in range(n)])
    values = pa.array([f"value-{i}" for i in range(n)])
    producer = fluvio.topic_producer(topic, batch_size=16 * 1024, acks="all")
    result = producer.send_batch(pa.table({"key": keys, "value": values})).result(30)
    assert sum(m.count for m in result) == n
    assert len(result) > 2  # cut into several frames by batch_size
    total = 0
    for part in range(2):
        committed = read_all(fluvio, topic, part)
        uncommitted = read_all(fluvio, topic, part, "uncommitted")
        assert committed.column("value").to_pylist() == uncommitted.column("value").to_pylist()
        values_here = [int(v.split(b"-")[1]) for v in committed.column("value").to_pylist()]
        assert values_here == sorted(values_here)  # order kept within the partition
        hashes = {fnv1a_32(k) % 2 for k in committed.column("key").to_pylist()}
        assert hashes <= {part}
        total += committed.num_rows
    assert total == n


def test_acks_all_with_replication_three_is_on_every_replica(
    fluvio: Fluvio, cluster: LocalCluster
) -> None:
    topic = make_topic(fluvio, partitions=1, replication=3, min_in_sync_replicas=2)
    producer = fluvio.topic_producer(topic, acks="all", linger_ms=0)
    metas = [producer.send(None, f"r{i}").result(30) for i in range(20)]
    assert [m.offset for m in metas] == list(range(20))
    offsets = fluvio.fetch_offsets(topic, 0)
    assert offsets.hw >= 20  # acknowledged under acks=all means committed
    info = fluvio.topic_partitions(topic)[0]
    assert len(info.replicas) == 3


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compressed_frames_round_trip(fluvio: Fluvio, codec: str) -> None:
    topic = make_topic(fluvio)
    producer = fluvio.topic_producer(topic, compression=codec)
    values = [b"x" * 500 + str(i).encode() for i in range(300)]
    producer.send_batch(pa.table({"value": values})).result(30)
    frames = list(fluvio.fetch_frames(topic, 0, 0))
    assert {read_header(f).compression for f in frames} == {codec}
    assert read_all(fluvio, topic, 0).column("value").to_pylist() == values


def test_a_topic_set_to_one_codec_is_what_its_producers_use(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, compression="zstd")
    fluvio.topic_producer(topic).send_batch(pa.table({"value": [b"a", b"b"]})).result(30)
    fluvio.topic_producer(topic, compression="zstd").send(None, b"c").result(30)
    frames = list(fluvio.fetch_frames(topic, 0, 0))
    assert {read_header(f).compression for f in frames} == {"zstd"}
    with pytest.raises(InvalidConfigError, match="stores zstd batches.*not lz4"):
        fluvio.topic_producer(topic, compression="lz4")
    assert read_all(fluvio, topic, 0).column("value").to_pylist() == [b"a", b"b", b"c"]


def test_retried_idempotent_batch_is_not_duplicated(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=2, replication=2)
    pid = producer_id_for("query", 7, 1)
    table = pa.table(
        {
            "key": [f"k{i}" for i in range(400)],
            "value": [f"v{i}" for i in range(400)],
        }
    )
    first = fluvio.topic_producer(
        topic, idempotence=True, producer_id=pid, batch_size=2048, acks="all"
    )
    first.send_batch(table).result(30)
    first.close()
    # A retried task: same identity, sequences from 0 again, same data.
    again = fluvio.topic_producer(
        topic, idempotence=True, producer_id=pid, batch_size=2048, acks="all"
    )
    again.send_batch(table).result(30)
    again.close()
    rows = sum(read_all(fluvio, topic, p).num_rows for p in range(2))
    assert rows == 400
    headers = [read_header(f) for p in range(2) for f in fluvio.fetch_frames(topic, p, 0)]
    assert {h.producer_id for h in headers} == {pid}


def test_explicit_partition_and_errors(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=2)
    producer = fluvio.topic_producer(topic)
    assert producer.send(b"k", b"v", partition=1).result(10).partition == 1
    with pytest.raises(UnknownPartitionError):
        producer.send(b"k", b"v", partition=5)
    with pytest.raises(InvalidConfigError):
        producer.send_batch(pa.table({"nope": [1]}))
    with pytest.raises(InvalidConfigError, match="send: timestamp_us .* looks like nanoseconds"):
        producer.send(b"k", b"v", timestamp_us=time.time_ns())
    with pytest.raises(UnknownTopicError):
        fluvio.topic_producer("no-such-topic")
    with pytest.raises(InvalidConfigError):
        fluvio.topic_producer(topic, acks="sometimes")


def test_async_producer_and_consumer(cluster: LocalCluster, fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=1)

    async def main() -> list[bytes]:
        async with await FluvioAsync.connect(cluster.endpoint) as client:
            producer = await client.topic_producer(topic, linger_ms=1)
            futures = [await producer.send(None, f"a{i}") for i in range(10)]
            batch = await producer.send_batch(pa.table({"value": ["b0", "b1"]}))
            await producer.flush()
            assert [(await f).offset for f in futures] == list(range(10))
            assert [m.base_offset for m in await batch] == [10]
            consumer = await client.partition_consumer(topic, 0)
            return [r.value async for r in consumer.stream(Offset.beginning(), stop_at_end=True)]

    values = asyncio.run(main())
    assert values == [f"a{i}".encode() for i in range(10)] + [b"b0", b"b1"]


def test_large_bulk_write_is_split_and_complete(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio)
    n = 200_000
    values = pa.array(np.arange(n).astype("S8").astype(object), pa.binary())
    producer = fluvio.topic_producer(topic, batch_size=256 * 1024)
    futures = [producer.send_batch(pa.table({"value": values}), partition=0) for _ in range(2)]
    producer.flush()
    metas = [m for f in futures for m in f.result(30)]
    assert len(metas) > 2 and sum(m.count for m in metas) == 2 * n
    assert [m.base_offset for m in metas] == sorted(m.base_offset for m in metas)
    assert fluvio.fetch_offsets(topic, 0).hw == 2 * n


def test_send_sees_metadata_updates_through_its_cached_partition_count(fluvio: Fluvio) -> None:
    # send() caches the partition count until the next metadata update: a partition
    # added after the first send is usable, and a deleted topic is refused.
    topic = make_topic(fluvio, partitions=1)
    producer = fluvio.topic_producer(topic, linger_ms=0)
    assert producer.send(None, b"first", partition=0).result(10).offset == 0
    with pytest.raises(UnknownPartitionError, match="partitions 0..0, not 1"):
        producer.send(None, b"v", partition=1)
    fluvio.admin().add_partitions(topic, 1)
    deadline = time.monotonic() + 30
    while len(fluvio.topic_partitions(topic)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # bounded wait for the SC to create the partition
    while time.monotonic() < deadline:
        try:
            meta = producer.send(None, b"second", partition=1).result(20)
            break
        except UnknownPartitionError:
            time.sleep(0.05)  # the producer's metadata watch has not seen it yet
    else:
        pytest.fail("partition 1 never became usable for send()")
    assert (meta.partition, meta.offset) == (1, 0)
    fluvio.admin().delete_topic(topic)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            producer.send(None, b"gone", partition=0)
        except UnknownTopicError:
            break
        time.sleep(0.05)  # the deletion has not reached the producer's view yet
    else:
        pytest.fail("send() kept accepting records for a deleted topic")
