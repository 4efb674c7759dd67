"""The SC going away: the data plane keeps working, the metadata watch resumes after."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.launcher import process_alive
from tests.integration.helpers import make_topic, running_cluster
from tests.polling import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("sc-restart")), spus=2) as running:
        yield running


def test_client_survives_an_sc_restart(cluster: LocalCluster) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        before = make_topic(fluvio, partitions=1, replication=2)
        producer = fluvio.topic_producer(before, acks="all")
        producer.send(None, b"one").result(30)

        pid = process_alive(cluster.pid_file("sc"))
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: process_alive(cluster.pid_file("sc")) is None, 10, "the SC to die")
        # Leaders are known and SPUs keep serving: produce and read without the SC.
        producer.send(None, b"two").result(30)
        values = [
            r.value
            for r in fluvio.partition_consumer(before, 0).stream(
                Offset.beginning(), stop_at_end=True
            )
        ]
        assert values == [b"one", b"two"]

        cluster.start()  # the SC comes back on the same ports, from the same Redis
        after = make_topic(fluvio, partitions=1)  # needs the resumed metadata watch
        fluvio.topic_producer(after).send(None, b"three").result(30)
        assert fluvio.fetch_offsets(after, 0).hw == 1
        producer.send(None, b"four").result(30)
        assert fluvio.fetch_offsets(before, 0).hw == 3  # one, two, four
