"""Leader failure under load: SIGKILL the leader while a producer and a consumer run.

Zero acknowledged records may be lost (acks=all, replication 3), none may appear twice
(idempotent producer), and the consumer must continue past the failover from the next
offset, reading exactly the log.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.client.producer.futures import DeliveryFuture
from spark_stream.local.cluster import LocalCluster
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import durable_producer, make_topic, running_cluster
from tests.polling import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("failover")), spus=3) as running:
        yield running


def test_leader_sigkill_loses_no_acknowledged_record(cluster: LocalCluster) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=1, replication=3, min_in_sync_replicas=2)
        producer = durable_producer(fluvio, topic, delivery_timeout_ms=60_000)
        consumed: list[tuple[int, bytes]] = []
        stop_consumer = threading.Event()
        consumer_error: list[BaseException] = []

        def consume() -> None:
            stream = fluvio.partition_consumer(topic, 0).stream(Offset.beginning())
            try:
                for record in stream:
                    consumed.append((record.offset, record.value))
                    if stop_consumer.is_set():
                        return
            except BaseException as exc:  # reported to the test thread
                consumer_error.append(exc)
            finally:
                stream.close()

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        futures: list[tuple[bytes, DeliveryFuture]] = []
        leader = fluvio.topic_partitions(topic)[0].leader
        assert leader is not None
        killed_at = -1
        deadline = time.monotonic() + 60
        i = 0
        while time.monotonic() < deadline:
            value = f"r{i:06d}".encode()
            futures.append((value, producer.send(None, value)))
            i += 1
            if i % 50 == 0:
                time.sleep(0.005)  # a steady producer, not a flood
            if killed_at < 0 and i == 2000:
                assert kill_spu(cluster, leader)
                killed_at = i
            if killed_at >= 0 and i >= killed_at + 2000:
                break
        producer.flush(timeout=60)
        acked = [v for v, f in futures if f.exception(30) is None]
        assert len(acked) == len(futures), "every record must be delivered through failover"
        new_leader = fluvio.topic_partitions(topic)[0].leader
        assert new_leader is not None and new_leader != leader

        log = [v for b in fluvio.fetch_batches(topic, 0, 0) for v in b.column("value").to_pylist()]
        assert log == acked  # nothing lost, nothing duplicated, in order

        wait_until(lambda: len(consumed) >= len(acked), 60, "the consumer to catch up")
        stop_consumer.set()
        producer.send(None, b"wake").result(30)  # lets the reader see the stop flag
        reader.join(30)
        assert not consumer_error
        assert [v for _, v in consumed[: len(acked)]] == acked
        assert [o for o, _ in consumed[: len(acked)]] == list(range(len(acked)))
        cluster.start()  # starts the killed SPU again
