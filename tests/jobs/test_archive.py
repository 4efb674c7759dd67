"""``python -m jobs.archive``: a topic's offset range into Delta, idempotent on re-run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.archive import archive, archived_offsets, main
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.spark_conftest import produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_archive_is_idempotent_and_resumes(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=2)
    table = str(tmp_path / "archive")
    produce(fluvio, topic, [f"a{i}" for i in range(100)], keys=[f"k{i}" for i in range(100)])
    first = archive(spark, topic, table, endpoint=fluvio_cluster.endpoint)
    assert first.records_added == 100
    assert archive(spark, topic, table, endpoint=fluvio_cluster.endpoint).records_added == 0
    produce(fluvio, topic, [f"b{i}" for i in range(30)], keys=[f"k{i}" for i in range(30)])
    assert archive(spark, topic, table, endpoint=fluvio_cluster.endpoint).records_added == 30
    stored = spark.read.format("delta").load(table)
    assert stored.count() == 130
    assert stored.select("partition", "offset").distinct().count() == 130
    ends = {p: fluvio.fetch_offsets(topic, p).hw for p in range(2)}
    assert archived_offsets(spark, table, topic) == {p: e - 1 for p, e in ends.items() if e}


def test_explicit_range_overlapping_the_archive_adds_only_new_records(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = new_topic()
    table = str(tmp_path / "archive")
    produce(fluvio, topic, [f"v{i}" for i in range(50)])
    upto_20 = json.dumps({topic: {"0": 20}})
    assert (
        archive(
            spark, topic, table, endpoint=fluvio_cluster.endpoint, ending_offsets=upto_20
        ).records_added
        == 20
    )
    from_10 = json.dumps({topic: {"0": 10}})
    assert (
        main(
            [
                "--topic",
                topic,
                "--table",
                table,
                "--endpoint",
                fluvio_cluster.endpoint,
                "--starting-offsets",
                from_10,
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["records_added"] == 30
    offsets = sorted(r["offset"] for r in spark.read.format("delta").load(table).collect())
    assert offsets == list(range(50))


def test_errors_raised_inside_spark_print_the_typed_message(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The data source's planner raises these; Spark hands them over wrapped."""
    table = str(tmp_path / "archive")
    cases = [
        (["--topic", "nosuch"], "error: option 'topic(s)': topic 'nosuch' does not exist\n"),
        (["--topic", new_topic(), "--starting-offsets", "{bad"],
         "error: option 'startingOffsets' must be earliest, latest, group:NAME or JSON"),
    ]  # fmt: skip
    for args, start in cases:
        assert main([*args, "--table", table, "--endpoint", fluvio_cluster.endpoint]) == 1
        err = capsys.readouterr().err
        assert err.startswith(start), err
        assert err.count("\n") == 1  # one line, no traceback
