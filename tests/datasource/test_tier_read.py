"""``format("fluvio")`` reads a tiered topic's history that only the tier still holds, on
both paths (the Python source and the JVM connector): batch and streaming from earliest,
the same offsets and values as produced; a typed topic's too, in its columns, the files
tiered before its schema gained a column reading it as null."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from spark_stream.tier import load_manifest
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]

QUERY_TIMEOUT_S = 120


def spu_log_start(fluvio: Fluvio, topic: str) -> int:
    """The leader's own log start, as it reports it to the SC (the client's
    ``fetch_offsets`` counts the tier in)."""
    (part,) = fluvio.admin().list_partitions(topic)
    return part.status.log_start_offset


def _available_now(df: DataFrame, tmp_path: Path, name: str) -> DataFrame:
    """``df`` (a stream) written by an availableNow query to Parquet, read back."""
    out, checkpoint = tmp_path / f"{name}-out", tmp_path / f"{name}-checkpoint"
    query = (
        df.writeStream.format("parquet").option("path", str(out))
        .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
        assert query.exception() is None
    finally:
        query.stop()
    return df.sparkSession.read.parquet(str(out))


def test_history_in_the_tier_reads_in_batch_and_streaming(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    tier = tmp_path / "tier"
    topic = new_topic(segmentSize=1024, tier=str(tier), localRetentionSecs=1)
    sent = []
    for n in range(8):  # about 2 KiB a batch: a segment each
        values = [f"{n}-{i}-{'v' * 60}" for i in range(25)]
        produce(fluvio, topic, values)
        sent += values
    wait_until(lambda: spu_log_start(fluvio, topic) >= 100, 90, "local retention")
    manifest = load_manifest(str(tier), 0)
    assert manifest.start_offset == 0
    assert fluvio.fetch_offsets(topic, 0).log_start == 0  # readable from the tier

    df = spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
    rows = df.option("topic", topic).load().select("offset", "value").collect()
    got = sorted((r["offset"], bytes(r["value"]).decode()) for r in rows)
    assert got == list(enumerate(sent))

    stream = (
        spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topic", topic).option("startingOffsets", "earliest").load()
    )  # fmt: skip
    streamed = _available_now(stream.select("offset", "value"), tmp_path, "untyped").collect()
    assert sorted((r["offset"], bytes(r["value"]).decode()) for r in streamed) == list(
        enumerate(sent)
    )


TYPED_V1 = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("at", pa.timestamp("ms", tz="UTC")),
        pa.field("day", pa.date32()),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("flag", pa.bool_()),
        pa.field("small", pa.int16()),
    ]
)
TYPED_V2 = TYPED_V1.append(pa.field("score", pa.float64()))
TYPED_COLUMNS = ["offset", *TYPED_V2.names, "key"]


def _with_key(user: pa.Schema) -> pa.Schema:
    return user.append(pa.field("key", pa.string()))


def _typed_rows(first: int, n: int, version: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(first, first + n):
        row: dict[str, Any] = {
            "id": i,
            "name": None if i % 7 == 3 else f"name-{i}-{'n' * 30}",
            "at": datetime(2025, 11, 24, 16, 0, i % 60, (i % 1000) * 1000, tzinfo=UTC),
            "day": date(2025, 3, 1 + i % 28),
            "amount": Decimal(f"{i}.{i % 100:02d}"),
            "flag": None if i % 5 == 0 else i % 2 == 0,
            "small": -i,
            "key": f"k{i}",
        }
        if version == 2:
            row["score"] = None if i % 4 == 0 else i / 4
        rows.append(row)
    return rows


def _typed_row(row: Any) -> tuple[Any, ...]:
    """A DataFrame row of a typed topic's columns, comparable with ``_expected``."""
    out = row.asDict()
    out["at"] = out["at"].astimezone(UTC)
    out["key"] = bytes(out["key"]).decode()
    return tuple(out[c] for c in TYPED_COLUMNS)


def test_a_typed_topics_history_in_the_tier_reads_in_its_columns(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    tier = tmp_path / "tier"
    topic = new_topic(schema=TYPED_V1, segmentSize=1024, tier=str(tier), localRetentionSecs=1)
    producer = fluvio.topic_producer(topic, acks="all")
    sent: list[dict[str, Any]] = []
    for _ in range(4):  # a segment or more a batch
        rows = _typed_rows(len(sent), 20, 1)
        producer.send_batch(pa.Table.from_pylist(rows, schema=_with_key(TYPED_V1))).result(60)
        sent += rows
    # files tiered before the schema evolves hold no score
    wait_until(lambda: (load_manifest(str(tier), 0).end_offset or 0) >= 40, 90, "tiering of v1")
    fluvio.admin().update_topic_schema(topic, TYPED_V2)
    for _ in range(4):
        rows = _typed_rows(len(sent), 20, 2)
        producer.send_batch(pa.Table.from_pylist(rows, schema=_with_key(TYPED_V2))).result(60)
        sent += rows
    wait_until(lambda: spu_log_start(fluvio, topic) >= 100, 90, "local retention")
    assert load_manifest(str(tier), 0).start_offset == 0
    expected = [(i, *(r.get(c) for c in TYPED_V2.names), r["key"]) for i, r in enumerate(sent)]

    df = spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
    rows = df.option("topic", topic).load().select(*TYPED_COLUMNS).collect()
    assert sorted(_typed_row(r) for r in rows) == expected

    stream = (
        spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topic", topic).option("startingOffsets", "earliest").load()
    )  # fmt: skip
    streamed = _available_now(stream.select(*TYPED_COLUMNS), tmp_path, "typed").collect()
    assert sorted(_typed_row(r) for r in streamed) == expected


NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("tags", pa.list_(pa.int64())),
        pa.field("point", pa.struct([("x", pa.int32()), ("label", pa.string())])),
    ]
)


