"""Deleted topics stay deleted: real Redis, SC and SPU processes.

The user's sequence: create a topic, produce two records, delete the topic, create it
again under the same name, consume from the beginning. The re-created topic must read
empty (offset 0), whichever SPUs it lands on, and the deleted topic's replica
directories must be gone from every SPU's data directory, also from an SPU that was
down when the topic was deleted (it learns it when it connects again).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.errors import StorageError
from spark_stream.local.cluster import LocalCluster
from spu.storage import ReplicaLog, read_uid
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import make_topic, running_cluster, unique
from tests.polling import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("topic-delete")), spus=3) as running:
        yield running


def replica_dirs(cluster: LocalCluster, name: str) -> dict[int, Path]:
    """SPU id -> the directory of replica ``name`` on that SPU, where there is one."""
    found = {i: cluster.spu_dir(i) / name for i in cluster.layout.spu_ids}
    return {i: path for i, path in found.items() if path.is_dir()}


def produce(fluvio: Fluvio, topic: str, *values: bytes) -> None:
    producer = fluvio.topic_producer(topic, acks="all")
    futures = [producer.send(None, value) for value in values]
    producer.flush(timeout=30)
    assert all(f.exception(30) is None for f in futures)


def read_all(fluvio: Fluvio, topic: str) -> list[bytes]:
    """What ``fluvio consume TOPIC -B -d`` prints: every record, then stop at the end."""
    stream = fluvio.consumer(topic).stream(Offset.beginning(), stop_at_end=True)
    try:
        return [record.value for record in stream]
    finally:
        stream.close()


def in_sync(fluvio: Fluvio, topic: str) -> set[int]:
    """The SPUs the leader last reported in sync, as the SC stores it (the clients'
    metadata watch does not carry in-sync changes)."""
    _, (partition,) = fluvio.admin().describe_topic(topic)
    return {r.spu_id for r in partition.status.lrs if r.in_sync}


def open_when_released(directory: Path) -> ReplicaLog:
    """Open the log a killed SPU had open, once its lock is released: the killed process
    counts as gone when its main thread is a zombie, before its last thread closed the
    descriptors."""

    def attempt() -> ReplicaLog | None:
        try:
            return ReplicaLog.open(directory)
        except StorageError:
            return None

    log = wait_until(attempt, 10, f"the lock of {directory} released")
    assert isinstance(log, ReplicaLog)
    return log


def assignment(*replicas: int) -> list[dict[str, object]]:
    return [{"partition": 0, "replicas": list(replicas)}]


def delete(fluvio: Fluvio, cluster: LocalCluster, topic: str) -> None:
    """Delete ``topic`` and wait until no running SPU keeps a directory of it."""
    fluvio.admin().delete_topic(topic)
    wait_until(
        lambda: not replica_dirs(cluster, f"{topic}-0"), 30, f"{topic}-0 removed on every SPU"
    )


@pytest.mark.parametrize("replication", [1, 3])
def test_a_recreated_topic_starts_empty(cluster: LocalCluster, replication: int) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, unique("reuse"), replication=replication)
        produce(fluvio, topic, b"one", b"two")
        name = f"{topic}-0"
        wait_until(lambda: len(replica_dirs(cluster, name)) == replication, 30, "replicas")
        old = {read_uid(path) for path in replica_dirs(cluster, name).values()}
        delete(fluvio, cluster, topic)

        make_topic(fluvio, topic, replication=replication)
        offsets = fluvio.fetch_offsets(topic, 0)
        assert (offsets.log_start, offsets.hw, offsets.leo) == (0, 0, 0)
        assert read_all(fluvio, topic) == []
        produce(fluvio, topic, b"three")
        assert read_all(fluvio, topic) == [b"three"]
        new = {read_uid(path) for path in replica_dirs(cluster, name).values()}
        assert len(new) == 1 and new.isdisjoint(old) and None not in new


@pytest.mark.parametrize(
    ("before", "after"),
    [((0,), (1,)), ((0, 1, 2), (1, 2, 0))],
    ids=["rf1-other-spu", "rf3-other-leader"],
)
def test_a_topic_recreated_on_other_spus_starts_empty(
    cluster: LocalCluster, before: tuple[int, ...], after: tuple[int, ...]
) -> None:
    """The new leader is another SPU: the old copies are deleted, not cut or left over."""
    ids = cluster.layout.spu_ids
    first, second = [ids[i] for i in before], [ids[i] for i in after]
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        rf = len(first)
        topic = make_topic(fluvio, replication=rf, replica_assignment=assignment(*first))
        produce(fluvio, topic, b"one", b"two")
        delete(fluvio, cluster, topic)
        make_topic(fluvio, topic, replication=rf, replica_assignment=assignment(*second))
        assert fluvio.topic_partitions(topic)[0].leader == second[0]
        assert read_all(fluvio, topic) == []
        produce(fluvio, topic, b"three")
        assert read_all(fluvio, topic) == [b"three"]
        assert sorted(replica_dirs(cluster, f"{topic}-0")) == sorted(second)


def test_an_spu_down_at_delete_time_deletes_the_data_when_it_returns(
    cluster: LocalCluster,
) -> None:
    a, b, down = cluster.layout.spu_ids
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        gone = make_topic(fluvio, replication=3, replica_assignment=assignment(a, b, down))
        again = make_topic(fluvio, replication=3, replica_assignment=assignment(a, b, down))
        produce(fluvio, gone, b"old-1", b"old-2")
        produce(fluvio, again, b"old-1", b"old-2")
        wait_until(lambda: down in in_sync(fluvio, again), 30, "in sync")
        old_uid = read_uid(cluster.spu_dir(down) / f"{again}-0")
        assert kill_spu(cluster, down)

        # Deleted while the SPU is down: the others delete their copies at once.
        fluvio.admin().delete_topic(gone)
        fluvio.admin().delete_topic(again)
        wait_until(
            lambda: sorted(replica_dirs(cluster, f"{gone}-0")) == [down], 30, "live copies gone"
        )
        # ... and one of the two topics is created again, on the same SPUs.
        make_topic(fluvio, again, replication=3, replica_assignment=assignment(a, b, down))
        produce(fluvio, again, b"new")

        cluster.start()  # the SPU comes back
        wait_until(lambda: not replica_dirs(cluster, f"{gone}-0"), 30, "stale copy gone")
        wait_until(lambda: down in in_sync(fluvio, again), 30, "in sync")
        assert read_uid(cluster.spu_dir(down) / f"{again}-0") not in (None, old_uid)
        assert read_all(fluvio, again) == [b"new"]

    # The returning SPU's copy holds the new topic's record only.
    assert kill_spu(cluster, down)
    with open_when_released(cluster.spu_dir(down) / f"{again}-0") as log:
        assert (log.log_start_offset, log.leo) == (0, 1)
    cluster.start()
