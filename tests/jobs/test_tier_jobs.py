"""The jobs and a topic's Delta table over its tier (``--table delta``): archiving copies
nothing, a backfill reads the tier table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.archive import archive
from jobs.backfill import backfill
from spark_stream.client import Fluvio
from spark_stream.errors import DataSourceOptionError
from spark_stream.local.cluster import LocalCluster
from spark_stream.tier import load_manifest
from spu.storage.delta_table import committed_version
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    pytest.mark.spark_source("python", reason="the jobs' tier logic is the same on both paths"),
]


def tiered_topic(
    fluvio: Fluvio, new_topic: Callable[..., str], count: int, tier: Path
) -> tuple[str, str]:
    """A ``--table delta`` topic tiered to ``tier`` (the shared cluster has no default
    tier) with ``count`` records, waited for until its tier table holds at least half of
    them; its name and tier URL."""
    topic = new_topic(table="delta", segmentSize=1024, tier=str(tier))
    for start in range(0, count, 10):
        produce(fluvio, topic, [f"r{i}" for i in range(start, start + 10)], keys=["k"] * 10)
    url = fluvio.admin().describe_topic(topic)[0].spec.tier
    assert url == str(tier)

    def committed() -> bool:
        files = load_manifest(url, 0).files
        return (
            bool(files)
            and files[-1].next_offset >= count // 2
            and committed_version(url, 0) == files[-1].base_offset
        )

    wait_until(committed, 60, "the tier's Delta table to hold half the records")
    return topic, url


def test_archiving_a_topic_with_a_tier_table_copies_nothing(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic, tier = tiered_topic(fluvio, new_topic, 100, tmp_path / "tier")
    result = archive(spark, topic, None, endpoint=fluvio_cluster.endpoint)
    assert (result.table, result.records_added, result.copied) == (tier, 0, False)
    again = archive(spark, topic, f"file://{tier}/", endpoint=fluvio_cluster.endpoint)
    assert (again.table, again.copied) == (tier, False)
    rows = spark.read.format("delta").load(result.table).orderBy("offset").collect()
    assert [r["value"].decode() for r in rows] == [f"r{i}" for i in range(len(rows))]

    # Another table is still a copy, as before.
    copy = archive(spark, topic, str(tmp_path / "copy"), endpoint=fluvio_cluster.endpoint)
    assert copy.copied and copy.records_added == 100

    plain = new_topic()
    with pytest.raises(DataSourceOptionError, match="give --table; topic .* has no Delta"):
        archive(spark, plain, None, endpoint=fluvio_cluster.endpoint)


def test_backfill_reads_a_topic_history_from_its_tier_table(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    source, tier = tiered_topic(fluvio, new_topic, 60, tmp_path / "tier")
    in_table = spark.read.format("delta").load(tier).count()
    target = new_topic()
    result = backfill(
        spark, None, target, endpoint=fluvio_cluster.endpoint, source_topic=source,
        progress=False,
    )  # fmt: skip
    # Tiering goes on meanwhile: the backfill copies one snapshot of the table, a prefix of
    # the history at least as long as what was counted before it.
    after = spark.read.format("delta").load(tier).count()
    assert result.rows == result.records_added
    assert in_table <= result.rows <= after
    copied = (
        spark.read.format("fluvio").option("topic", target)
        .option("endpoint", fluvio_cluster.endpoint).load()
        .orderBy("offset").collect()
    )  # fmt: skip
    assert {r["value"].decode() for r in copied} == {f"r{i}" for i in range(result.rows)}
    assert {r["key"].decode() for r in copied} == {"k"}

    with pytest.raises(DataSourceOptionError, match="has no Delta table over its tier"):
        backfill(spark, None, target, endpoint=fluvio_cluster.endpoint, source_topic=target)
    with pytest.raises(DataSourceOptionError, match="one of --source and --source-topic"):
        backfill(spark, None, target, endpoint=fluvio_cluster.endpoint)
