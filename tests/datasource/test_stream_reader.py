"""The stream reader's offset decisions, against an in-memory cluster view (no Spark, no
sockets): visible ends, read limits, availableNow targets, new partitions, data loss."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
)

import datasource.reader as reader_module
from datasource.options import parse_reader_options
from datasource.partition import FluvioPartition
from datasource.reader import FluvioStreamReader
from spark_stream.client import PartitionInfo, PartitionOffsets
from spark_stream.errors import DataLossError, UnknownTopicError
from spark_stream.records import encode_records


@dataclass
class FakeCluster:
    """Topics -> per-partition (log_start, hw, leo), plus frames for byte limits."""

    topics: dict[str, list[PartitionOffsets]] = field(default_factory=dict)
    frame_records: int = 10
    endpoint: str = "127.0.0.1:9003"

    def topic_partitions(self, topic: str) -> list[PartitionInfo]:
        if topic not in self.topics:
            raise UnknownTopicError(topic)
        return [PartitionInfo(topic, i, 1, (1,)) for i in range(len(self.topics[topic]))]

    def fetch_offsets(self, topic: str, partition: int) -> PartitionOffsets:
        return self.topics[topic][partition]

    def admin(self) -> FakeCluster:
        return self

    def list_topics(self) -> list[str]:
        return sorted(self.topics)

    def fetch_frames(
        self, topic: str, partition: int, start: int, end: int, **_: object
    ) -> Iterator[memoryview]:
        base = start - start % self.frame_records
        while base < end:
            frame = encode_records([b"x" * 100] * self.frame_records, base_offset=base)
            yield memoryview(frame)
            base += self.frame_records


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fake = FakeCluster()
    monkeypatch.setattr(reader_module, "client_for", lambda endpoint, **_: fake)
    return fake


def _reader(**options: str) -> FluvioStreamReader:
    opts = parse_reader_options({"endpoint": "127.0.0.1:9003", **options}, "stream")
    return FluvioStreamReader(opts)


def test_initial_offset_latest_and_earliest(cluster: FakeCluster) -> None:
    cluster.topics["t"] = [PartitionOffsets(5, 20, 25), PartitionOffsets(0, 3, 3)]
    assert _reader(topic="t").initialOffset() == {"t": {"0": 20, "1": 3}}
    assert _reader(topic="t", startingOffsets="earliest").initialOffset() == {"t": {"0": 5, "1": 0}}
    assert _reader(topic="t", isolation="uncommitted").initialOffset() == {"t": {"0": 25, "1": 3}}


def test_latest_offset_is_the_high_watermark_and_never_moves_back(cluster: FakeCluster) -> None:
    cluster.topics["t"] = [PartitionOffsets(0, 40, 50)]
    reader = _reader(topic="t")
    assert reader.latestOffset({"t": {"0": 10}}, ReadAllAvailable()) == {"t": {"0": 40}}
    assert reader.latestOffset({"t": {"0": 45}}, ReadAllAvailable()) == {"t": {"0": 45}}
    assert _reader(topic="t", isolation="uncommitted").latestOffset(
        {"t": {"0": 10}}, ReadAllAvailable()
    ) == {"t": {"0": 50}}
    assert reader.reportLatestOffset() == {"t": {"0": 40}}


def test_read_limits(cluster: FakeCluster) -> None:
    cluster.topics["t"] = [PartitionOffsets(0, 100, 100), PartitionOffsets(0, 300, 300)]
    reader = _reader(topic="t", maxRecordsPerTrigger="40")
    assert reader.getDefaultReadLimit() == ReadMaxRows(40)
    start = {"t": {"0": 0, "1": 0}}
    assert reader.latestOffset(start, ReadMaxRows(40)) == {"t": {"0": 10, "1": 30}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 100, "1": 300}}
    assert reader.latestOffset(start, ReadMinRows(5)) == {"t": {"0": 100, "1": 300}}


def test_byte_limit_admits_whole_frames(cluster: FakeCluster) -> None:
    cluster.topics["t"] = [PartitionOffsets(0, 100, 100)]
    frame = len(encode_records([b"x" * 100] * 10))
    reader = _reader(topic="t", maxBytesPerTrigger=str(frame * 3 + 5))
    assert reader.getDefaultReadLimit() == ReadMaxBytes(frame * 3 + 5)
    assert reader.latestOffset({"t": {"0": 0}}, ReadMaxBytes(frame * 3 + 5)) == {"t": {"0": 30}}
    # A budget below one frame still admits one frame: the query always progresses.
    assert reader.latestOffset({"t": {"0": 30}}, ReadMaxBytes(1)) == {"t": {"0": 40}}
    # Starting inside a frame: that frame counts whole, the end is its end.
    assert reader.latestOffset({"t": {"0": 35}}, ReadMaxBytes(frame)) == {"t": {"0": 40}}


def test_available_now_stops_at_the_target(cluster: FakeCluster) -> None:
    cluster.topics["t"] = [PartitionOffsets(0, 50, 50)]
    reader = _reader(topic="t", maxRecordsPerTrigger="30")
    reader.prepareForTriggerAvailableNow()
    cluster.topics["t"] = [PartitionOffsets(0, 90, 90)]  # new data after the start
    cluster.topics["u"] = [PartitionOffsets(0, 5, 5)]
    first = reader.latestOffset({"t": {"0": 0}}, ReadMaxRows(30))
    assert first == {"t": {"0": 30}}
    second = reader.latestOffset(first, ReadMaxRows(30))
    assert second == {"t": {"0": 50}}
    assert reader.latestOffset(second, ReadMaxRows(30)) == second  # done: start == end


def test_new_partitions_and_pattern_topics_start_at_their_log_start(
    cluster: FakeCluster,
) -> None:
    cluster.topics["orders-a"] = [PartitionOffsets(0, 10, 10)]
    cluster.topics["other"] = [PartitionOffsets(0, 10, 10)]
    reader = _reader(topicPattern="orders-.*")
    start = reader.initialOffset()
    assert start == {"orders-a": {"0": 10}}
    cluster.topics["orders-a"].append(PartitionOffsets(0, 4, 4))
    cluster.topics["orders-b"] = [PartitionOffsets(2, 7, 7)]
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {"orders-a": {"0": 10, "1": 4}, "orders-b": {"0": 7}}
    parts = reader.partitions(start, end)
    assert [(p.topic, p.partition, p.start, p.end, p.from_log_start) for p in parts] == [
        ("orders-a", 1, 0, 4, True),
        ("orders-b", 0, 0, 7, True),
    ]
    assert all(isinstance(p, FluvioPartition) for p in parts)
    assert reader.partitions(end, end) == []


def test_vanished_topic_keeps_its_offset(cluster: FakeCluster) -> None:
    cluster.topics["a"] = [PartitionOffsets(0, 3, 3)]
    reader = _reader(topics="a,b")
    assert reader.latestOffset({"a": {"0": 3}, "b": {"0": 9}}, ReadAllAvailable()) == {
        "a": {"0": 3},
        "b": {"0": 9},
    }


def test_data_loss_fails_or_skips(cluster: FakeCluster) -> None:
    cluster.topics["t"] = [PartitionOffsets(50, 80, 80)]
    with pytest.raises(DataLossError, match="below the log start 50"):
        _reader(topic="t").latestOffset({"t": {"0": 10}}, ReadAllAvailable())
    lenient = _reader(topic="t", failOnDataLoss="false", maxRecordsPerTrigger="10")
    # The limit counts from the log start: the skipped records are not admitted.
    assert lenient.latestOffset({"t": {"0": 10}}, ReadMaxRows(10)) == {"t": {"0": 60}}
