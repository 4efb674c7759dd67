"""Batch reads of ``format("fluvio")`` against a real local cluster."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_stream.client import Fluvio
from spark_stream.client.profile import Profile, save_profile
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.redis_server import free_port
from spu.storage.layout import replica_dir
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _read(spark: SparkSession, cluster: LocalCluster, **options: str):  # type: ignore[no-untyped-def]
    reader = spark.read.format("fluvio").option("endpoint", cluster.endpoint)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_read_equals_what_was_produced(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=3, replicas=2)
    keys = [f"k{i % 7}" for i in range(300)]
    values = [f"value-{i}" for i in range(300)]
    produce(fluvio, topic, values, keys=keys)
    df = _read(spark, fluvio_cluster, topic=topic)
    assert df.rdd.getNumPartitions() == 3
    expected = spark.createDataFrame(
        list(zip(keys, values, strict=True)), "key string, value string"
    ).select(F.col("key").cast("binary"), F.col("value").cast("binary"))
    assert_df_equality(
        df.select("key", "value"), expected, ignore_row_order=True, ignore_nullable=True
    )
    per_partition = (
        df.groupBy("topic", "partition")
        .agg(
            F.min("offset").alias("lo"),
            F.max("offset").alias("hi"),
            F.count("*").alias("n"),
            F.max("timestampType").alias("tt"),
        )
        .collect()
    )
    assert {r["topic"] for r in per_partition} == {topic}
    for row in per_partition:
        assert (row["lo"], row["hi"] - row["lo"] + 1, row["tt"]) == (0, row["n"], 0)
    # The same key always lands in the same partition (hash partitioning on produce).
    spread = df.groupBy("key").agg(F.countDistinct("partition").alias("p"))
    assert spread.where("p > 1").count() == 0


def test_min_partitions_splits_ranges_without_changing_the_data(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=1)
    produce(fluvio, topic, [f"v{i}" for i in range(1000)])
    whole = _read(spark, fluvio_cluster, topic=topic)
    split = _read(spark, fluvio_cluster, topic=topic, minPartitions="4")
    assert split.rdd.getNumPartitions() == 4
    assert_df_equality(split, whole, ignore_row_order=True)
    assert split.select(F.countDistinct("offset")).first()[0] == 1000


def test_local_reads_and_network_fetches_return_the_same_rows(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2, replicas=2)
    produce(fluvio, topic, [f"v{i}" for i in range(2000)], keys=[f"k{i}" for i in range(2000)])
    local = _read(spark, fluvio_cluster, topic=topic)  # localReads defaults to true
    network = _read(spark, fluvio_cluster, topic=topic, localReads="false")
    uncommitted = _read(spark, fluvio_cluster, topic=topic, isolation="uncommitted")
    assert local.count() == 2000
    assert_df_equality(local, network, ignore_row_order=True)
    assert_df_equality(uncommitted, network, ignore_row_order=True)


def test_starting_and_ending_offsets_json(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    produce(fluvio, topic, [f"a{i}" for i in range(50)], partition=0)
    produce(fluvio, topic, [f"b{i}" for i in range(50)], partition=1)
    df = _read(
        spark, fluvio_cluster, topic=topic,
        startingOffsets=json.dumps({topic: {"0": 10, "1": -2}}),
        endingOffsets=json.dumps({topic: {"0": 20}}),
    )  # fmt: skip
    rows = {(r["partition"], r["offset"]) for r in df.select("partition", "offset").collect()}
    assert rows == {(0, o) for o in range(10, 20)} | {(1, o) for o in range(50)}


def test_starting_and_ending_timestamp(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    base = 1_700_000_000_000_000
    produce(
        fluvio,
        topic,
        [f"v{i}" for i in range(100)],
        timestamps_us=[base + i * 1_000_000 for i in range(100)],
    )
    df = _read(
        spark,
        fluvio_cluster,
        topic=topic,
        startingTimestamp=str(base // 1000 + 30_000),
        endingTimestamp=str(base // 1000 + 40_000),
    )
    offsets = sorted(r["offset"] for r in df.select("offset").collect())
    assert offsets == list(range(30, 40))
    first = df.orderBy("offset").first()
    assert first is not None and first["timestamp"].timestamp() == (base / 1e6) + 30


def test_headers_column(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    producer = fluvio.topic_producer(topic, acks="all", linger_ms=0)
    producer.send(b"k", b"v", headers=[("trace", b"abc")]).result(timeout=30)
    producer.close()
    row = _read(spark, fluvio_cluster, topic=topic, includeHeaders="true").first()
    assert row is not None
    assert [(h["key"], bytes(h["value"])) for h in row["headers"]] == [("trace", b"abc")]


def test_multiple_topics_and_a_pattern(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    a = new_topic(prefix="multi")
    b = new_topic(prefix="multi", partitions=2)
    produce(fluvio, a, ["a"] * 5)
    produce(fluvio, b, ["b"] * 7)
    both = _read(spark, fluvio_cluster, topics=f"{a},{b}")
    counts = {r["topic"]: r["count"] for r in both.groupBy("topic").count().collect()}
    assert counts == {a: 5, b: 7}
    pattern = f"({a}|{b})"
    by_pattern = _read(spark, fluvio_cluster, topicPattern=pattern)
    assert_df_equality(by_pattern, both, ignore_row_order=True)


def test_committed_hides_what_a_paused_follower_has_not_copied(
    spark: SparkSession, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(replicas=2)
    produce(fluvio, topic, ["before"] * 10)
    info = fluvio.topic_partitions(topic)[0]
    follower = next(r for r in info.replicas if r != info.leader)
    wait_until(lambda: fluvio.fetch_offsets(topic, 0).hw == 10, 30, "HW to reach 10")
    pid = fluvio_cluster.spu_pid(follower)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        produce(fluvio, topic, ["after"] * 5, acks="leader")
        offsets = fluvio.fetch_offsets(topic, 0)
        assert (offsets.hw, offsets.leo) == (10, 15)
        committed = _read(spark, fluvio_cluster, topic=topic)
        uncommitted = _read(spark, fluvio_cluster, topic=topic, isolation="uncommitted")
        assert committed.count() == 10
        assert uncommitted.count() == 15
        assert committed.where("value = cast('after' as binary)").count() == 0
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: fluvio.fetch_offsets(topic, 0).hw == 15, 30, "HW to catch up")
    assert _read(spark, fluvio_cluster, topic=topic).count() == 15


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topic": "no-such-topic"}, "does not exist"),
        ({"partitions": "0,9"}, "no partition(s) 9"),
        ({"startingOffsets": '{"TOPIC": {"0": 999}}'}, "past its end"),
        ({"endingOffsets": '{"TOPIC": {"5": 1}}'}, "does not read"),
    ],
)
def test_bad_options_against_the_cluster(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    options: dict[str, str],
    message: str,
) -> None:
    topic = new_topic()
    produce(fluvio, topic, ["x"])
    resolved = {"topic": topic} | {k: v.replace("TOPIC", topic) for k, v in options.items()}
    with pytest.raises(Exception, match=re.escape(message)):
        _read(spark, fluvio_cluster, **resolved).collect()


_READ_WITHOUT_ENDPOINT = """
import json, sys
from datasource.session import local_session
spark = local_session("fluvio-endpoint-env", master="local[1]", jvm_connector=False)
try:
    df = spark.read.format("fluvio").option("topic", sys.argv[1]).load()
    print(json.dumps(sorted(r["value"].decode() for r in df.select("value").collect())))
