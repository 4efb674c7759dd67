"""Spark's Kafka option names on a real cluster, through both sources of ``format("fluvio")``.

``subscribe``, ``kafka.bootstrap.servers``, ``kafka.isolation.level``, ``assign``,
``startingOffsetsByTimestamp`` (+ strategy), ``endingOffsetsByTimestamp``,
``minOffsetsPerTrigger`` + ``maxTriggerDelay``, and a misspelt option's suggestion. The
parsing itself is table-tested without servers (``test_option_names.py`` and the shared
vectors); these check that each name reaches the read it means.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]

QUERY_TIMEOUT_S = 120
_BASE_MS = 1_700_000_000_000


def _read(spark: SparkSession, **options: str) -> DataFrame:
    reader = spark.read.format("fluvio")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _rows(df: DataFrame) -> list[tuple[int, int, str]]:
    return sorted(
        (r["partition"], r["offset"], bytes(r["value"]).decode())
        for r in df.select("partition", "offset", "value").collect()
    )


def test_subscribe_and_kafka_connection_names_read_as_ours(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    produce(fluvio, topic, [f"v{i}" for i in range(20)], keys=[f"k{i}" for i in range(20)])
    ours = _rows(_read(spark, endpoint=fluvio_cluster.endpoint, topic=topic))
    kafka = _rows(
        _read(
            spark,
            subscribe=topic,
            # Kafka lists brokers; the first is the SC, the second is never contacted.
            **{"kafka.bootstrap.servers": f"{fluvio_cluster.endpoint},127.0.0.1:1"},
            **{"kafka.isolation.level": "read_committed"},
        )
    )
    assert len(ours) == 20
    assert kafka == ours


def test_assign_reads_only_the_partitions_it_names(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=3)
    for p in range(3):
        produce(fluvio, topic, [f"p{p}-{i}" for i in range(4)], partition=p)
    rows = _rows(_read(spark, endpoint=fluvio_cluster.endpoint, assign=json.dumps({topic: [2, 0]})))
    assert rows == [(p, i, f"p{p}-{i}") for p in (0, 2) for i in range(4)]
    with pytest.raises(Exception, match=r"option 'assign': topic '[^']+' has no partition\(s\) 5"):
        _read(spark, endpoint=fluvio_cluster.endpoint, assign=json.dumps({topic: [0, 5]})).count()


def test_offsets_by_timestamp_start_and_end_each_partition_at_its_time(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    for p in range(2):
        times_us = [(_BASE_MS + i * 1000) * 1000 for i in range(10)]
        produce(
            fluvio, topic, [f"p{p}-{i}" for i in range(10)], partition=p, timestamps_us=times_us
        )
    ep = fluvio_cluster.endpoint
    start = {topic: {"0": _BASE_MS + 5000, "1": _BASE_MS + 7500}}
    rows = _rows(
        _read(spark, endpoint=ep, topic=topic, startingOffsetsByTimestamp=json.dumps(start))
    )
    assert rows == [(0, i, f"p0-{i}") for i in range(5, 10)] + [
        (1, i, f"p1-{i}") for i in range(8, 10)
    ]
    end = {topic: {"0": _BASE_MS + 7000}}  # partition 1 is not named: it ends at latest
    rows = _rows(
        _read(
            spark,
            endpoint=ep,
            topic=topic,
            startingOffsetsByTimestamp=json.dumps(start),
            endingOffsetsByTimestamp=json.dumps(end),
        )
    )
    assert rows == [(0, 5, "p0-5"), (0, 6, "p0-6"), (1, 8, "p1-8"), (1, 9, "p1-9")]
    late = json.dumps({topic: {"0": _BASE_MS + 60_000}})
    with pytest.raises(Exception, match=r"has no record at or after 1700000060000 ms"):
        _read(spark, endpoint=ep, topic=topic, startingOffsetsByTimestamp=late).count()
    rows = _rows(
        _read(
            spark,
            endpoint=ep,
            topic=topic,
            startingOffsetsByTimestamp=late,
            startingOffsetsByTimestampStrategy="latest",
        )
    )
    assert rows == [(1, i, f"p1-{i}") for i in range(10)]  # p0 at its end, p1 at earliest


@contextmanager
def _memory_query(df: DataFrame) -> Iterator[tuple[StreamingQuery, str]]:
    name = f"kafka_{uuid.uuid4().hex[:10]}"
    query = df.select("offset").writeStream.format("memory").queryName(name).start()
    try:
        yield query, name
    finally:
        query.stop()


def _count(spark: SparkSession, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) AS n FROM {table}").collect()[0]["n"])


def test_min_offsets_per_trigger_waits_for_enough_records(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    df = (
        spark.readStream.format("fluvio")
        .option("kafka.bootstrap.servers", fluvio_cluster.endpoint)
        .option("subscribe", topic)
        .option("minOffsetsPerTrigger", "5")
        .option("maxTriggerDelay", "1h")
        .load()
    )
    with _memory_query(df) as (query, table):
        query.processAllAvailable()  # the first trigger (nothing to read yet)
        produce(fluvio, topic, ["a", "b", "c"])
        query.processAllAvailable()  # a trigger saw 3 records and waited
        assert _count(spark, table) == 0
        produce(fluvio, topic, ["d", "e"])
        query.processAllAvailable()
        assert _count(spark, table) == 5
        batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        assert batches == [5]


def test_max_trigger_delay_lets_fewer_records_through(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    df = (
        spark.readStream.format("fluvio")
        .option("endpoint", fluvio_cluster.endpoint)
        .option("topic", topic)
        .option("minOffsetsPerTrigger", "1000")
        .option("maxTriggerDelay", "1s")
        .load()
    )
    with _memory_query(df) as (query, table):
        query.processAllAvailable()
        produce(fluvio, topic, ["a", "b"])
        wait_until(lambda: _count(spark, table) == 2, timeout=QUERY_TIMEOUT_S)
        assert query.exception() is None


def test_a_misspelt_option_fails_at_load_suggesting_the_name(
    spark: SparkSession, fluvio_cluster: LocalCluster
) -> None:
    suggestion = (
        r"(?i)unknown option 'startingOffset' for format\('fluvio'\); "
        r"did you mean 'startingOffsets'\?"
    )
    ep = fluvio_cluster.endpoint
    with pytest.raises(Exception, match=suggestion):
        _read(spark, endpoint=ep, topic="t", startingOffset="earliest")
    with pytest.raises(Exception, match=suggestion):
        spark.readStream.format("fluvio").option("endpoint", ep).option("topic", "t").option(
            "startingOffset", "earliest"
        ).load()
