"""T15: a streaming query's ``progressGroup`` and ``startingOffsets=group:NAME``, with real
Spark and a real local cluster: the group mirrors each committed micro-batch, its lag
reaches 0 when the query caught up, a new query starts where the group stands, and the
options are refused clearly."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_stream.cli import main
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.datasource.test_stream_read import QUERY_TIMEOUT_S, _offsets, _stream
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _describe(cluster: LocalCluster, group: str, capsys: pytest.CaptureFixture[str]) -> Any:
    """``fluvio consumer-group describe GROUP -O json``: one row per partition."""
    capsys.readouterr()
    code = main(["--endpoint", cluster.endpoint, "consumer-group", "describe", group, "-O", "json"])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def _run(df: Any, out: Path, checkpoint: Path) -> list[dict[str, Any]]:
    """An availableNow query into Parquet; its progress reports, one per micro-batch."""
    query = (
        df.select("topic", "partition", "offset").writeStream.format("parquet")
        .option("path", str(out)).option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
        if query.exception() is not None:
            raise AssertionError(str(query.exception()))
        return [p for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()


def _end(progress: dict[str, Any]) -> dict[tuple[str, int], int]:
    [source] = progress["sources"]
    end = json.loads(source["endOffset"])
    return {(t, int(p)): o for t, parts in end.items() for p, o in parts.items()}


def test_progress_group_mirrors_batches_and_a_new_query_starts_from_it(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = new_topic(partitions=2)
    group = f"q-{uuid.uuid4().hex[:8]}"
    produce(fluvio, topic, [f"a{i}" for i in range(60)], keys=[f"k{i}" for i in range(60)])
    df = _stream(
        spark, fluvio_cluster, topic=topic, startingOffsets="earliest",
        progressGroup=group, maxRecordsPerTrigger="20",
    )  # fmt: skip
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    batches = _run(df, out, checkpoint)
    assert len(batches) == 3  # 20 records per micro-batch
    # The group holds exactly the last committed micro-batch's end offsets.
    assert fluvio.admin().fetch_offsets(group) == _end(batches[-1]) != _end(batches[0])
    caught_up = lambda: [r["lag"] for r in _describe(fluvio_cluster, group, capsys)] == [0, 0]  # noqa: E731
    wait_until(caught_up, timeout=30)  # the SC's view of the HW follows the leaders
    [listed] = [g for g in fluvio.admin().list_groups() if g["name"] == group]
    assert (listed["state"], listed["members"]) == ("External", 0)

    produce(fluvio, topic, [f"b{i}" for i in range(30)], keys=[f"k{i}" for i in range(30)])
    behind = lambda: sum(r["lag"] for r in _describe(fluvio_cluster, group, capsys)) == 30  # noqa: E731
    wait_until(behind, timeout=30)
    # A restart resumes from its checkpoint (not from the group) and catches up.
    again = _run(df, out, checkpoint)
    assert sum(p["numInputRows"] for p in again) == 30
    wait_until(caught_up, timeout=30)
    mirrored = fluvio.admin().fetch_offsets(group)
    assert mirrored == _end(again[-1])

    # A new query (new checkpoint) starts where the group stands: only what came after.
    produce(fluvio, topic, [f"c{i}" for i in range(10)], keys=[f"k{i}" for i in range(10)])
    fresh = _stream(spark, fluvio_cluster, topic=topic, startingOffsets=f"group:{group}")
    out2 = tmp_path / "out2"
    read = _run(fresh, out2, tmp_path / "checkpoint2")
    assert sum(p["numInputRows"] for p in read) == 10
    rows = _offsets(spark, out2)
    assert min(o for t, p, o in rows if p == 0) == mirrored[(topic, 0)]
    assert {(p, o) for _, p, o in rows} == {
        (p, o)
        for p in range(2)
        for o in range(mirrored[(topic, p)], fluvio.fetch_offsets(topic, p).hw)
    }


def test_group_options_at_query_start(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """A query takes over where a group of members committed; it never writes into one;
    unknown groups and batch progress groups are refused at the start."""
    topic = new_topic(partitions=1)
    produce(fluvio, topic, ["x"] * 5)
    members = f"m-{uuid.uuid4().hex[:8]}"
    consumer = fluvio.group_consumer(topic, group=members, enable_auto_commit=False)
    consumer.commit({(topic, 0): 3})
    consumer.close()
    taken_over = _stream(spark, fluvio_cluster, topic=topic, startingOffsets=f"group:{members}")
    _run(taken_over, tmp_path / "out", tmp_path / "checkpoint")
    assert _offsets(spark, tmp_path / "out") == [(topic, 0, 3), (topic, 0, 4)]
    cases = [
        ({"startingOffsets": "group:nope-never-made"}, "consumer group 'nope-never-made'"),
        ({"progressGroup": members, "startingOffsets": "earliest"}, f"'{members}' is a group"),
    ]
    for i, (options, message) in enumerate(cases):
        df = _stream(spark, fluvio_cluster, topic=topic, **options)
        with pytest.raises(Exception, match=message):
            _run(df, tmp_path / f"out{i}", tmp_path / f"checkpoint{i}")
    assert fluvio.admin().fetch_offsets(members) == {(topic, 0): 3}  # never written
    with pytest.raises(Exception, match="'progressGroup' only applies to streaming reads"):
        spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint).option(
            "topic", topic
        ).option("progressGroup", "g").load().collect()
