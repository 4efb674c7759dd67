"""Typed topics through ``format("fluvio")`` on both paths: their columns read and written."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DoubleType, LongType, StringType, TimestampType

from datasource.spark_errors import typed_error
from spark_stream.client import Fluvio
from spark_stream.errors import SchemaMismatchError
from spark_stream.local.cluster import LocalCluster

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
