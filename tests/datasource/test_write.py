"""Writes through ``format("fluvio")``: batch writes, the streaming sink, exactly once."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.spark_conftest import produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _read(spark: SparkSession, cluster: LocalCluster, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format("fluvio").option("endpoint", cluster.endpoint)
    for key, value in {"topic": topic, **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def _total(fluvio: Fluvio, topic: str) -> int:
    return sum(fluvio.fetch_offsets(topic, p.partition).hw for p in fluvio.topic_partitions(topic))


def test_batch_write_reads_back_equal(
    spark: SparkSession, fluvio_cluster: LocalCluster, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=3, replicas=2)
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    rows = [(f"k{i % 5}", f"v{i}", when, [("h", bytes([i % 256]))]) for i in range(200)]
    df = spark.createDataFrame(
        rows, "key string, value string, timestamp timestamp, "
              "headers array<struct<key: string, value: binary>>",
    )  # fmt: skip
    df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
        "topic", topic
    ).mode("append").save()
    back = _read(spark, fluvio_cluster, topic, includeHeaders="true").select(
        F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"),
        "timestamp", "headers",
    )  # fmt: skip
    assert_df_equality(back, df, ignore_row_order=True, ignore_nullable=True)
    # Keys are hash-partitioned: one partition per key.
    parts = (
        _read(spark, fluvio_cluster, topic)
        .groupBy("key")
        .agg(F.countDistinct("partition").alias("n"))
    )
    assert parts.where("n != 1").count() == 0


def test_partition_and_topic_columns_route_rows_and_the_option_wins(
    spark: SparkSession, fluvio_cluster: LocalCluster, new_topic: Callable[..., str]
) -> None:
    a, b = new_topic(partitions=2), new_topic(partitions=2)
    df = spark.createDataFrame(
        [(a, 1, "to-a"), (b, 0, "to-b"), (b, 1, "to-b1")],
        "topic string, partition int, value string",
    )
    df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).mode("append").save()
    both = (
        spark.read.format("fluvio")
        .option("endpoint", fluvio_cluster.endpoint)
        .option("topics", f"{a},{b}")
        .load()
    )
    got = {(r["topic"], r["partition"], bytes(r["value"])) for r in both.collect()}
    assert got == {(a, 1, b"to-a"), (b, 0, b"to-b"), (b, 1, b"to-b1")}
    df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option("topic", a).mode(
        "append"
    ).save()
    assert _read(spark, fluvio_cluster, a).count() == 4  # all three went to the option's topic


def _records(df: DataFrame) -> list[tuple[bytes | None, bytes, datetime, object]]:
    """A topic read's records without where they were stored (topic, partition, offset)."""
    rows = df.select("key", "value", "timestamp", "headers").collect()
    return sorted(
        (
            None if r["key"] is None else bytes(r["key"]),
            bytes(r["value"]),
            r["timestamp"],
            None if r["headers"] is None else [(h["key"], bytes(h["value"])) for h in r["headers"]],
        )
        for r in rows
    )


def test_a_topic_read_copies_to_another_topic_in_batch(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    """format("fluvio") on both sides, no select(): offset/timestampType and the source's
    partitions are ignored (the target has fewer partitions than the source)."""
    source, target = new_topic(partitions=3), new_topic(partitions=1)
    keys, times = [f"k{i}" for i in range(40)], [1_000_000 * i for i in range(40)]
    for p in range(3):
        values = [f"p{p}-{i}" for i in range(40)]
        produce(fluvio, source, values, partition=p, keys=keys, timestamps_us=times)
    read = _read(spark, fluvio_cluster, source, includeHeaders="true")
    read.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
        "topic", target
    ).mode("append").save()
    copied = _read(spark, fluvio_cluster, target, includeHeaders="true")
    assert _records(copied) == _records(read)
    assert len(_records(copied)) == 120


