"""Chaos: SIGKILL a random SPU every few seconds under load, restart it, lose nothing.

Three SPUs, a 3-partition topic with replication 3 (min in-sync 2), an idempotent
producer with acks=all sending keyed records throughout. For a bounded time (30 s) a
random SPU is killed, restarted after a moment, and given (bounded) time to rejoin
before the next kill. Afterwards every acknowledged record must be in the log exactly
once, and each partition's log must hold its acknowledged records in send order.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, fnv1a_32
from spark_stream.client.producer.futures import DeliveryFuture
from spark_stream.local.cluster import LocalCluster
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import durable_producer, make_topic, running_cluster
from tests.polling import wait_until

pytestmark = pytest.mark.integration

CHAOS_SECONDS = 30.0
PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("chaos")), spus=3) as running:
        yield running


def all_in_sync(fluvio: Fluvio, topic: str) -> bool:
    parts = fluvio.admin().list_partitions(topic)
    return all(
        p.status.resolution.value == "Online"
        and sum(1 for r in p.status.lrs if r.in_sync) == len(p.spec.replicas)
        for p in parts
    )


def test_random_spu_kills_lose_and_duplicate_nothing(cluster: LocalCluster) -> None:
    rng = random.Random(20240601)
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=PARTITIONS, replication=3, min_in_sync_replicas=2)
        producer = durable_producer(
            fluvio, topic, linger_ms=5, retries=200, delivery_timeout_ms=120_000
        )
        sent: list[tuple[bytes, bytes, DeliveryFuture]] = []
        stop = threading.Event()

        def produce() -> None:
            i = 0
            while not stop.is_set():
                key, value = f"key-{i % 50}".encode(), f"rec-{i:07d}".encode()
                sent.append((key, value, producer.send(key, value)))
                i += 1
                if i % 20 == 0:
                    time.sleep(0.01)  # a steady load of about 2,000 records/s

        writer = threading.Thread(target=produce, daemon=True)
        writer.start()
        kills = 0
        try:
            end = time.monotonic() + CHAOS_SECONDS
            while time.monotonic() < end:
                victim = rng.choice(cluster.layout.spu_ids)
                assert kill_spu(cluster, victim)
                kills += 1
                time.sleep(rng.uniform(0.5, 1.5))  # the SPU stays down a moment
                cluster.start()  # starts the missing SPU again
                online = {s.spu_id for s in fluvio.admin().list_spus() if s.status.is_online}
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not (
                    victim in online and all_in_sync(fluvio, topic)
                ):
                    time.sleep(0.1)  # bounded wait for the restarted SPU to rejoin
                    online = {s.spu_id for s in fluvio.admin().list_spus() if s.status.is_online}
                time.sleep(rng.uniform(0.5, 2.0))  # load runs with all replicas up
        finally:
            stop.set()
            writer.join(30)
        producer.flush(timeout=120)
        producer.close()
        assert kills >= 5

        acked = [(k, v) for k, v, f in sent if f.exception(60) is None]
        assert len(acked) == len(sent), f"{len(sent) - len(acked)} records not delivered"
        assert len(acked) > 10_000

        wait_until(lambda: all_in_sync(fluvio, topic), 60, "replicas back in sync")
        total = 0
        for part in range(PARTITIONS):
            log = [
                value
                for batch in fluvio.fetch_batches(topic, part, 0)
                for value in batch.column("value").to_pylist()
            ]
            dupes = [v for v, n in Counter(log).items() if n > 1]
            assert not dupes, f"partition {part} holds duplicates, e.g. {dupes[:3]}"
            expected = [v for k, v in acked if fnv1a_32(k) % PARTITIONS == part]
            assert log == expected, f"partition {part} differs from what was acknowledged"
            total += len(log)
        assert total == len(acked)
