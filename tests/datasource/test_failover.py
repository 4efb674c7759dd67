"""``format("fluvio")`` through SC and leader failures, with real processes (issue 15).

- **A dead first SC** (both paths). Two SCs on one Redis (the second a standby), two SPUs
  given both SCs' private addresses. The active SC is SIGKILLed and the standby takes
  over; then a ``format("fluvio")`` batch read and a write, with ``endpoint`` listing the
  killed SC first, connect to the standby-turned-active SC (``ScEndpoints``: the JVM's
  in ``connector/``, the Python client's in ``spark_stream/net``) and read back exactly
  what was produced.
- **A hung leader** (the JVM path; the Python client's failover is tested in
  ``tests/integration/test_hung_leader.py``). The leader of an RF 3 partition of the
  shared cluster is SIGSTOPped and the JVM writer writes at once: its produce requests
  go to the stopped SPU, which the metadata still names, and hang. The SC marks the SPU
  offline and elects another leader after its heartbeat timeout (about 6 s); the writer,
  which asks the SC about the leader while a request waits, abandons the request and
  retries on the new leader (its sequence numbers dedupe). The writer's request timeout
  (30 s) is also its whole retry budget, so a writer that waited the hung request out
  would fail the write with ``RequestTimeoutError``: the write completing shows the
  failover without timing it. Every row is read back exactly once.
- **JVM reads from a hung leader**. The driver's offset requests: with the leader of one
  partition (of three, RF 3) SIGSTOPped, a ``format("fluvio")`` batch read and an
  ``availableNow`` micro-batch query start at once; both plan with ``FETCH_OFFSETS`` to
  every partition's leader, the stopped one included. The executors' fetches: a batch
  read whose Python UDF (fed the records' values, so the scan cannot run far ahead of
  it) stops the leader at its first row, so the scan's later fetches go to the stopped
  SPU on the connection it already holds. Each request asks the SC while it waits and
  moves to the new leader at the offset it asked for; before, each waited out its 30 s
  request timeout, which is also its whole retry budget, and failed the query with
  ``REQUEST_TIMEOUT`` ("no reply from ... in time"). Every record is read exactly once.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.functions import udf

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.harness.processes import SpuChild
from tests.integration.helpers import leader_pid, make_topic
from tests.integration.test_standby_sc import (
    publics,
    start_spus,
    two_scs,
    wait_active,
    wait_spus_online,
)
from tests.polling import wait_until
from tests.spark_conftest import produce

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    pytest.mark.timeout(600),
]

#: The hung-leader tests run on the JVM path; the Python client's failover is tested in
#: ``tests/integration/test_hung_leader.py``.
JVM_ONLY = pytest.mark.spark_source(
    "jvm", reason="the Python client's failover is tested in tests/integration"
)

ROWS = 300


def _values(fluvio: Fluvio, topic: str, partitions: int) -> list[str]:
    """Every record value of the topic, as the Python client reads it."""
    out: list[str] = []
    for partition in range(partitions):
        for batch in fluvio.fetch_batches(topic, partition, 0):
            out.extend(v.decode() for v in batch.column("value").to_pylist())
    return out


def _indexes(fluvio: Fluvio, topic: str) -> dict[int, int]:
    """Each record's index (its value's prefix) by offset, as the Python client reads it."""
    out: dict[int, int] = {}
    for batch in fluvio.fetch_batches(topic, 0, 0):
        for offset, value in zip(
            batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True
        ):
            out[offset] = int(value.split(b":", 1)[0])
    return out


def test_reads_and_writes_go_through_a_standby_when_the_first_sc_is_dead(
    spark: SparkSession, redis_url: str, tmp_path: Path
) -> None:
    a, b = two_scs(redis_url, tmp_path)
    spus: list[SpuChild] = []
    try:
        start_spus((a, b), [5101, 5102], tmp_path, spus)
        with Fluvio.connect(publics(a, b), timeout=20) as fluvio:
            wait_spus_online(fluvio, 2)
            topic = make_topic(fluvio, partitions=2, replication=2)
            producer = fluvio.topic_producer(topic, acks="all")
            produced = [f"p{i}" for i in range(ROWS)]
            for value in produced:
                producer.send(None, value)
            producer.flush()
            a.kill(signal.SIGKILL)
            wait_active(b)
            endpoint = publics(a, b)  # the killed SC first
            read = spark.read.format("fluvio").option("endpoint", endpoint)
            got = [r.value for r in read.option("topic", topic).load().selectExpr(
                "cast(value as string) as value").collect()]  # fmt: skip
            assert sorted(got) == sorted(produced)
            written = [f"w{i}" for i in range(ROWS)]
            frame = spark.createDataFrame([(v,) for v in written], "value string")
            frame.write.format("fluvio").option("endpoint", endpoint).option("topic", topic).save()
            back = [r.value for r in read.option("topic", topic).load().selectExpr(
                "cast(value as string) as value").collect()]  # fmt: skip
            print(f"through {endpoint} (first SC killed): read {len(got)}, wrote {ROWS}")
            assert sorted(back) == sorted(produced + written)
            assert sorted(_values(fluvio, topic, 2)) == sorted(produced + written)
    finally:
        for spu in spus:
            spu.stop()
        b.stop()
        a.stop()


@JVM_ONLY
def test_jvm_writer_fails_over_from_a_hung_leader(
    spark: SparkSession,
    fluvio: Fluvio,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=1, replicas=3)
    leader, pid = leader_pid(fluvio, fluvio_cluster, topic)
    before = [f"b{i}" for i in range(ROWS)]
    during = [f"d{i}" for i in range(ROWS)]

    def write(values: list[str]) -> None:
        frame = spark.createDataFrame([(v,) for v in values], "value string")
        writer = frame.write.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        writer.option("topic", topic).option("acks", "all").save()

    write(before)  # the leader took writes before it hung
    os.kill(pid, signal.SIGSTOP)
    try:
        write(during)  # its first requests go to the stopped leader
        new_leader = fluvio.topic_partitions(topic)[0].leader
    finally:
        os.kill(pid, signal.SIGCONT)
    log = _values(fluvio, topic, 1)
    print(f"leader {leader} stopped; the write moved to leader {new_leader}; {len(log)} records")
    assert new_leader not in (None, leader)
    assert sorted(log) == sorted(before + during)  # every row exactly once
    assert sorted(log[:ROWS]) == sorted(before)  # the rows written before the hang come first


@contextmanager
def _continued(fluvio: Fluvio, spu_id: int, pid: int) -> Iterator[None]:
    """Within: the test may SIGSTOP ``pid``. After: it is continued and back online, so
    the shared cluster has three SPUs for the next test."""
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
        wait_until(
            lambda: any(
                s.spu_id == spu_id and s.status.is_online for s in fluvio.admin().list_spus()
            ),
            60,
            f"SPU {spu_id} back online",
        )


@JVM_ONLY
def test_jvm_read_planning_fails_over_from_a_hung_leader(
    spark: SparkSession,
    fluvio: Fluvio,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=3, replicas=3)
    produced = [f"r{i}" for i in range(ROWS)]
    for partition in range(3):
        produce(fluvio, topic, produced[partition::3], partition=partition)
    leader, pid = leader_pid(fluvio, fluvio_cluster, topic)
    name = f"hung_{uuid.uuid4().hex[:8]}"
    with _continued(fluvio, leader, pid):
        os.kill(pid, signal.SIGSTOP)
        query = (
            spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", topic).option("startingOffsets", "earliest").load()
            .selectExpr("partition", "offset", "cast(value as string) as value")
            .writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
        )  # fmt: skip
        try:
            read = spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            batch = [r.value for r in read.option("topic", topic).load().selectExpr(
                "cast(value as string) as value").collect()]  # fmt: skip
            assert query.awaitTermination(240), "availableNow query did not finish"
            assert query.exception() is None, str(query.exception())
        finally:
            query.stop()
        streamed = spark.sql(f"select partition, offset, value from {name}").collect()
        new_leader = fluvio.topic_partitions(topic)[0].leader
    print(f"leader {leader} of {topic}/0 stopped, replaced by {new_leader}: "
          f"batch read {len(batch)}, stream read {len(streamed)} of {ROWS}")  # fmt: skip
    assert new_leader not in (None, leader)
    assert sorted(batch) == sorted(produced)
    assert sorted(r.value for r in streamed) == sorted(produced)
    for partition in range(3):  # each partition once, in offset order
        offsets = [r.offset for r in streamed if r.partition == partition]
        assert sorted(offsets) == list(range(ROWS // 3))


BIG_ROWS = 2000
BIG_VALUE = 8000
FRAME_ROWS = 10


@JVM_ONLY
def test_jvm_batch_reader_fails_over_from_a_leader_hung_mid_read(
    spark: SparkSession,
    fluvio: Fluvio,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=1, replicas=3)
    pad = "x" * BIG_VALUE
    producer = fluvio.topic_producer(topic, acks="all", linger_ms=0)
    try:  # many frames (one per send), so the reader fetches many times
        futures = [
            producer.send_batch(
                pa.table({"value": [f"{i}:{pad}" for i in range(start, start + FRAME_ROWS)]}),
                partition=0,
            )
            for start in range(0, BIG_ROWS, FRAME_ROWS)
        ]
        for future in futures:
            future.result(timeout=120)
    finally:
        producer.close()
    leader, pid = leader_pid(fluvio, fluvio_cluster, topic)
    marker = str(tmp_path / "stopped")

    def stop_leader_once(value: bytes) -> int:
        """The record's index; the first call (in Spark's Python worker) stops the leader."""
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            os.kill(pid, signal.SIGSTOP)
        except FileExistsError:
            pass
        return int(value.split(b":", 1)[0])

    index = udf(stop_leader_once, "long", useArrow=False)  # rows pickled in batches
    with _continued(fluvio, leader, pid):
        read = (
            spark.read.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
            .option("topic", topic).option("localReads", "false").option("fetchMaxBytes", "65536")
            .load()
        )  # fmt: skip
        rows = read.select("offset", index("value").alias("idx")).collect()
        stopped = os.path.exists(marker)
        new_leader = fluvio.topic_partitions(topic)[0].leader
    print(f"leader {leader} stopped at the first row, replaced by {new_leader}: "
          f"read {len(rows)} of {BIG_ROWS}")  # fmt: skip
    assert stopped and new_leader not in (None, leader)
    assert sorted(r.offset for r in rows) == list(range(BIG_ROWS))  # each offset once
    assert sorted(r.idx for r in rows) == list(range(BIG_ROWS))  # each record once
    assert {r.offset: r.idx for r in rows} == _indexes(fluvio, topic)  # at its offset


@JVM_ONLY
def test_jvm_continuous_stream_fails_over_from_a_hung_leader(
    spark: SparkSession,
    fluvio: Fluvio,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=1, replicas=3)
    before = [f"b{i}" for i in range(ROWS)]
    during = [f"d{i}" for i in range(ROWS)]
    produce(fluvio, topic, before)
    leader, pid = leader_pid(fluvio, fluvio_cluster, topic)
    name = f"hung_{uuid.uuid4().hex[:8]}"
    query = (
        spark.readStream.format("fluvio").option("endpoint", fluvio_cluster.endpoint)
        .option("topic", topic).option("startingOffsets", "earliest").load()
        .selectExpr("offset", "cast(value as string) as value")
        .writeStream.format("memory").queryName(name).trigger(continuous="1 second").start()
    )  # fmt: skip

    def count() -> int:
        return spark.sql(f"select * from {name}").count()

    try:
        with _continued(fluvio, leader, pid):
            wait_until(lambda: count() >= ROWS, 180, "the rows produced before the hang")
            os.kill(pid, signal.SIGSTOP)  # the reader's stream is open on it, idle
            produce(fluvio, topic, during)  # acknowledged by the leader the SC elects next
            # Before SIGCONT: a stream that waited for the stopped SPU reads none of them.
            wait_until(lambda: count() >= 2 * ROWS, 180, "the rows produced during the hang")
            assert query.exception() is None, str(query.exception())
            new_leader = fluvio.topic_partitions(topic)[0].leader
    finally:
        query.stop()
    rows = spark.sql(f"select offset, value from {name}").collect()
    print(f"leader {leader} stopped with the stream open, replaced by {new_leader}: "
          f"read {len(rows)} of {2 * ROWS}")  # fmt: skip
    assert new_leader not in (None, leader)
    assert sorted(r.offset for r in rows) == list(range(2 * ROWS))  # each exactly once
    assert sorted(r.value for r in rows) == sorted(before + during)
