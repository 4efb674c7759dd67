"""Bit rot in a sealed segment, on a real cluster (Redis, SC, three SPU processes).

A byte of a sealed ``.log`` of the partition's leader is flipped on disk (the SPU's mmap
sees it at once). Then: the scrub finds it, the leader reports its replica damaged, the
SC moves leadership to a healthy in-sync replica, the damaged replica cuts its log at
the damaged frame and fetches the range again from the new leader, and a reader reads
every record. ``partition list`` (the status' ``lrs``) shows the damaged replica, then
the repaired one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.local.cluster import LocalCluster
from spark_stream.models import Partition
from spark_stream.records import BATCH_HEADER_SIZE
from spu.storage.layout import list_segment_bases, replica_dir, segment_paths
from tests.integration.helpers import make_topic, running_cluster
from tests.polling import wait_until

pytestmark = pytest.mark.integration

RECORDS = 400
# A fast scrub (whole passes every second) so the test sees it within its bounds.
_ENV = {"FLUVIO_SPU_SCRUB_MB_PER_S": "50", "FLUVIO_SPU_SCRUB_PASS_INTERVAL_S": "0.5"}


@pytest.fixture(scope="module")
def unscrubbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster whose SPUs do not scrub: only reads can meet the damage."""
    env = {"FLUVIO_SPU_SCRUB_MB_PER_S": "0"}
    with running_cluster(Path(tmp_path_factory.mktemp("noscrub")), spus=3, env=env) as running:
        yield running


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("scrub")), spus=3, env=_ENV) as running:
        yield running


def _produce(fluvio: Fluvio, topic: str) -> list[bytes]:
    producer = fluvio.topic_producer(topic, acks="all", linger_ms=0, batch_size=1)
    values = [f"r{i:05d}-".encode() + b"x" * 200 for i in range(RECORDS)]
    futures = [producer.send(None, v) for v in values]
    producer.flush(timeout=60)
    for future in futures:
        assert future.exception(30) is None
    return values


def _read_all(fluvio: Fluvio, topic: str) -> list[bytes]:
    stream = fluvio.partition_consumer(topic, 0).stream(Offset.beginning(), stop_at_end=True)
    try:
        return [record.value for record in stream]
    finally:
        stream.close()


def _status(fluvio: Fluvio, topic: str) -> Partition:
    found = [p for p in fluvio.admin().list_partitions() if p.topic == topic]
    assert len(found) == 1
    return found[0]


def _in_sync_topic(fluvio: Fluvio) -> tuple[str, list[bytes]]:
    """An RF 3 topic of small segments holding ``RECORDS`` records on three in-sync
    replicas; its name and the values produced."""
    topic = make_topic(
        fluvio, partitions=1, replication=3, min_in_sync_replicas=2, segment_size=4096
    )
    values = _produce(fluvio, topic)

    def all_in_sync() -> bool:
        status = _status(fluvio, topic).status
        return status.hw == RECORDS and sum(r.in_sync for r in status.lrs) == 3

    wait_until(all_in_sync, 60, "three in-sync replicas holding every record")
    return topic, values


def _flip_byte_in_sealed_segment(directory: Path) -> int:
    """Flip one payload byte of the second frame of the first sealed segment; returns the
    segment's base offset."""
    bases = list_segment_bases(directory)
    assert len(bases) >= 3, f"expected sealed segments in {directory}: {bases}"
    log, _, _ = segment_paths(directory, bases[0])
    data = bytearray(log.read_bytes())
    first_length = BATCH_HEADER_SIZE + int.from_bytes(data[4:8], "little")
    at = first_length + BATCH_HEADER_SIZE + 40
    with log.open("r+b") as out:
        out.seek(at)
        out.write(bytes([data[at] ^ 0x5A]))
    return bases[0]


def test_bit_rot_in_the_leaders_sealed_segment_is_scrubbed_and_repaired(
    cluster: LocalCluster,
) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic, values = _in_sync_topic(fluvio)
        leader = _status(fluvio, topic).status.leader
        assert leader is not None
        _flip_byte_in_sealed_segment(replica_dir(cluster.spu_dir(leader), topic, 0))

        def moved() -> bool:
            status = _status(fluvio, topic).status
            return status.leader is not None and status.leader != leader

        wait_until(moved, 60, "leadership moved off the damaged replica")
        read = _read_all(fluvio, topic)  # the stream follows the leader, wherever it is
        assert read == values

        def repaired() -> bool:
            status = _status(fluvio, topic).status
            rep = status.replica(leader)
            return rep is not None and rep.in_sync and not rep.damaged and rep.repair is not None

        wait_until(repaired, 60, "the damaged replica repaired and in sync again")
        rep = _status(fluvio, topic).status.replica(leader)
        assert rep is not None and rep.repair is not None
        assert rep.repair.startswith("repaired from offset ")
        _assert_same_frames(cluster, topic, leader, _status(fluvio, topic).status.leader)


def _all_frames(cluster: LocalCluster, spu: int, topic: str) -> bytes:
    directory = replica_dir(cluster.spu_dir(spu), topic, 0)
    return b"".join(
        segment_paths(directory, b)[0].read_bytes() for b in list_segment_bases(directory)
    )


def _assert_same_frames(
    cluster: LocalCluster, topic: str, repaired: int, healthy: int | None
) -> None:
    """The repaired replica's log holds exactly the healthy one's frames again."""
    assert healthy is not None and healthy != repaired
    assert _all_frames(cluster, repaired, topic) == _all_frames(cluster, healthy, topic)


def test_bit_rot_in_a_followers_sealed_segment_is_repaired_from_the_leader(
    cluster: LocalCluster,
) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic, values = _in_sync_topic(fluvio)
        status = _status(fluvio, topic).status
        leader = status.leader
        follower = next(r.spu_id for r in status.lrs if r.spu_id != leader)
        _flip_byte_in_sealed_segment(replica_dir(cluster.spu_dir(follower), topic, 0))

        def repaired() -> bool:
            rep = _status(fluvio, topic).status.replica(follower)
            return rep is not None and rep.in_sync and rep.repair is not None

        wait_until(repaired, 60, "the follower repaired and in sync again")
        status = _status(fluvio, topic).status
        assert status.leader == leader  # a follower's damage moves nothing
        rep = status.replica(follower)
        assert rep is not None and rep.repair is not None and not rep.damaged
        assert rep.repair.startswith("repaired from offset ")
        _assert_same_frames(cluster, topic, follower, leader)
        assert _read_all(fluvio, topic) == values


def test_a_reader_meeting_bit_rot_on_the_leader_reads_every_record_from_a_healthy_copy(
    unscrubbed: LocalCluster,
) -> None:
    cluster = unscrubbed
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic, values = _in_sync_topic(fluvio)
        leader = _status(fluvio, topic).status.leader
        assert leader is not None
        _flip_byte_in_sealed_segment(replica_dir(cluster.spu_dir(leader), topic, 0))
        time.sleep(1.0)  # no scrub runs: nothing notices until a reader comes
        assert _status(fluvio, topic).status.leader == leader
        assert _read_all(fluvio, topic) == values
        status = _status(fluvio, topic).status
        assert status.leader != leader

        def repaired() -> bool:
            rep = _status(fluvio, topic).status.replica(leader)
            return rep is not None and rep.in_sync and rep.repair is not None

        wait_until(repaired, 60, "the damaged replica repaired and in sync again")
        _assert_same_frames(cluster, topic, leader, _status(fluvio, topic).status.leader)
