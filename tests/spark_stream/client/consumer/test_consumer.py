"""Consumers against a real cluster: start positions, isolation, merging, stopping."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.client.consumer.consumer import CONSUMER_SCHEMA
from spark_stream.client.consumer.local_files import LocalFiles
from spark_stream.errors import InvalidConfigError, OffsetOutOfRangeError, UnknownPartitionError
from spark_stream.records import iter_frames
from tests.integration.helpers import make_topic

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def topic(fluvio: Fluvio) -> str:
    """A 2-partition topic holding v0..v9 in partition 0 and w0..w4 in partition 1."""
    name = make_topic(fluvio, partitions=2, replication=2)
    producer = fluvio.topic_producer(name, acks="all")
    producer.send_batch(pa.table({"value": [f"v{i}" for i in range(10)]}), partition=0)
    producer.send_batch(pa.table({"value": [f"w{i}" for i in range(5)]}), partition=1)
    producer.close()
    return name


def values(stream: object) -> list[str]:
    return [r.value.decode() for r in stream]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (Offset.beginning(), [f"v{i}" for i in range(10)]),
        (Offset.absolute(7), ["v7", "v8", "v9"]),
        (Offset.from_end(2), ["v8", "v9"]),
        (Offset.from_beginning(9), ["v9"]),
        (Offset.end(), []),
    ],
)
def test_start_positions(fluvio: Fluvio, topic: str, offset: Offset, expected: list[str]) -> None:
    consumer = fluvio.partition_consumer(topic, 0)
    assert values(consumer.stream(offset, stop_at_end=True)) == expected


def test_end_offset_and_records_fields(fluvio: Fluvio, topic: str) -> None:
    consumer = fluvio.partition_consumer(topic, 0)
    records = list(consumer.stream(Offset.absolute(2), end_offset=5))
    assert [(r.partition, r.offset, r.value) for r in records] == [
        (0, 2, b"v2"),
        (0, 3, b"v3"),
        (0, 4, b"v4"),
    ]
    assert all(r.key is None and r.timestamp_us > 0 for r in records)


def test_timestamp_start(fluvio: Fluvio) -> None:
    name = make_topic(fluvio)
    producer = fluvio.topic_producer(name)
    producer.send_batch(pa.table({"value": ["old"], "timestamp": pa.array([1_000], pa.int64())}))
    producer.send_batch(pa.table({"value": ["new"], "timestamp": pa.array([9_000], pa.int64())}))
    producer.flush()
    assert fluvio.offset_for_timestamp(name, 0, 5_000) == 1
    with pytest.raises(InvalidConfigError, match="timestamp_us .* looks like nanoseconds"):
        fluvio.offset_for_timestamp(name, 0, time.time_ns())
    consumer = fluvio.partition_consumer(name, 0)
    assert values(consumer.stream(Offset.from_timestamp(5_000), stop_at_end=True)) == ["new"]


def test_multi_partition_merge_keeps_order_per_partition(fluvio: Fluvio, topic: str) -> None:
    records = list(fluvio.consumer(topic).stream(Offset.beginning(), stop_at_end=True))
    by_part = {p: [r.value.decode() for r in records if r.partition == p] for p in (0, 1)}
    assert by_part == {0: [f"v{i}" for i in range(10)], 1: [f"w{i}" for i in range(5)]}


def test_batches_carry_partition_and_offsets(fluvio: Fluvio, topic: str) -> None:
    batches = list(fluvio.consumer(topic, [1]).stream_batches(Offset.beginning(), stop_at_end=True))
    table = pa.Table.from_batches(batches)
    assert table.schema == CONSUMER_SCHEMA
    assert table.column("partition").to_pylist() == [1] * 5
    assert table.column("offset").to_pylist() == list(range(5))


def test_uncommitted_and_committed_see_the_same_when_replicated(fluvio: Fluvio, topic: str) -> None:
    consumer = fluvio.partition_consumer(topic, 1)
    committed = values(consumer.stream(Offset.beginning(), stop_at_end=True))
    uncommitted = values(
        consumer.stream(Offset.beginning(), isolation="uncommitted", stop_at_end=True)
    )
    assert committed == uncommitted == [f"w{i}" for i in range(5)]


def test_live_stream_sees_new_records(fluvio: Fluvio) -> None:
    name = make_topic(fluvio)
    consumer = fluvio.partition_consumer(name, 0)
    stream = consumer.stream(Offset.end())
    got: list[bytes] = []

    def read() -> None:
        for record in stream:
            got.append(record.value)
            if len(got) == 3:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    producer = fluvio.topic_producer(name, linger_ms=0)
    deadline = time.monotonic() + 30
    i = 0
    while reader.is_alive() and time.monotonic() < deadline:
        producer.send(None, f"live{i}").result(10)
        i += 1
        reader.join(0.2)
    stream.close()
    reader.join(10)
    assert len(got) == 3 and got[0].startswith(b"live")


def test_fetch_batches_exact_range_and_frames(fluvio: Fluvio, topic: str) -> None:
    table = pa.Table.from_batches(list(fluvio.fetch_batches(topic, 0, 3, 6)))
    assert table.column("offset").to_pylist() == [3, 4, 5]
    assert table.column("value").to_pylist() == [b"v3", b"v4", b"v5"]
    no_offsets = list(fluvio.fetch_batches(topic, 0, 0, 2, with_offsets=False))
    assert no_offsets[0].schema.names == ["key", "value", "timestamp", "headers"]
    assert fluvio.fetch_offsets(topic, 0) == (0, 10, 10)


def test_bad_positions_are_typed_errors(fluvio: Fluvio, topic: str) -> None:
    consumer = fluvio.partition_consumer(topic, 0)
    with pytest.raises(OffsetOutOfRangeError):
        list(consumer.stream(Offset.absolute(50), stop_at_end=True))
    with pytest.raises(OffsetOutOfRangeError):
        list(fluvio.fetch_frames(topic, 0, 99))
    with pytest.raises(UnknownPartitionError):
        fluvio.partition_consumer(topic, 9)


@pytest.mark.parametrize("local", [True, False])
def test_one_rule_past_the_end(fluvio: Fluvio, topic: str, local: bool) -> None:
    """A start past the LEO is ``OffsetOutOfRangeError`` on every path (fetch of frames or
    batches, with or without an end, local files or network, a stream); a start at the
    end is valid and reads nothing yet (Kafka's rule, docs/decisions.md)."""
    assert fluvio.fetch_offsets(topic, 0) == (0, 10, 10)
    past: list[tuple[str, object]] = [
        ("fetch_frames", lambda: list(fluvio.fetch_frames(topic, 0, 15))),
        ("fetch_batches", lambda: list(fluvio.fetch_batches(topic, 0, 15, local=local))),
        ("fetch_batches to", lambda: list(fluvio.fetch_batches(topic, 0, 15, 20, local=local))),
        (
            "stream",
            lambda: list(
                fluvio.partition_consumer(topic, 0).stream(Offset.absolute(15), stop_at_end=True)
            ),
        ),
    ]
    outcomes = {}
    for name, read in past:
        try:
            outcomes[name] = read()  # type: ignore[operator]
        except OffsetOutOfRangeError as exc:
            outcomes[name] = type(exc)
    assert outcomes == {name: OffsetOutOfRangeError for name, _ in past}
    assert list(fluvio.fetch_frames(topic, 0, 10)) == []
    assert list(fluvio.fetch_batches(topic, 0, 10, local=local)) == []
    at_end = fluvio.partition_consumer(topic, 0).stream(Offset.absolute(10), stop_at_end=True)
    assert list(at_end) == []


def test_fetch_batches_reads_the_leaders_files_from_this_host(fluvio: Fluvio, topic: str) -> None:
    fluvio.core.local_files.close()
    fluvio.core.local_files = LocalFiles()
    local = pa.Table.from_batches(list(fluvio.fetch_batches(topic, 0, 2, 9)))
    assert fluvio.core.local_files.open_files  # the leader's segment, opened here
    network = pa.Table.from_batches(list(fluvio.fetch_batches(topic, 0, 2, 9, local=False)))
    assert local.column("offset").to_pylist() == list(range(2, 9))
    assert local.equals(network)


class ElsewhereFiles(LocalFiles):
    """Files as another host sees them: the path the leader names holds another file."""

    def read(
        self,
        path: str,
        position: int,
        length: int,
        device: int,
        inode: int,
        *,
        mapped: bool = False,
    ) -> memoryview | bytes | None:
        return super().read(path, position, length, device, inode + 1, mapped=mapped)


def test_fetch_batches_falls_back_to_the_network_when_the_files_are_elsewhere(
    fluvio: Fluvio, topic: str
) -> None:
    fluvio.core.local_files = ElsewhereFiles()
    try:
        table = pa.Table.from_batches(list(fluvio.fetch_batches(topic, 1, 0, 5)))
        assert fluvio.core.local_files.open_files == ()
    finally:
        fluvio.core.local_files = LocalFiles()
    assert table.column("value").to_pylist() == [f"w{i}".encode() for i in range(5)]


class DamagedFiles(LocalFiles):
    """A local read whose second frame comes back damaged (as if truncated and rewritten
    under a reader): the frames before it are good, the rest must come from the leader."""

    def read(
        self,
        path: str,
        position: int,
        length: int,
        device: int,
        inode: int,
        *,
        mapped: bool = False,
    ) -> memoryview | bytes | None:
        data = super().read(path, position, length, device, inode, mapped=mapped)
        assert data is not None
        frames = [frame for _, frame in iter_frames(data, check_crc=False)]
        if len(frames) < 2:
            return data
        damaged = bytearray(data)
        damaged[len(frames[0]) + len(frames[1]) - 1] ^= 0xFF
        return bytes(damaged)


def test_a_damaged_local_read_resumes_over_the_network_without_gaps(fluvio: Fluvio) -> None:
    name = make_topic(fluvio)
    producer = fluvio.topic_producer(name, acks="all")
    for part in range(4):  # four frames
        producer.send_batch(pa.table({"value": [f"f{part}-{i}" for i in range(5)]}), partition=0)
        producer.flush()
    producer.close()
    fluvio.core.local_files = DamagedFiles()
    try:
        table = pa.Table.from_batches(list(fluvio.fetch_batches(name, 0, 2, 20)))
    finally:
        fluvio.core.local_files = LocalFiles()
    assert table.column("offset").to_pylist() == list(range(2, 20))
    assert table.column("value").to_pylist() == [
        f"f{i // 5}-{i % 5}".encode() for i in range(2, 20)
    ]
