"""``progressGroup`` on the JVM connector against a real cluster: a micro-batch query's
committed offsets are mirrored into the group (``fluvio consumer-group describe`` shows
its lag reach 0), a query without a checkpoint resumes from them with
``startingOffsets=group:NAME``, continuous and real-time queries mirror each epoch or
batch, and a group of members or a bad name fails at query start as in Python.

The queries run in a child interpreter whose session has the connector jar
(``_run_child`` of ``test_jvm_batch_read``).
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_stream.cli import main
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.datasource.test_jvm_batch_read import _run_child, connector_jar  # noqa: F401
from tests.datasource.test_jvm_stream_read import _python_error
from tests.datasource.test_stream_read import _offsets
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    # The shared session is the Python side here; the JVM side runs in a child session.
    pytest.mark.spark_source("python", reason="compares the Python source with the jar's"),
]

_CHILD = """
import time
from spark_stream.client import Fluvio
from tests.spark_conftest import produce

def available_now(out_dir, checkpoint, **options):
    reader = spark.readStream.format("fluvio").option("endpoint", endpoint).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load().select("topic", "partition", "offset").writeStream
        .format("parquet").option("path", out_dir).option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(240), "availableNow query did not finish"
        if query.exception() is not None:
            raise Exception(str(query.exception()))
        return [[p["numInputRows"], p["sources"][0]["endOffset"]] for p in query.recentProgress]
    finally:
        query.stop()

def group_offsets(group):
    with Fluvio.connect(endpoint) as client:
        got = client.admin().fetch_offsets(group)
    return sorted([t, p, o] for (t, p), o in got.items())

def ends():
    with Fluvio.connect(endpoint) as client:
        return sorted([topic, p, client.fetch_offsets(topic, p).hw] for p in (0, 1))

def wait_mirrored(group, what, timeout=180):
    deadline = time.monotonic() + timeout
    while group_offsets(group) != ends():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: group at {group_offsets(group)}, topic at {ends()}")
        time.sleep(0.2)
