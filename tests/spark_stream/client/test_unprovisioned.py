"""Partitions that will not get a leader by themselves, on a real 3-SPU cluster.

A topic with more replicas than SPUs is refused at create; created anyway
(``--allow-missing-spus``) it waits unprovisioned, and producing or consuming fails at
once with its state instead of timing out, until an SPU joins. A partition whose only
replica is down fails at once too, while a stream that lost that leader mid-way waits
for it to come back (failover).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import subprocess
import sys

import pyarrow as pa
import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.errors import FluvioError, InsufficientResourcesError, PartitionOfflineError
from spark_stream.local.cluster import LocalCluster
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import make_topic, unique
from tests.polling import wait_until

pytestmark = pytest.mark.integration

#: Bound on each CLI run: far above the second these take, far below the 60 s delivery
#: timeout the producer used to wait (and the consumer used to hang) before failing.
HANG_GUARD = 30


def cli(cluster: LocalCluster, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLUVIO_PROFILE": str(cluster.data_dir / "cli-profile.json")}
    return subprocess.run(
        [sys.executable, "-m", "spark_stream.cli", "--endpoint", cluster.endpoint, *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )


def not_provisioned(name: str, factor: int, spus: int = 3) -> str:
    return (
        f"topic {name!r} is not provisioned (InsufficientResources): "
        f"replication factor {factor} needs {factor} SPUs, {spus} registered"
    )


def test_cli_refuses_too_few_spus_and_fails_fast_on_a_topic_created_anyway(
    cluster: LocalCluster,
) -> None:
    name = unique("short")
    refused = cli(cluster, "topic", "create", name, "-r", "5")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        f"error: topic {name!r} not created: replication factor 5 needs 5 SPUs, 3 registered; "
        "add SPUs or use a smaller replication factor "
        "(--allow-missing-spus creates it anyway, unusable until the SPUs join)\n"
    )
    assert name not in cli(cluster, "topic", "list").stdout

    created = cli(cluster, "topic", "create", name, "-r", "5", "--allow-missing-spus")
    assert (created.returncode, created.stdout) == (0, f'topic "{name}" created\n')
    (listed,) = json.loads(cli(cluster, "topic", "list", "-O", "json").stdout)
    assert listed["status"] == "InsufficientResources"

    produced = cli(cluster, "produce", name, stdin="hello\n")
    assert produced.returncode == 1
    assert produced.stderr == f"error: {not_provisioned(name, 5)}\n"
    consumed = cli(cluster, "consume", name, "-B", "-d")
    assert (consumed.returncode, consumed.stdout) == (1, "")
    assert consumed.stderr == (
        f"error: partition {name}-0 has no leader: {not_provisioned(name, 5)}\n"
    )


def test_client_calls_fail_at_once_with_the_topic_state(fluvio: Fluvio) -> None:
    name = unique("short")
    fluvio.admin().create_topic(name, partitions=2, replication_factor=4, allow_missing_spus=True)
    state = re.escape(not_provisioned(name, 4))
    # Waits until the client's metadata shows the state, then raises it.
    with pytest.raises(InsufficientResourcesError, match=state):
        fluvio.topic_partitions(name)
    producer = fluvio.topic_producer(name)
    with pytest.raises(InsufficientResourcesError, match=state):
        producer.send(None, "x")
    with pytest.raises(InsufficientResourcesError, match=state):
        producer.send_batch(pa.table({"value": ["x"]}))
    producer.flush()  # nothing was queued
    producer.close()
    one = fluvio.partition_consumer(name, 1).stream(Offset.beginning(), stop_at_end=True)
    with pytest.raises(InsufficientResourcesError, match=f"partition {name}-1 has no leader"):
        next(one)
    every = fluvio.consumer(name).stream(Offset.beginning(), stop_at_end=True)
    with pytest.raises(InsufficientResourcesError, match=state):
        next(every)
    with pytest.raises(InsufficientResourcesError, match=f"partition {name}-0 has no leader"):
        fluvio.fetch_offsets(name, 0)


def test_partition_with_its_only_replica_down_fails_fast_but_a_stream_waits_for_it(
    cluster: LocalCluster, fluvio: Fluvio
) -> None:
    name = make_topic(fluvio, replication=1)
    leader = fluvio.topic_partitions(name)[0].leader
    assert leader is not None
    producer = fluvio.topic_producer(name, acks="all")
    producer.send(None, "before").result(HANG_GUARD)
    stream = fluvio.partition_consumer(name, 0).stream(Offset.beginning())
    assert next(stream).value == b"before"

    assert kill_spu(cluster, leader)
    # The SC writes the SPU Offline, then the partition Offline: once the client sees
    # the partition, it sees the SPU too.
    wait_until(
        lambda: fluvio.topic_partitions(name)[0].resolution == "Offline", 30, "partition Offline"
    )
    down = rf"partition {name}-0 has no leader: replicas \[{leader}\] offline"
    with pytest.raises(PartitionOfflineError, match=down):
        producer.send(None, "lost").result(HANG_GUARD)
    with pytest.raises(PartitionOfflineError, match=down):
        fluvio.fetch_offsets(name, 0)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        # The stream lost its leader while reading: it waits for it (failover).
        pending = pool.submit(next, stream)
        cluster.start()  # the SPU comes back
        producer.send(None, "after").result(HANG_GUARD)
        assert pending.result(timeout=HANG_GUARD).value == b"after"
    stream.close()
    producer.close()


def test_topic_waiting_for_spus_is_provisioned_when_one_joins(
    cluster: LocalCluster, fluvio: Fluvio
) -> None:
    # Last in the module: the cluster keeps its fourth SPU.
    name = unique("grow")
    fluvio.admin().create_topic(name, replication_factor=4, allow_missing_spus=True)
    with pytest.raises(InsufficientResourcesError):
        fluvio.topic_partitions(name)
    grown = LocalCluster(cluster.data_dir, spus=4, start_timeout=60.0, profile=cluster.profile)
    grown.start()  # registers and starts SPU 5004 (the module's fixture stops it)

    def usable() -> bool:
        try:
            infos = fluvio.topic_partitions(name)
            return (
                bool(infos)
                and infos[0].resolution == "Online"
                and bool(fluvio.fetch_offsets(name, 0))
            )
        except FluvioError:  # not provisioned or not served yet: poll again
            return False

    wait_until(usable, 60, f"{name} provisioned on 4 SPUs")
    with fluvio.topic_producer(name, acks="all") as producer:
        producer.send(None, "joined").result(HANG_GUARD)
    consumer = fluvio.partition_consumer(name, 0)
    assert [r.value for r in consumer.stream(Offset.beginning(), stop_at_end=True)] == [b"joined"]