def test_preserve_partitions_copies_partition_for_partition(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    source, target = new_topic(partitions=2), new_topic(partitions=2)
    produce(fluvio, source, [f"a{i}" for i in range(30)], partition=0)
    produce(fluvio, source, [f"b{i}" for i in range(20)], partition=1)
    _read(spark, fluvio_cluster, source).write.format("fluvio").option(
        "endpoint", fluvio_cluster.endpoint
    ).option("topic", target).option("preservePartitions", "true").mode("append").save()
    got = {
        (r["partition"], bytes(r["value"])) for r in _read(spark, fluvio_cluster, target).collect()
    }
    assert got == {(0, f"a{i}".encode()) for i in range(30)} | {
        (1, f"b{i}".encode()) for i in range(20)
    }


def test_a_write_with_no_save_mode_appends(
    spark: SparkSession, fluvio_cluster: LocalCluster, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    df = spark.createDataFrame([("one",), ("two",)], "value string")
    for _ in range(2):
        df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
            "topic", topic
        ).save()
    values = sorted(bytes(r["value"]) for r in _read(spark, fluvio_cluster, topic).collect())
    assert values == [b"one", b"one", b"two", b"two"]


def test_bad_writes_fail_naming_the_problem(
    spark: SparkSession, fluvio_cluster: LocalCluster, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    writer = (
        spark.createDataFrame([("v", 1.5)], "value string, score double")
        .write.format("fluvio")
        .option("endpoint", fluvio_cluster.endpoint)
        .option("topic", topic)
    )
    with pytest.raises(Exception, match="cannot write column\\(s\\) score"):
        writer.mode("append").save()
    read = _read(spark, fluvio_cluster, topic).withColumn("score", F.lit(1.5))
    with pytest.raises(Exception, match="cannot write column\\(s\\) score "):
        read.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
            "topic", topic
        ).mode("append").save()
    ok = (
        spark.createDataFrame([("v",)], "value string")
        .write.format("fluvio")
        .option("endpoint", fluvio_cluster.endpoint)
        .option("topic", topic)
    )
    with pytest.raises(Exception, match="append-only"):
        ok.mode("overwrite").save()
    with pytest.raises(Exception, match="'topic' option or"):
        spark.createDataFrame([("v",)], "value string").write.format("fluvio").option(
            "endpoint", fluvio_cluster.endpoint
        ).mode("append").save()
    assert _read(spark, fluvio_cluster, topic).count() == 0


def test_streaming_write_reads_back_equal(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    source, sink = new_topic(partitions=2), new_topic(partitions=3)
    produce(fluvio, source, [f"v{i}" for i in range(120)], keys=[f"k{i}" for i in range(120)])
    stream = (
        spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topic", source).option("startingOffsets", "earliest")
        .option("maxRecordsPerTrigger", "50").load()
        .select("key", F.upper(F.col("value").cast("string")).alias("value"))
    )  # fmt: skip
    query = (
        stream.writeStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topic", sink).option("checkpointLocation", str(tmp_path / "c"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    assert query.awaitTermination(120)
    assert query.exception() is None
    expected = _read(spark, fluvio_cluster, source).select(
        "key", F.upper(F.col("value").cast("string")).alias("value")
    )
    got = _read(spark, fluvio_cluster, sink).select("key", F.col("value").cast("string"))
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_a_topic_stream_copies_to_another_topic_exactly_once(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """The README's example: readStream.format("fluvio") straight into writeStream; a
    second run from the checkpoint adds only what was produced since."""
    source, target = new_topic(partitions=2), new_topic(partitions=3)
    produce(fluvio, source, [f"v{i}" for i in range(100)], keys=[f"k{i}" for i in range(100)])

    def copy() -> None:
        query = (
            spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", source).option("startingOffsets", "earliest")
            .option("includeHeaders", "true").option("maxRecordsPerTrigger", "40").load()
            .writeStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", target).option("checkpointLocation", str(tmp_path / "c"))
            .trigger(availableNow=True).start()
        )  # fmt: skip
        assert query.awaitTermination(120)
        assert query.exception() is None

    copy()
    read = _read(spark, fluvio_cluster, source, includeHeaders="true")
    assert _records(_read(spark, fluvio_cluster, target, includeHeaders="true")) == _records(read)
    produce(fluvio, source, [f"w{i}" for i in range(30)], keys=[f"k{i}" for i in range(30)])
    copy()
    read = _read(spark, fluvio_cluster, source, includeHeaders="true")
    copied = _records(_read(spark, fluvio_cluster, target, includeHeaders="true"))
    assert copied == _records(read)
    assert len(copied) == 130


def _fail_once(marker: str, endpoint: str, sink: str, wait_for: int) -> Callable[..., bytes]:
    """A UDF that, on its first run, lets partition 0's task finish writing, then fails
    partition 1's task: the micro-batch dies after part of it reached the sink."""

    # No annotations: Spark would read type hints as a request for an Arrow UDF.
    def value_of(partition, value):  # type: ignore[no-untyped-def]
        import os

        if partition == 1 and not os.path.exists(marker):
            from spark_stream.client import Fluvio as Client

            with Client.connect(endpoint) as client:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    written = sum(
                        client.fetch_offsets(sink, p.partition).hw
                        for p in client.topic_partitions(sink)
                    )
                    if written >= wait_for:
                        break
                    time.sleep(0.05)  # polling another task's progress, bounded
            open(marker, "w").close()
            raise RuntimeError("injected failure in the middle of a micro-batch")
        return value

    return value_of


def test_sink_is_exactly_once_when_a_failed_batch_is_rerun(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    source, sink = new_topic(partitions=2), new_topic(partitions=2)
    produce(fluvio, source, [f"p0-{i}" for i in range(300)], partition=0)
    produce(fluvio, source, [f"p1-{i}" for i in range(200)], partition=1)
    udf = F.udf(
        _fail_once(str(tmp_path / "failed-once"), fluvio_cluster.endpoint, sink, 300), "binary"
    )

    def start() -> object:
        df = (
            spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", source).option("startingOffsets", "earliest").load()
            .select("key", udf("partition", "value").alias("value"))
        )  # fmt: skip
        return (
            df.writeStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True).start()
        )  # fmt: skip

    first = start()
    with pytest.raises(Exception, match="injected failure"):
        first.awaitTermination(120)  # type: ignore[attr-defined]
    partial = _total(fluvio, sink)
    assert partial == 300  # partition 0's task wrote everything before the batch died

    second = start()
    assert second.awaitTermination(120)  # type: ignore[attr-defined]
    assert second.exception() is None  # type: ignore[attr-defined]
    assert _total(fluvio, sink) == 500  # the re-run batch added only what was missing
    values = [bytes(r["value"]) for r in _read(spark, fluvio_cluster, sink).collect()]
    assert sorted(values) == sorted(
        [f"p0-{i}".encode() for i in range(300)] + [f"p1-{i}".encode() for i in range(200)]
    )