finally:
    spark.stop()
"""


def test_fluvio_endpoint_names_the_cluster_without_an_endpoint_option(
    fluvio: Fluvio, new_topic: Callable[..., str], fluvio_cluster: LocalCluster, tmp_path: Path
) -> None:
    """A batch read with no ``endpoint`` option reads the cluster ``FLUVIO_ENDPOINT``
    names while the profile names a dead address.

    Spark's Python workers (where the driver-side planning runs) inherit the environment
    the session started with, so this needs a session started with the variable set: a
    fresh Spark in a child process, not the shared session.
    """
    topic = new_topic(partitions=2)
    values = [f"v{i}" for i in range(20)]
    produce(fluvio, topic, values)
    dead = save_profile(Profile(endpoint=f"127.0.0.1:{free_port()}"), tmp_path / "profile.json")
    env = os.environ | {"FLUVIO_ENDPOINT": fluvio_cluster.endpoint, "FLUVIO_PROFILE": str(dead)}
    done = subprocess.run(
        [sys.executable, "-c", _READ_WITHOUT_ENDPOINT, topic],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == sorted(values)


def test_a_damaged_frame_fails_the_read_naming_it_unless_skipped(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    request: pytest.FixtureRequest,
) -> None:
    """Both sources name the damaged range; the Python source skips it when asked, the
    JVM connector refuses to be asked (it has no skip path)."""
    topic = new_topic()
    for part in (["a0", "a1"], ["rot2", "rot3"], ["b4", "b5"]):
        produce(fluvio, topic, part)  # one frame each
    leader = fluvio.topic_partitions(topic)[0].leader
    assert leader is not None
    log_file = replica_dir(fluvio_cluster.spu_dir(leader), topic, 0) / f"{0:020}.log"
    at = log_file.read_bytes().find(b"rot3") + 1
    with log_file.open("r+b") as f:  # bit rot inside the second frame's values, in place
        f.seek(at)
        f.write(b"\x00")

    with pytest.raises(Exception, match=re.escape("crc mismatch in the frame of offsets [2, 3]")):
        _read(spark, fluvio_cluster, topic=topic).collect()
    if request.node.callspec.params["spark"] == "jvm":
        with pytest.raises(Exception, match="'skipCorruptFrames' is not supported by the JVM"):
            _read(spark, fluvio_cluster, topic=topic, skipCorruptFrames="true").collect()
        return
    rows = _read(spark, fluvio_cluster, topic=topic, skipCorruptFrames="true").collect()
    assert sorted((r.offset, bytes(r.value)) for r in rows) == [
        (0, b"a0"), (1, b"a1"), (4, b"b4"), (5, b"b5")
    ]  # fmt: skip
