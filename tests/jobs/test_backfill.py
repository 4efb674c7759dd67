"""``python -m jobs.backfill``: a Parquet or Delta table into a topic."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.backfill import backfill, main
from spark_stream.errors import SinkSchemaError
from spark_stream.local.cluster import LocalCluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _topic_values(spark: SparkSession, cluster: LocalCluster, topic: str) -> list[tuple]:
    df = (
        spark.read.format("fluvio")
        .option("endpoint", cluster.endpoint)
        .option("topic", topic)
        .load()
    )
    return sorted(
        (None if r["key"] is None else bytes(r["key"]).decode(), bytes(r["value"]).decode())
        for r in df.collect()
    )


def test_parquet_rows_become_json_records(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "orders.parquet"
    spark.createDataFrame(
        [(i, f"item-{i}") for i in range(250)], "id long, item string"
    ).write.parquet(str(source))
    topic = new_topic(partitions=2)
    result = backfill(spark, str(source), topic, endpoint=fluvio_cluster.endpoint, key_column="id")
    assert (result.rows, result.records_added) == (250, 250)
    got = _topic_values(spark, fluvio_cluster, topic)
    assert got == sorted(
        (str(i), json.dumps({"id": i, "item": f"item-{i}"}, separators=(",", ":")))
        for i in range(250)
    )
    assert "[backfill] tasks" in capsys.readouterr().err


def test_delta_table_with_a_value_column_through_the_cli(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = tmp_path / "events"
    spark.createDataFrame([(f"payload-{i}",) for i in range(40)], "body string").write.format(
        "delta"
    ).save(str(table))
    topic = new_topic()
    assert (
        main(
            [
                "--source",
                str(table),
                "--format",
                "delta",
                "--topic",
                topic,
                "--endpoint",
                fluvio_cluster.endpoint,
                "--value-column",
                "body",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["records_added"] == 40 and summary["topic"] == topic
    assert _topic_values(spark, fluvio_cluster, topic) == sorted(
        (None, f"payload-{i}") for i in range(40)
    )


def test_unknown_column_is_named(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    source = tmp_path / "t.parquet"
    spark.createDataFrame([(1,)], "id long").write.parquet(str(source))
    with pytest.raises(SinkSchemaError, match="'nope'"):
        backfill(
            spark, str(source), new_topic(), endpoint=fluvio_cluster.endpoint, key_column="nope"
        )


def test_failures_print_one_error_line_and_exit_1(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "t.parquet"
    spark.createDataFrame([(1,)], "id long").write.parquet(str(source))
    cases = [
        (["--topic", "nosuch", "--endpoint", fluvio_cluster.endpoint],
         "error: topic 'nosuch' not found"),
        (["--topic", new_topic(), "--endpoint", "127.0.0.1:9"],
         "error: cannot connect to 127.0.0.1:9"),
        (["--topic", new_topic(), "--endpoint", fluvio_cluster.endpoint, "--source",
          str(tmp_path / "missing")], "error: [PATH_NOT_FOUND] Path does not exist"),
    ]  # fmt: skip
    for args, start in cases:
        argv = ["--source", str(source), *args]  # a later --source wins
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith(start), err
        assert err.count("\n") == 1  # one line, no traceback