def _nested_rows(first: int, n: int) -> list[dict[str, Any]]:
    """Null, empty and longer lists with null elements; null structs and null fields."""
    rows = []
    for i in range(first, first + n):
        tags = None if i % 5 == 1 else [i * 10 + j if (i + j) % 4 else None for j in range(i % 4)]
        x = None if i % 5 == 0 else -i
        point = None if i % 4 == 3 else {"x": x, "label": None if i % 7 == 6 else f"p{i}"}
        rows.append({"id": i, "tags": tags, "point": point, "key": f"k{i}"})
    return rows


def test_a_typed_topics_list_and_struct_columns_read_from_the_tier(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    tier = tmp_path / "tier"
    topic = new_topic(schema=NESTED, segmentSize=1024, tier=str(tier), localRetentionSecs=1)
    producer = fluvio.topic_producer(topic, acks="all")
    sent: list[dict[str, Any]] = []
    for _ in range(6):  # a segment or more a batch
        rows = _nested_rows(len(sent), 20)
        producer.send_batch(pa.Table.from_pylist(rows, schema=_with_key(NESTED))).result(60)
        sent += rows
    wait_until(lambda: spu_log_start(fluvio, topic) >= 80, 90, "local retention")
    assert load_manifest(str(tier), 0).start_offset == 0
    expected = [(i, r["tags"], r["point"]) for i, r in enumerate(sent)]

    df = spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
    got = df.option("topic", topic).load().select("offset", "tags", "point").collect()
    as_python = [
        (r["offset"], r["tags"], None if r["point"] is None else r["point"].asDict()) for r in got
    ]
    assert sorted(as_python, key=lambda t: t[0]) == expected


LOCAL_SCHEME = {
    # Hadoop's view file system in front of the local one, for the scheme 'local:' (which
    # fsspec, and so the SPU, knows and Hadoop does not); no cache, so every lookup asks
    # the configuration the reader was given
    "fs.local.impl": "org.apache.hadoop.fs.viewfs.ViewFileSystemOverloadScheme",
    "fs.local.impl.disable.cache": "true",
    "fs.viewfs.overload.scheme.target.file.impl": "org.apache.hadoop.fs.LocalFileSystem",
    "fs.viewfs.mounttable.default.linkFallback": "file:///",
}


@pytest.mark.spark_source(
    "jvm", reason="the Python source opens the tier with fsspec: Hadoop settings are the JVM's"
)
def test_the_sessions_hadoop_settings_reach_the_tier_reads(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """A tier URL Hadoop opens only with the session's settings: set on the session
    (``spark.conf.set``) or where ``spark.hadoop.*`` land (the context's Hadoop
    configuration), they reach the planning on the driver and the tasks' tier reads."""
    tier = f"local://{tmp_path / 'tier'}"
    topic = new_topic(segmentSize=1024, tier=tier, localRetentionSecs=1)
    sent = []
    for n in range(6):  # about 2 KiB a batch: a segment each
        values = [f"{n}-{i}-{'h' * 60}" for i in range(25)]
        produce(fluvio, topic, values)
        sent += values
    wait_until(lambda: spu_log_start(fluvio, topic) >= 75, 90, "local retention")
    assert load_manifest(tier, 0).start_offset == 0

    def read() -> list[tuple[int, str]]:
        df = spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        rows = df.option("topic", topic).load().select("offset", "value").collect()
        return sorted((r["offset"], bytes(r["value"]).decode()) for r in rows)

    with pytest.raises(Exception, match='No FileSystem for scheme "local"'):
        read()  # a plain Hadoop configuration does not know the scheme

    for key, value in LOCAL_SCHEME.items():
        spark.conf.set(key, value)
    try:
        assert read() == list(enumerate(sent))
        stream = (
            spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", topic).option("startingOffsets", "earliest").load()
        )  # fmt: skip
        streamed = _available_now(stream.select("offset", "value"), tmp_path, "hadoop").collect()
        assert sorted((r["offset"], bytes(r["value"]).decode()) for r in streamed) == list(
            enumerate(sent)
        )
    finally:
        for key in LOCAL_SCHEME:
            spark.conf.unset(key)

    context = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    for key, value in LOCAL_SCHEME.items():
        context.set(key, value)
    try:
        assert read() == list(enumerate(sent))
    finally:
        for key in LOCAL_SCHEME:
            context.unset(key)
