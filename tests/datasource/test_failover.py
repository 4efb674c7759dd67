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
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.harness.processes import SpuChild
from tests.integration.helpers import make_topic
from tests.integration.test_standby_sc import (
    publics,
    start_spus,
    two_scs,
    wait_active,
    wait_spus_online,
)

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    pytest.mark.timeout(600),
]

ROWS = 300


def _values(fluvio: Fluvio, topic: str, partitions: int) -> list[str]:
    """Every record value of the topic, as the Python client reads it."""
    out: list[str] = []
    for partition in range(partitions):
        for batch in fluvio.fetch_batches(topic, partition, 0):
            out.extend(v.decode() for v in batch.column("value").to_pylist())
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


@pytest.mark.spark_source(
    "jvm", reason="the Python client's failover is tested in tests/integration"
)
def test_jvm_writer_fails_over_from_a_hung_leader(
    spark: SparkSession,
    fluvio: Fluvio,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=1, replicas=3)
    leader = fluvio.topic_partitions(topic)[0].leader
    assert leader is not None
    pid = fluvio_cluster.spu_pid(leader)
    assert pid is not None
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