"""


def _describe(cluster: LocalCluster, group: str, capsys: pytest.CaptureFixture[str]) -> Any:
    """``fluvio consumer-group describe GROUP -O json``: one row per partition."""
    capsys.readouterr()
    code = main(["--endpoint", cluster.endpoint, "consumer-group", "describe", group, "-O", "json"])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_jvm_progress_group_follows_the_query_and_a_new_query_resumes_from_it(
    connector_jar: Path,  # noqa: F811
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = new_topic(partitions=2)
    group = f"q-{uuid.uuid4().hex[:8]}"
    members = f"m-{uuid.uuid4().hex[:8]}"
    produce(fluvio, topic, [f"a{i}" for i in range(60)], keys=[f"k{i}" for i in range(60)])
    consumer = fluvio.group_consumer(topic, group=members, enable_auto_commit=False)
    consumer.commit({(topic, 0): 3})
    consumer.close()
    bad_cases: list[dict[str, str]] = [{"progressGroup": members}, {"progressGroup": "No Caps"}]
    out = _run_child(
        _CHILD
        + textwrap.dedent(f"""
        tmp = {str(tmp_path)!r}
        out["first"] = available_now(tmp + "/out", tmp + "/c", startingOffsets="earliest",
                                     progressGroup={group!r}, maxRecordsPerTrigger="20")
        out["mirrored"] = group_offsets({group!r})
        with Fluvio.connect(endpoint) as client:
            produce(client, topic, [f"b{{i}}" for i in range(10)],
                    keys=[f"k{{i}}" for i in range(10)])
        # A new query, no checkpoint: it starts where the group stands.
        out["fresh"] = available_now(tmp + "/out2", tmp + "/c2",
                                     startingOffsets={"group:" + group!r})
        out["errors"] = [
            error_of(lambda: available_now(tmp + f"/bad{{i}}", tmp + f"/cb{{i}}", **case))
            for i, case in enumerate({bad_cases!r})
        ]
        """),
        fluvio_cluster.endpoint,
        topic,
    )
    batches = [b for b in out["first"] if b[0]]
    assert [b[0] for b in batches] == [20, 20, 20]
    last_end = json.loads(batches[-1][1])
    # The group holds exactly the last committed micro-batch's end offsets.
    assert out["mirrored"] == sorted([topic, int(p), o] for p, o in last_end[topic].items())
    assert out["mirrored"] != sorted(
        [topic, int(p), o] for p, o in json.loads(batches[0][1])[topic].items()
    )
    [listed] = [g for g in fluvio.admin().list_groups() if g["name"] == group]
    assert (listed["state"], listed["members"]) == ("External", 0)
    # The new query read only what came after the mirrored offsets, and mirrored nothing.
    assert sum(b[0] for b in out["fresh"]) == 10
    mirrored = {(t, p): o for t, p, o in out["mirrored"]}
    hws = {p: fluvio.fetch_offsets(topic, p).hw for p in range(2)}
    assert {(p, o) for _, p, o in _offsets(spark, tmp_path / "out2")} == {
        (p, o) for p in range(2) for o in range(mirrored[(topic, p)], hws[p])
    }
    behind = lambda: sum(r["lag"] for r in _describe(fluvio_cluster, group, capsys)) == 10  # noqa: E731
    wait_until(behind, timeout=30)  # the SC's view of the HW follows the leaders
    # A group of members and a bad name fail at start, as in Python; members untouched.
    for case, error in zip(bad_cases, out["errors"], strict=True):
        assert error is not None, case
    assert f"'{members}' is a group" in out["errors"][0]
    expected = _python_error({"endpoint": "x:1", "topic": topic, **bad_cases[1]}, "stream")
    assert expected in out["errors"][1]
    assert fluvio.admin().fetch_offsets(members) == {(topic, 0): 3}


def test_jvm_progress_group_follows_continuous_and_real_time_queries(
    connector_jar: Path,  # noqa: F811
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Spark commits each continuous epoch and each real-time batch to the source: the
    group follows the records produced while the query runs, up to the topic's end."""
    topic = new_topic(partitions=2)
    produce(fluvio, topic, [f"a{i}" for i in range(20)], keys=[f"k{i}" for i in range(20)])
    continuous, real_time = (f"c-{uuid.uuid4().hex[:8]}", f"r-{uuid.uuid4().hex[:8]}")
    _run_child(
        _CHILD
        + textwrap.dedent(f"""
        from datasource.session import local_session
        spark.stop()  # a continuous task holds a slot per topic partition
        spark = local_session("jvm-progress", master="local[4]", jvm_connector=True)
        def reader(group):
            return (spark.readStream.format("fluvio").option("endpoint", endpoint)
                    .option("topic", topic).option("startingOffsets", "earliest")
                    .option("progressGroup", group).load())
        class Discard:  # a foreach sink (real-time mode allows it)
            def open(self, partition_id, epoch_id):
                return True
            def process(self, row):
                pass
            def close(self, error):
                pass
        for n, group in enumerate(({continuous!r}, {real_time!r})):
            writer = reader(group).writeStream.option(
                "checkpointLocation", {str(tmp_path)!r} + "/" + group)
            if n == 0:
                writer = writer.format("memory").queryName("sink").trigger(continuous="1 second")
            else:
                writer = writer.foreach(Discard()).outputMode("update")
                writer = writer.trigger(realTime="5 seconds")
            query = writer.start()
            try:
                wait_mirrored(group, "records produced before the query")
                with Fluvio.connect(endpoint) as client:
                    produce(client, topic, [f"b{{n}}-{{i}}" for i in range(10)],
                            keys=[f"k{{i}}" for i in range(10)])
                wait_mirrored(group, "records produced during the query")
                assert query.exception() is None, str(query.exception())
            finally:
                query.stop()
        """),
        fluvio_cluster.endpoint,
        topic,
    )
    # Each group ends where the topic stood when its query stopped (the real-time query
    # ran last, so its lag is 0; the continuous one is 10 behind, read by the other).
    assert sum(fluvio.admin().fetch_offsets(continuous).values()) == 30
    assert sum(fluvio.admin().fetch_offsets(real_time).values()) == 40
    lag = lambda: [r["lag"] for r in _describe(fluvio_cluster, real_time, capsys)]  # noqa: E731
    wait_until(lambda: lag() == [0, 0], timeout=30)
