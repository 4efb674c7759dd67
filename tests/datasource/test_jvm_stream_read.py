"""Micro-batch streams through the JVM connector (``connector/``) against a real cluster.

The Python source runs in this process (the shared session has no jar); the JVM one in a
child interpreter whose session has the jar (``_run_child`` of ``test_jvm_batch_read``).
Both share one checkpoint and one Parquet sink, so each resumes where the other stopped.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from datasource.offsets import TopicPartition, to_json_dict
from datasource.options import parse_reader_options
from spark_stream.client import Fluvio
from spark_stream.errors import DataSourceOptionError
from spark_stream.local.cluster import LocalCluster
from tests.datasource.test_jvm_batch_read import _run_child, connector_jar  # noqa: F401
from tests.datasource.test_stream_read import _offsets, _run_available_now, _stream
from tests.spark_conftest import produce

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    # The shared session is the Python side here; the JVM side runs in a child session.
    pytest.mark.spark_source("python", reason="compares the Python source with the jar's"),
]

_CHILD_STREAM = """
def stream_available_now(out_dir, checkpoint, **options):
    reader = spark.readStream.format("fluvio").option("endpoint", endpoint)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load().select("topic", "partition", "offset", "value").writeStream
        .format("parquet").option("path", out_dir).option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(240), "availableNow query did not finish"
        if query.exception() is not None:
            raise AssertionError(str(query.exception()))
        return [
            [p["numInputRows"], p["sources"][0]["description"], p["sources"][0]["metrics"]]
            for p in query.recentProgress
        ]
    finally:
        query.stop()
"""


def _offset_log(checkpoint: Path) -> dict[int, str]:
    """Each batch's source offset JSON, as Spark wrote it into the checkpoint."""
    out = {}
    for path in (checkpoint / "offsets").iterdir():
        if path.name.isdigit():
            out[int(path.name)] = path.read_text().splitlines()[-1]
    return out


