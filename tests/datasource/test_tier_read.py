"""``format("fluvio")`` reads a tiered topic's history that only the tier still holds, on
both paths (the Python source and the JVM connector): batch and streaming from earliest,
the same offsets and values as produced."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

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
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = (
        stream.select("offset", "value").writeStream.format("parquet")
        .option("path", str(out)).option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
        assert query.exception() is None
    finally:
        query.stop()
    streamed = spark.read.parquet(str(out)).collect()
    assert sorted((r["offset"], bytes(r["value"]).decode()) for r in streamed) == list(
        enumerate(sent)
    )
