"""Typed topics through ``format("fluvio")`` on both paths: their columns read and written."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DoubleType, LongType, StringType, TimestampType

from datasource.spark_errors import typed_error
from spark_stream.client import Fluvio
from spark_stream.errors import SchemaMismatchError
from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration]

USER = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
    ]
)
WHEN = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _read(spark: SparkSession, cluster: LocalCluster, topic: str) -> DataFrame:
    return (
        spark.read.format("fluvio")
        .option("endpoint", cluster.endpoint)
        .option("topic", topic)
        .load()
    )


def test_a_typed_topic_reads_as_its_columns_older_records_null_in_new_ones(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=2, schema=USER)
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "name": ["a", None, "c"],
            "at": pa.array([WHEN] * 3, pa.timestamp("us", tz="UTC")),
            "key": ["k1", "k2", "k3"],
        }
    )
    fluvio.topic_producer(topic, acks="all").send_batch(table).result(60)
    fluvio.admin().update_topic_schema(topic, USER.append(pa.field("score", pa.float64())))
    df = _read(spark, fluvio_cluster, topic)
    names = ["id", "name", "at", "score", "key", "topic", "partition", "offset"]
    assert df.schema.fieldNames() == [*names, "timestamp", "headers"]
    types = {f.name: f.dataType for f in df.schema.fields}
    assert (types["id"], types["name"], types["at"], types["score"]) == (
        LongType(),
        StringType(),
        TimestampType(),
        DoubleType(),
    )
    # Kafka's option names find the typed topic too.
    kafka = (
        spark.read.format("fluvio")
        .option("kafka.bootstrap.servers", fluvio_cluster.endpoint)
        .option("subscribe", topic)
        .load()
    )
    assert kafka.schema == df.schema and kafka.count() == 3
    rows = sorted(df.select("id", "name", "at", "score", "key", "topic").collect())
    assert [(r.id, r.name, r.at.astimezone(UTC), r.score, r.key, r.topic) for r in rows] == [
        (1, "a", WHEN, None, b"k1", topic),
        (2, None, WHEN, None, b"k2", topic),
        (3, "c", WHEN, None, b"k3", topic),
    ]


def test_a_dataframe_writes_its_columns_to_a_typed_topic(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=2, schema=USER)
    df = spark.createDataFrame(
        [(i, f"n{i}", WHEN, f"k{i % 3}") for i in range(50)],
        "id long, name string, at timestamp, key string",
    )
    df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
        "topic", topic
    ).mode("append").save()
    got = []
    for part in range(2):
        for batch in fluvio.fetch_batches(topic, part, 0):
            got += batch.select(["id", "name", "at", "key"]).to_pylist()
    assert sorted(r["id"] for r in got) == list(range(50))
    assert {(r["name"], r["at"], r["key"]) for r in got if r["id"] == 4} == {("n4", WHEN, b"k1")}
    # and a read of the topic writes back to another typed topic of the same columns
    copy = new_topic(schema=USER)
    _read(spark, fluvio_cluster, topic).write.format("fluvio").option(
        "endpoint", fluvio_cluster.endpoint
    ).option("topic", copy).mode("append").save()
    assert _read(spark, fluvio_cluster, copy).count() == 50


def test_a_dataframe_of_other_columns_is_refused_naming_the_column(
    spark: SparkSession, fluvio_cluster: LocalCluster, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(schema=USER)
    df = spark.createDataFrame([(1.5, "x")], "id double, name string")
    with pytest.raises(Exception, match="column 'id' is double.*says int64") as info:
        df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
            "topic", topic
        ).mode("append").save()
    assert isinstance(typed_error(info.value), SchemaMismatchError)
    extra = spark.createDataFrame([(1, "x", True)], "id long, name string, flag boolean")
    with pytest.raises(Exception, match="column 'flag' is not in typed topic"):
        extra.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
            "topic", topic
        ).mode("append").save()


def test_a_typed_topic_streams_into_another_typed_topic(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    source, sink = new_topic(partitions=2, schema=USER), new_topic(schema=USER)
    table = pa.table({"id": pa.array(range(40), pa.int64()), "name": [f"n{i}" for i in range(40)]})
    fluvio.topic_producer(source, acks="all").send_batch(table).result(60)
    stream = (
        spark.readStream.format("fluvio")
        .option("endpoint", fluvio_cluster.endpoint)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        stream.select("id", "name", "at", "key").writeStream.format("fluvio")
        .option("endpoint", fluvio_cluster.endpoint).option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        assert query.awaitTermination(120), "availableNow query did not finish"
        assert query.exception() is None
    finally:
        query.stop()
    got = [
        r for b in fluvio.fetch_batches(sink, 0, 0) for r in b.select(["id", "name"]).to_pylist()
    ]
    assert sorted(got, key=lambda r: r["id"]) == table.to_pylist()


KINDS = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ms", pa.timestamp("ms", tz="UTC")),
        pa.field("local", pa.timestamp("us")),
        pa.field("day", pa.date32()),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("text", pa.large_string()),
        pa.field("flag", pa.bool_()),
        pa.field("small", pa.int16()),
        pa.field("ratio", pa.float32()),
        pa.field("blob", pa.binary()),
    ]
)


def test_column_kinds_read_and_write_the_same_on_both_paths(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    """Timestamps of another unit than microseconds, timestamps without a zone, dates,
    decimals, large strings: read as Spark's types (pruned to a few columns too), and a
    read written back to a topic of the same columns reads the same."""
    topic = new_topic(schema=KINDS)
    rows = [
        {
            "id": i,
            "ms": WHEN.replace(microsecond=i * 1000),
            "local": datetime(2024, 1, 2, 3, 4, 5, i),
            "day": WHEN.date(),
            "amount": Decimal(f"{i}.25"),
            "text": f"t{i}" if i % 2 else None,
            "flag": i % 3 == 0,
            "small": -i,
            "ratio": i / 4,
            "blob": bytes([i]),
        }
        for i in range(5)
    ]
    fluvio.topic_producer(topic, acks="all").send_batch(
        pa.Table.from_pylist(rows, schema=KINDS)
    ).result(60)
    df = _read(spark, fluvio_cluster, topic)
    assert df.schema.simpleString().startswith(
        "struct<id:bigint,ms:timestamp,local:timestamp_ntz,day:date,amount:decimal(10,2),"
        "text:string,flag:boolean,small:smallint,ratio:float,blob:binary,key:binary,"
    )
    user = [f.name for f in KINDS]
    got = sorted(df.select(*user).collect())
    assert [r.asDict() | {"ms": r.ms.astimezone(UTC)} for r in got] == rows
    assert sorted(r.amount for r in df.select("amount").collect()) == [r["amount"] for r in rows]
    copy = new_topic(schema=KINDS)
    df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
        "topic", copy
    ).mode("append").save()
    back = [b.select(user) for b in fluvio.fetch_batches(copy, 0, 0)]
    assert sorted(pa.Table.from_batches(back).to_pylist(), key=lambda r: r["id"]) == rows


def test_a_null_in_a_not_null_column_fails_the_write_naming_it(
    spark: SparkSession, fluvio_cluster: LocalCluster, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(schema=USER)
    df = spark.createDataFrame([(1, "a"), (None, "b")], "id long, name string")
    with pytest.raises(Exception, match="column 'id' has 1 nulls") as info:
        df.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
            "topic", topic
        ).mode("append").save()
    assert isinstance(typed_error(info.value), SchemaMismatchError)


@pytest.mark.spark_source("jvm", reason="continuous queries need the JVM connector")
def test_a_continuous_query_reads_a_typed_topic_across_schema_versions(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(schema=USER)
    producer = fluvio.topic_producer(topic, acks="all")
    first = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    producer.send_batch(first).result(60)
    fluvio.admin().update_topic_schema(topic, USER.append(pa.field("score", pa.float64())))
    later = pa.table({"id": pa.array([3], pa.int64()), "name": ["c"], "score": [0.5]})
    fluvio.topic_producer(topic, acks="all").send_batch(later).result(60)
    query = (
        spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topic", topic).option("startingOffsets", "earliest").load()
        .select("id", "name", "score", "offset")
        .writeStream.format("memory").queryName("typed_continuous")
        .trigger(continuous="1 second").start()
    )  # fmt: skip
    try:
        wait_until(
            lambda: spark.sql("select * from typed_continuous").count() >= 3,
            120,
            "3 typed rows in the continuous query's sink",
        )
        assert query.exception() is None
    finally:
        query.stop()
    got = sorted(tuple(r) for r in spark.sql("select * from typed_continuous").collect())
    assert got == [(1, "a", None, 0), (2, "b", None, 1), (3, "c", 0.5, 2)]


@pytest.mark.spark_source("jvm", reason="real-time mode needs the JVM connector")
def test_a_real_time_query_copies_a_typed_topic_into_another(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    source, sink = new_topic(schema=USER), new_topic(schema=USER)
    table = pa.table({"id": pa.array(range(30), pa.int64()), "name": [f"n{i}" for i in range(30)]})
    fluvio.topic_producer(source, acks="all").send_batch(table).result(60)
    spark.conf.set("spark.sql.streaming.realTimeMode.allowlistCheck", "false")
    try:
        query = (
            spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", source).option("startingOffsets", "earliest").load()
            .select("id", "name", "key")
            .writeStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
            .outputMode("update").trigger(realTime="5 seconds").start()
        )  # fmt: skip

        def copied() -> list[dict[str, object]]:
            batches = fluvio.fetch_batches(sink, 0, 0)
            return [r for b in batches for r in b.select(["id", "name"]).to_pylist()]

        try:
            wait_until(lambda: len(copied()) >= 30, 120, "30 rows copied in real-time mode")
            assert query.exception() is None
        finally:
            query.stop()
    finally:
        spark.conf.unset("spark.sql.streaming.realTimeMode.allowlistCheck")
    assert sorted(copied(), key=lambda r: r["id"]) == table.to_pylist()