def test_checkpoints_pass_between_python_and_jvm_both_ways(
    connector_jar: Path,  # noqa: F811
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=3, replicas=2)
    later = new_topic(partitions=2)  # joins the query when the JVM resumes it
    produce(fluvio, topic, [f"a{i}" for i in range(90)], keys=[f"k{i}" for i in range(90)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    # 1. Python writes the checkpoint.
    py_df = _stream(spark, fluvio_cluster, topic=topic, startingOffsets="earliest")
    assert sum(_run_available_now(py_df, out, checkpoint)) == 90
    python_written = _offset_log(checkpoint)
    # 2. The JVM resumes it, with a limit per trigger and a topic more (read from its start).
    produce(fluvio, topic, [f"b{i}" for i in range(60)], keys=[f"k{i}" for i in range(60)])
    produce(fluvio, later, [f"c{i}" for i in range(10)], keys=[f"k{i}" for i in range(10)])
    child = _run_child(
        _CHILD_STREAM
        + textwrap.dedent(f"""
        out["progress"] = stream_available_now({str(out)!r}, {str(checkpoint)!r},
            topics=topic + ",{later}", startingOffsets="earliest", maxRecordsPerTrigger="25")
        """),
        fluvio_cluster.endpoint,
        topic,
    )
    rows = [p[0] for p in child["progress"] if p[0]]
    assert sum(rows) == 70 and max(rows) <= 25 and len(rows) == 3, child["progress"]
    assert all("FluvioMicroBatchStream" in p[1] for p in child["progress"]), child["progress"]
    metrics = [p[2] for p in child["progress"] if p[0]]
    assert all(set(m) >= {"minOffsetsBehindLatest", "maxOffsetsBehindLatest"} for m in metrics)
    assert metrics[-1]["maxOffsetsBehindLatest"] == "0"  # all read by the last batch
    # The JVM wrote its offsets in the Python source's exact JSON text.
    mid = {TopicPartition(topic, p): fluvio.fetch_offsets(topic, p).hw for p in range(3)}
    mid |= {TopicPartition(later, p): fluvio.fetch_offsets(later, p).hw for p in range(2)}
    log = _offset_log(checkpoint)
    jvm_written = [log[b] for b in sorted(log) if b not in python_written]
    assert len(jvm_written) == 3
    assert jvm_written[-1] == json.dumps(to_json_dict(mid))
    # 3. Python resumes what the JVM wrote.
    produce(fluvio, topic, [f"d{i}" for i in range(30)], keys=[f"k{i}" for i in range(30)])
    py_both = _stream(spark, fluvio_cluster, topics=f"{topic},{later}", startingOffsets="earliest")
    assert sum(_run_available_now(py_both, out, checkpoint)) == 30
    # Every record once, across the three runs.
    offsets = _offsets(spark, out)
    assert len(offsets) == 190 == len(set(offsets))
    ends = {TopicPartition(topic, p): fluvio.fetch_offsets(topic, p).hw for p in range(3)}
    ends |= {TopicPartition(later, p): fluvio.fetch_offsets(later, p).hw for p in range(2)}
    assert offsets == sorted(
        (tp.topic, tp.partition, o) for tp, end in ends.items() for o in range(end)
    )


def _python_error(options: dict[str, str], mode: str) -> str:
    with pytest.raises(DataSourceOptionError) as caught:
        parse_reader_options(options, mode)  # type: ignore[arg-type]
    return str(caught.value)


def test_jvm_stream_options_fail_at_start_as_in_python(
    connector_jar: Path,  # noqa: F811
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=1)
    cases: list[dict[str, str]] = [
        {"maxRecordsPerTrigger": "0"},
        {"maxBytesPerTrigger": "lots"},
        {"maxRecordsPerTrigger": "5", "maxOffsetsPerTrigger": "5"},
        {"endingOffsets": "latest"},
        {"startingOffsets": json.dumps({"other": {"0": 1}})},
    ]
    child = _run_child(
        f"""
        def start(**options):
            reader = spark.readStream.format("fluvio").option("endpoint", endpoint)
            reader = reader.option("topic", topic)
            for key, value in options.items():
                reader = reader.option(key, value)
            query = reader.load().writeStream.format("noop").trigger(availableNow=True).start()
            query.awaitTermination(120)
            if query.exception() is not None:
                raise Exception(str(query.exception()))
        out["errors"] = [error_of(lambda: start(**case)) for case in {cases!r}]
        out["batch"] = error_of(lambda: read(maxBytesPerTrigger="9").collect())
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    for case, error in zip(cases, child["errors"], strict=True):
        expected = _python_error({"endpoint": "x:1", "topic": topic, **case}, "stream")
        assert error is not None and expected in error, (case, expected, error)
    expected = _python_error({"topic": topic, "maxBytesPerTrigger": "9"}, "batch")
    assert child["batch"] is not None and expected in child["batch"]


def test_jvm_stream_by_pattern_from_a_groups_offsets(
    connector_jar: Path,  # noqa: F811
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """``topicPattern`` and ``startingOffsets=group:NAME`` on a JVM stream: every matching
    topic is read, each partition from the group's committed offset (earliest without)."""
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    topics = sorted(new_topic(partitions=2, prefix=prefix) for _ in range(2))
    for name in topics:
        produce(fluvio, name, [f"{name}-{i}" for i in range(20)], keys=[f"k{i}" for i in range(20)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    fluvio.admin().commit_progress(group, {(topics[0], 0): 4, (topics[1], 1): 7})
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _run_child(
        _CHILD_STREAM
        + textwrap.dedent(f"""
        out["progress"] = stream_available_now({str(out)!r}, {str(checkpoint)!r},
            topicPattern={prefix + "-.*"!r}, startingOffsets={"group:" + group!r})
        """),
        fluvio_cluster.endpoint,
        topics[0],
    )
    ends = {(t, p): fluvio.fetch_offsets(t, p).hw for t in topics for p in range(2)}
    starts = {(topics[0], 0): 4, (topics[1], 1): 7}
    assert _offsets(spark, out) == sorted(
        (t, p, o) for (t, p), end in ends.items() for o in range(starts.get((t, p), 0), end)
    )


def test_jvm_stream_reads_an_added_partition_from_its_beginning(
    connector_jar: Path,  # noqa: F811
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=2, replicas=2)
    produce(fluvio, topic, ["old"] * 4)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    child = _run_child(
        _CHILD_STREAM
        + textwrap.dedent(f"""
        import time
        from spark_stream.client import Fluvio
        from tests.spark_conftest import produce
        args = ({str(out)!r}, {str(checkpoint)!r})
        out["first"] = stream_available_now(*args, topic=topic, startingOffsets="latest")
        with Fluvio.connect(endpoint) as client:
            client.admin().add_partitions(topic, 1)
            deadline = time.monotonic() + 60
            while len(client.topic_partitions(topic)) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            produce(client, topic, [f"new{{i}}" for i in range(5)], partition=2)
            produce(client, topic, ["two"] * 2, partition=0)
        out["second"] = stream_available_now(*args, topic=topic, startingOffsets="latest")
        """),
        fluvio_cluster.endpoint,
        topic,
    )
    assert sum(p[0] for p in child["first"]) == 0
    assert sum(p[0] for p in child["second"]) == 7
    offsets = _offsets(spark, out)
    assert [o for _, p, o in offsets if p == 2] == [0, 1, 2, 3, 4]
