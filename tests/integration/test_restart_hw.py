"""A leader SIGKILLed and restarted (replication 1) never reports a lower high watermark.

Before the fix the restarted leader served the checkpointed HW (written every ~10 s,
so often 0) until its first tick, about a second; a consumer starting at
``Offset.end()`` in that window replayed the whole partition. Here the SPU is restarted
while a client polls the partition's offsets as fast as it can, and a consumer opened
at the end in the first moments must see only the record produced after the restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.errors import FluvioError
from spark_stream.local.cluster import LocalCluster
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import make_topic, running_cluster

pytestmark = pytest.mark.integration

SENT = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("restart-hw")), spus=1) as running:
        yield running


def test_restarted_leader_never_reports_a_lower_hw(cluster: LocalCluster) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=1, replication=1)
        with fluvio.topic_producer(topic, acks="all", linger_ms=1) as producer:
            futures = [producer.send(None, f"r{i:04d}".encode()) for i in range(SENT)]
            producer.flush(timeout=30)
        assert all(f.exception(10) is None for f in futures)
        assert fluvio.fetch_offsets(topic, 0).hw == SENT
        leader = fluvio.topic_partitions(topic)[0].leader
        assert leader is not None
        assert kill_spu(cluster, leader)  # well within the 10 s checkpoint period

        restarted = threading.Thread(target=cluster.start, daemon=True)
        restarted.start()
        seen: list[int] = []
        first_at_end = (-1, b"")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(seen) < 200:
            try:
                seen.append(fluvio.fetch_offsets(topic, 0).hw)
            except FluvioError:
                time.sleep(0.005)  # not back yet
                continue
            if len(seen) == 1:  # the first moment it serves: a consumer at the end
                first_at_end = _first_record_at_end(fluvio, topic)
        restarted.join(90)
        assert seen, "the restarted SPU never answered"
        offset, value = first_at_end
        assert offset >= SENT, f"the consumer at end replayed from {offset}"
        assert value.startswith(b"after")
        assert min(seen) == SENT, f"HW reported after restart: {sorted(set(seen))}"


def _first_record_at_end(fluvio: Fluvio, topic: str) -> tuple[int, bytes]:
    """The first record a consumer opened at ``Offset.end()`` now receives; records
    ``after-k`` are produced until it has one (when it resolves its start is its own)."""
    got: list[tuple[int, bytes]] = []
    stream = fluvio.partition_consumer(topic, 0).stream(Offset.end())

    def consume() -> None:
        for record in stream:
            got.append((record.offset, record.value))
            return

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    with fluvio.topic_producer(topic, acks="all") as after:
        k = 0
        while reader.is_alive() and k < 600:
            after.send(None, f"after-{k}".encode()).result(30)
            k += 1
            reader.join(0.05)
    stream.close()
    assert got, "the consumer at end received nothing"
    return got[0]
