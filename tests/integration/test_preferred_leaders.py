"""Leaders come back: after an SPU dies and returns, the SC hands every partition back to
its preferred replica (the first of its replica list), and no record is lost or doubled.

The SC checks every second in the first test (``FLUVIO_SC_LEADER_REBALANCE_INTERVAL_S``);
without the sweep the survivors keep leading what they took over and its wait times out.
The second runs with the sweep off and moves leaders with ``fluvio partition
elect-preferred``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio
from spark_stream.client.producer.futures import DeliveryFuture
from spark_stream.local.cluster import LocalCluster
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import durable_producer, make_topic, running_cluster
from tests.polling import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    env = {"FLUVIO_SC_LEADER_REBALANCE_INTERVAL_S": "1"}
    path = Path(tmp_path_factory.mktemp("preferred"))
    with running_cluster(path, spus=3, env=env) as running:
        yield running


@pytest.fixture(scope="module")
def manual_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    env = {"FLUVIO_SC_LEADER_REBALANCE_ENABLED": "false"}
    path = Path(tmp_path_factory.mktemp("preferred-manual"))
    with running_cluster(path, spus=3, env=env) as running:
        yield running


def cli(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLUVIO_ENDPOINT": cluster.endpoint}
    argv = [sys.executable, "-m", "spark_stream.cli", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def _leaders(fluvio: Fluvio, topic: str) -> dict[int, int | None]:
    return {i.partition: i.leader for i in fluvio.topic_partitions(topic)}


def test_leaders_return_to_preferred_replicas_and_no_record_is_lost(
    cluster: LocalCluster,
) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=PARTITIONS, replication=3, min_in_sync_replicas=2)
        infos = fluvio.topic_partitions(topic)
        preferred = {i.partition: i.replicas[0] for i in infos}
        assert _leaders(fluvio, topic) == preferred  # a new topic starts balanced
        victim = preferred[0]
        moved = sorted(p for p, spu in preferred.items() if spu == victim)
        producer = durable_producer(fluvio, topic, delivery_timeout_ms=120_000)
        futures: list[tuple[bytes, DeliveryFuture]] = []
        stop = threading.Event()

        def produce(phase: str, count: int | None = None) -> None:
            i = 0
            while (count is None and not stop.is_set()) or (count is not None and i < count):
                value = f"{phase}{i:06d}".encode()
                futures.append((value, producer.send(None, value, partition=i % PARTITIONS)))
                i += 1
                if i % 50 == 0:
                    time.sleep(0.01)  # a steady producer, not a flood

        produce("before-", 600)
        producer.flush(timeout=60)
        assert kill_spu(cluster, victim)
        wait_until(
            lambda: all(_leaders(fluvio, topic)[p] not in (None, victim) for p in moved),
            60,
            f"partitions {moved} led by a survivor",
        )
        produce("during-", 600)
        producer.flush(timeout=60)
        assert _leaders(fluvio, topic) != preferred

        # The SPU comes back and catches up while a producer runs; leadership moves
        # under it, partition by partition.
        background = threading.Thread(target=produce, args=("moving-",), daemon=True)
        background.start()
        try:
            cluster.start()  # starts the killed SPU again
            wait_until(
                lambda: _leaders(fluvio, topic) == preferred,
                120,
                f"leaders back on their preferred replicas {preferred}",
            )
        finally:
            stop.set()
            background.join(60)
        produce("after-", 600)
        producer.flush(timeout=120)

        acked = [v for v, f in futures if f.exception(60) is None]
        assert len(acked) == len(futures), "every record must be delivered across the moves"
        read = [
            v
            for p in range(PARTITIONS)
            for b in fluvio.fetch_batches(topic, p, 0)
            for v in b.column("value").to_pylist()
        ]
        counts = Counter(read)
        assert sorted(counts) == sorted(acked)  # nothing lost
        assert max(counts.values()) == 1  # nothing doubled
        assert any(v.startswith(b"moving-") for v in acked)


def test_elect_preferred_moves_leaders_back_on_demand(manual_cluster: LocalCluster) -> None:
    cluster = manual_cluster
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=PARTITIONS, replication=3)
        preferred = {i.partition: i.replicas[0] for i in fluvio.topic_partitions(topic)}
        victim = preferred[0]
        moved = sorted(f"{topic}-{p}" for p, spu in preferred.items() if spu == victim)
        producer = fluvio.topic_producer(topic, acks="all", idempotence=True)
        sent = [f"v{i}".encode() for i in range(300)]
        for i, value in enumerate(sent[:150]):
            producer.send(None, value, partition=i % PARTITIONS)
        producer.flush(timeout=60)
        assert kill_spu(cluster, victim)
        wait_until(
            lambda: all(v not in (None, victim) for v in _leaders(fluvio, topic).values()),
            60,
            "every partition led by a survivor",
        )
        # The preferred replica is down: nothing moves, its partitions are pending.
        down = cli(cluster, "partition", "elect-preferred", "--topic", topic, "-O", "json")
        assert down.returncode == 0, down.stderr
        assert json.loads(down.stdout) == [{"partition": n, "result": "pending"} for n in moved]

        cluster.start()  # starts the killed SPU again
        for i, value in enumerate(sent[150:]):
            producer.send(None, value, partition=i % PARTITIONS)
        producer.flush(timeout=60)

        def victim_in_sync() -> bool:
            infos = fluvio.topic_partitions(topic)
            return all(victim in i.in_sync for i in infos if i.replicas[0] == victim)

        wait_until(victim_in_sync, 120, f"SPU {victim} back in sync")
        assert _leaders(fluvio, topic) != preferred  # the sweep is off: nothing moved

        back = cli(cluster, "partition", "elect-preferred", "--topic", topic)
        assert back.returncode == 0, back.stderr
        lines = back.stdout.splitlines()
        assert lines[0] == (
            f"moved {len(moved)} partition(s) to their preferred leader; 0 still led elsewhere"
        )
        assert sorted(line.split()[0] for line in lines[2:]) == moved
        assert _leaders(fluvio, topic) == preferred
        again = cli(cluster, "partition", "elect-preferred")
        assert again.returncode == 0, again.stderr
        assert again.stdout.startswith("moved 0 partition(s)")
        missing = cli(cluster, "partition", "elect-preferred", "--topic", "no-such-topic")
        assert missing.returncode == 1
        assert missing.stderr.startswith("error:") and "does not exist" in missing.stderr

        read = [
            v
            for p in range(PARTITIONS)
            for b in fluvio.fetch_batches(topic, p, 0)
            for v in b.column("value").to_pylist()
        ]
        assert sorted(read) == sorted(sent)
