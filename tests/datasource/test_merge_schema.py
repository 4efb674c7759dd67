"""``mergeSchema``: a write sets its topic's schema (both paths), and the refusals of
typed topics name what to do instead."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from datasource.merge_schema import merged_schema
from datasource.spark_errors import typed_error
from spark_stream.client import Fluvio
from spark_stream.errors import (
    DataSourceOptionError,
    InvalidConfigError,
    SchemaMismatchError,
    SinkSchemaError,
)
from spark_stream.local.cluster import LocalCluster
from spark_stream.models.topic_schema import TopicSchema

USER = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
WHEN = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _struct(*fields: tuple[str, object, bool]) -> StructType:
    return StructType([StructField(n, t, nullable) for n, t, nullable in fields])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("df", "current", "expected"),
    [
        (  # untyped: the user columns, record columns left out, Spark's nullability kept
            _struct(("id", LongType(), False), ("key", StringType(), True),
                    ("n", StringType(), True)),
            None,
            pa.schema([pa.field("id", pa.int64(), False), pa.field("n", pa.string())]),
        ),
        (  # typed: the topic's columns as they are, then the new ones in DataFrame order
            _struct(("score", DoubleType(), True), ("id", LongType(), True),
                    ("b", LongType(), True)),
            TopicSchema.of(USER),
            USER.append(pa.field("score", pa.float64())).append(pa.field("b", pa.int64())),
        ),
        (  # nothing new: no change
            _struct(("name", StringType(), True), ("offset", LongType(), False)),
            TopicSchema.of(USER),
            None,
        ),
    ],
)  # fmt: skip
def test_merged_schema(
    df: StructType, current: TopicSchema | None, expected: pa.Schema | None
) -> None:
    got = merged_schema(df, current)
    assert got == expected if expected is None else got is not None and got.equals(expected)


def test_merged_schema_refuses_a_value_column() -> None:
    with pytest.raises(SinkSchemaError, match="a 'value' column writes untyped records"):
        merged_schema(_struct(("value", StringType(), True)), None)


def _write(df: DataFrame, cluster: LocalCluster, **options: str) -> None:
    df.write.format("fluvio").option("endpoint", cluster.endpoint).options(**options).mode(
        "append"
    ).save()


def _read(spark: SparkSession, cluster: LocalCluster, topic: str) -> DataFrame:
    return (
        spark.read.format("fluvio")
        .option("endpoint", cluster.endpoint)
        .option("topic", topic)
        .load()
    )


def _schema(fluvio: Fluvio, topic: str) -> TopicSchema | None:
    return fluvio.admin().describe_topic(topic)[0].spec.topic_schema


@pytest.mark.spark
@pytest.mark.integration
def test_merge_schema_types_an_empty_untyped_topic(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=2)
    df = spark.createDataFrame(
        [(i, f"n{i}", WHEN, f"k{i}") for i in range(6)],
        "id long, name string, at timestamp, key string",
    )
    _write(df, fluvio_cluster, topic=topic, mergeSchema="true")
    schema = _schema(fluvio, topic)
    assert schema is not None and schema.version == 1
    assert [(c.name, c.type, c.nullable) for c in schema.columns] == [
        ("id", "int64", True),
        ("name", "string", True),
        ("at", "timestamp[us, tz=UTC]", True),
    ]
    got = _read(spark, fluvio_cluster, topic).select("id", "name", "at", "key").collect()
    assert sorted((r.id, r.name, r.at.astimezone(UTC), r.key) for r in got) == [
        (i, f"n{i}", WHEN, f"k{i}".encode()) for i in range(6)
    ]


@pytest.mark.spark
@pytest.mark.integration
def test_merge_schema_adds_nullable_columns_as_a_new_version(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(schema=USER)
    fluvio.topic_producer(topic, acks="all").send_batch(
        pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    ).result(60)
    wider = spark.createDataFrame([(3, "c", 0.5)], "id long, name string, score double")
    _write(wider, fluvio_cluster, topic=topic, mergeSchema="true")
    schema = _schema(fluvio, topic)
    assert schema is not None and schema.version == 2
    assert schema.arrow_schema.equals(USER.append(pa.field("score", pa.float64())))
    got = _read(spark, fluvio_cluster, topic).select("id", "name", "score").collect()
    assert sorted(tuple(r) for r in got) == [(1, "a", None), (2, "b", None), (3, "c", 0.5)]
    # the same columns again: nothing to add, no new version; fewer columns write too
    _write(wider, fluvio_cluster, topic=topic, mergeSchema="true")
    _write(wider.select("id"), fluvio_cluster, topic=topic, mergeSchema="true")
    after = _schema(fluvio, topic)
    assert after is not None and after.version == 2
    assert _read(spark, fluvio_cluster, topic).count() == 5


@pytest.mark.spark
@pytest.mark.integration
def test_merge_schema_refusals_leave_the_topic_as_it_was(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    used = new_topic()
    fluvio.topic_producer(used, acks="all").send("k", "v").result(60)
    df = spark.createDataFrame([(1, "x")], "id long, name string")
    with pytest.raises(Exception, match="is untyped and holds records") as info:
        _write(df, fluvio_cluster, topic=used, mergeSchema="true")
    assert isinstance(typed_error(info.value), InvalidConfigError)
    assert _schema(fluvio, used) is None

    typed = new_topic(schema=USER)
    not_null = df.withColumn("rank", F.lit(1))  # a literal column is not nullable
    with pytest.raises(
        Exception, match="new column 'rank' \\(int32, not null\\) must be nullable"
    ) as info:
        _write(not_null, fluvio_cluster, topic=typed, mergeSchema="true")
    assert isinstance(typed_error(info.value), InvalidConfigError)
    retyped = spark.createDataFrame([(1.5, "x", 0.5)], "id double, name string, score double")
    with pytest.raises(Exception, match="column 'id' is double, typed topic .* says int64") as info:
        _write(retyped, fluvio_cluster, topic=typed, mergeSchema="true")
    assert isinstance(typed_error(info.value), SchemaMismatchError)
    after = _schema(fluvio, typed)
    assert after is not None and after.version == 1

    values = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="a 'value' column writes untyped records") as info:
        _write(values, fluvio_cluster, topic=new_topic(), mergeSchema="true")
    assert isinstance(typed_error(info.value), SinkSchemaError)
    routed = df.withColumn("topic", F.lit(typed))
    with pytest.raises(Exception, match="option 'mergeSchema' needs the 'topic' option") as info:
        _write(routed, fluvio_cluster, mergeSchema="true")
    assert isinstance(typed_error(info.value), DataSourceOptionError)


@pytest.mark.spark
@pytest.mark.integration
def test_typed_topic_refusals_name_the_alternative(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    typed, plain = new_topic(schema=USER), new_topic()
    records = spark.createDataFrame([("v", typed)], "value string, topic string")
    with pytest.raises(Exception, match="rows routed by the 'topic' column are untyped") as info:
        _write(records, fluvio_cluster)
    assert isinstance(typed_error(info.value), SchemaMismatchError)
    with pytest.raises(Exception, match="write a DataFrame of its columns, not 'value'") as info:
        _write(records.drop("topic"), fluvio_cluster, topic=typed)
    assert isinstance(typed_error(info.value), SchemaMismatchError)
    columns = spark.createDataFrame([(1, "a", typed)], "id long, name string, topic string")
    with pytest.raises(Exception, match="to write a typed topic's columns, name it with") as info:
        _write(columns, fluvio_cluster)
    assert isinstance(typed_error(info.value), SinkSchemaError)

    fluvio.topic_producer(typed, acks="all").send_batch(
        pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]})
    ).result(60)
    fluvio.topic_producer(plain, acks="all").send("k", "v").result(60)
    pattern = (
        spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topicPattern", f"{typed}|{plain}").load()
    )  # fmt: skip
    with pytest.raises(Exception, match="read it alone with the 'topic' option, not through"):
        pattern.collect()
    listed = (
        spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topics", f"{plain},{typed}")
    )  # fmt: skip
    with pytest.raises(
        Exception, match="is typed: read it alone with the 'topic' option, not with"
    ):
        listed.load().collect()
