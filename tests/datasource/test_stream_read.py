"""Streaming reads of ``format("fluvio")``: availableNow, read limits, restarts from a
checkpoint, new topics of a pattern, low-latency micro-batches, data loss."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from datasource.lag import behind_latest_metrics, offsets_behind_latest
from datasource.spark_errors import typed_error
from spark_stream.client import Fluvio
from spark_stream.errors import DataLossError
from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]

QUERY_TIMEOUT_S = 120


def _stream(spark: SparkSession, cluster: LocalCluster, **options: str) -> DataFrame:
    reader = spark.readStream.format("fluvio").option("endpoint", cluster.endpoint)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _run_available_now(df: DataFrame, out: Path, checkpoint: Path) -> list[int]:
    """Run an availableNow query into a Parquet sink; return rows per micro-batch."""
    query = (
        df.select("topic", "partition", "offset", "value").writeStream.format("parquet")
        .option("path", str(out)).option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
        if query.exception() is not None:
            raise AssertionError(str(query.exception()))
        return [p["numInputRows"] for p in query.recentProgress]
    finally:
        query.stop()


def _offsets(spark: SparkSession, out: Path) -> list[tuple[str, int, int]]:
    rows = spark.read.parquet(str(out)).select("topic", "partition", "offset").collect()
    return sorted((r["topic"], r["partition"], r["offset"]) for r in rows)


def test_available_now_reads_everything_once_across_restarts(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=3, replicas=2)
    produce(fluvio, topic, [f"a{i}" for i in range(90)], keys=[f"k{i}" for i in range(90)])
    df = _stream(spark, fluvio_cluster, topic=topic, startingOffsets="earliest")
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    first = _run_available_now(df, out, checkpoint)
    assert sum(first) == 90
    produce(fluvio, topic, [f"b{i}" for i in range(60)], keys=[f"k{i}" for i in range(60)])
    second = _run_available_now(df, out, checkpoint)
    assert sum(second) == 60
    third = _run_available_now(df, out, checkpoint)  # nothing new: nothing read
    assert sum(third) == 0
    offsets = _offsets(spark, out)
    assert len(offsets) == 150 == len(set(offsets))
    ends = {p: fluvio.fetch_offsets(topic, p).hw for p in range(3)}
    assert offsets == sorted((topic, p, o) for p, end in ends.items() for o in range(end))


def test_max_records_per_trigger_splits_batches_and_loses_nothing(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=2)
    produce(fluvio, topic, [f"v{i}" for i in range(100)], partition=0)
    produce(fluvio, topic, [f"w{i}" for i in range(50)], partition=1)
    df = _stream(
        spark, fluvio_cluster, topic=topic, startingOffsets="earliest", maxRecordsPerTrigger="40"
    )
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    batches = [n for n in _run_available_now(df, out, checkpoint) if n]
    assert batches == [40, 40, 40, 30]
    produce(fluvio, topic, [f"x{i}" for i in range(45)], partition=1)
    again = [n for n in _run_available_now(df, out, checkpoint) if n]
    assert again == [40, 5]
    offsets = _offsets(spark, out)
    assert len(offsets) == len(set(offsets)) == 195


def test_max_bytes_per_trigger_admits_whole_frames(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic()
    for i in range(6):  # six frames of 20 records of ~1 KiB
        produce(fluvio, topic, [f"{i:02d}" + "x" * 1000] * 20)
    df = _stream(
        spark,
        fluvio_cluster,
        topic=topic,
        startingOffsets="earliest",
        maxBytesPerTrigger=str(45_000),
    )
    batches = [n for n in _run_available_now(df, tmp_path / "o", tmp_path / "c") if n]
    assert sum(batches) == 120
    assert len(batches) >= 3 and all(n % 20 == 0 and n <= 40 for n in batches)


def test_committed_stream_never_passes_the_high_watermark(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(replicas=2)
    produce(fluvio, topic, ["old"] * 10)
    info = fluvio.topic_partitions(topic)[0]
    follower = next(r for r in info.replicas if r != info.leader)
    wait_until(lambda: fluvio.fetch_offsets(topic, 0).hw == 10, 30, "HW 10")
    pid = fluvio_cluster.spu_pid(follower)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        produce(fluvio, topic, ["new"] * 5, acks="leader")
        committed = _stream(spark, fluvio_cluster, topic=topic, startingOffsets="earliest")
        uncommitted = _stream(
            spark, fluvio_cluster, topic=topic, startingOffsets="earliest", isolation="uncommitted"
        )
        assert sum(_run_available_now(committed, tmp_path / "c1", tmp_path / "k1")) == 10
        assert sum(_run_available_now(uncommitted, tmp_path / "c2", tmp_path / "k2")) == 15
    finally:
        os.kill(pid, signal.SIGCONT)


def test_pattern_picks_up_new_topics_from_their_beginning(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    first = new_topic(prefix="pat")
    prefix = first.rsplit("-", 1)[1][:4]
    pattern = f"pat-{prefix}.*"
    produce(fluvio, first, ["one"] * 3)
    df = _stream(spark, fluvio_cluster, topicPattern=pattern, startingOffsets="latest")
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    assert sum(_run_available_now(df, out, checkpoint)) == 0  # latest: old records skipped
    second = f"pat-{prefix}-late"
    fluvio.admin().create_topic(second, partitions=2)
    wait_until(lambda: _has_leaders(fluvio, second, 2), 30, "new topic leaders")
    produce(fluvio, second, ["late"] * 7)
    produce(fluvio, first, ["two"] * 2)
    assert sum(_run_available_now(df, out, checkpoint)) == 9
    topics = {t for t, _, _ in _offsets(spark, out)}
    assert topics == {first, second}


def test_added_partitions_are_read_from_their_beginning(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    # As Kafka's source: a partition that appears mid-query starts at its log start,
    # whatever startingOffsets said for the partitions the query began with.
    topic = new_topic(partitions=2, replicas=2)
    produce(fluvio, topic, ["old"] * 4)
    df = _stream(spark, fluvio_cluster, topic=topic, startingOffsets="latest")
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    assert sum(_run_available_now(df, out, checkpoint)) == 0
    fluvio.admin().add_partitions(topic, 1)
    wait_until(lambda: _has_leaders(fluvio, topic, 3), 30, "the new partition's leader")
    produce(fluvio, topic, [f"new{i}" for i in range(5)], partition=2)
    produce(fluvio, topic, ["two"] * 2, partition=0)
    assert sum(_run_available_now(df, out, checkpoint)) == 7
    offsets = _offsets(spark, out)
    assert [o for _, p, o in offsets if p == 2] == [0, 1, 2, 3, 4]
    assert [p for _, p, _ in offsets].count(0) == 2


def _has_leaders(fluvio: Fluvio, topic: str, partitions: int) -> bool:
    try:
        infos = fluvio.topic_partitions(topic)
        for info in infos:
            fluvio.fetch_offsets(topic, info.partition)
    except Exception:
        return False
    return len(infos) == partitions


def test_zero_interval_trigger_delivers_a_record_to_foreach_batch(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic()
    seen: list[bytes] = []
    lock = threading.Lock()

    def sink(batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("value").collect()
        with lock:
            seen.extend(bytes(r["value"]) for r in rows)

    df = _stream(spark, fluvio_cluster, topic=topic)
    query = (
        df.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "c"))
        .trigger(processingTime="0 seconds").start()
    )  # fmt: skip
    try:
        wait_until(lambda: query.lastProgress is not None, 60, "the first micro-batch")
        produce(fluvio, topic, ["ping"])
        wait_until(lambda: seen == [b"ping"], 60, "the record in foreachBatch")
    finally:
        query.stop()
    assert query.exception() is None


def test_data_loss_after_retention_fails_or_skips(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    # Segments of 512 KiB, at most 1 MiB kept: retention drops the oldest segments.
    topic = new_topic(segmentSize=512 * 1024, maxPartitionSize=1024 * 1024)
    produce(fluvio, topic, ["x" * 1000] * 100)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    df = _stream(spark, fluvio_cluster, topic=topic, startingOffsets="earliest")
    assert sum(_run_available_now(df, out, checkpoint)) == 100
    for _ in range(12):  # ~3 MiB more, in frames well under the segment size
        produce(fluvio, topic, ["y" * 1000] * 256)
    wait_until(
        lambda: fluvio.fetch_offsets(topic, 0).log_start > 100,
        150,
        "retention to pass the checkpointed offset",
    )
    lenient, out2 = tmp_path / "checkpoint-lenient", tmp_path / "out2"
    shutil.copytree(checkpoint, lenient)
    shutil.copytree(out, out2)  # a file sink's log lives with its output

    strict = _stream(spark, fluvio_cluster, topic=topic, startingOffsets="earliest")
    with pytest.raises(Exception, match="is below the log start") as failed:
        _run_available_now(strict, out, checkpoint)
    assert isinstance(typed_error(failed.value), DataLossError)  # also from the JVM's

    skip = _stream(spark, fluvio_cluster, topic=topic, failOnDataLoss="false")
    _run_available_now(skip, out2, lenient)
    offsets = [o for _, _, o in _offsets(spark, out2)]
    resumed = [o for o in offsets if o >= 100]
    now = fluvio.fetch_offsets(topic, 0)
    assert min(resumed) > 100  # the removed records were skipped, not invented
    assert sorted(resumed) == list(range(min(resumed), now.hw))

    below = json.dumps({topic: {"0": 0}})
    batch = spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
    with pytest.raises(Exception, match="DataLossError"):
        batch.option("topic", topic).option("startingOffsets", below).load().count()
    lenient_count = (
        batch.option("topic", topic).option("startingOffsets", below)
        .option("failOnDataLoss", "false").load().count()
    )  # fmt: skip
    log = fluvio.fetch_offsets(topic, 0)
    assert lenient_count == log.hw - log.log_start


def test_progress_reports_latest_offsets_and_the_lag_per_partition(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=2)
    produce(fluvio, topic, [f"v{i}" for i in range(60)], keys=[f"k{i}" for i in range(60)])
    ends = {str(p): fluvio.fetch_offsets(topic, p).hw for p in range(2)}
    df = _stream(
        spark, fluvio_cluster, topic=topic, startingOffsets="earliest", maxRecordsPerTrigger="20"
    )
    query = (
        df.select("value").writeStream.format("parquet").option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "c")).trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
        progress = [p for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    sources = [p["sources"][0] for p in progress]
    for source in sources:
        latest = source["latestOffset"]
        assert (json.loads(latest) if isinstance(latest, str) else latest) == {topic: ends}
    lags = [offsets_behind_latest(source) for source in sources]
    assert [sum(lag.values()) for lag in lags] == [40, 20, 0]
    assert set(lags[0]) == {f"{topic}-0", f"{topic}-1"}
    if "FluvioMicroBatchStream" in sources[0]["description"]:  # the JVM reports them itself
        for source, lag in zip(sources, lags, strict=True):
            reported = {k: source["metrics"][k] for k in behind_latest_metrics(lag)}
            assert reported == behind_latest_metrics(lag)
