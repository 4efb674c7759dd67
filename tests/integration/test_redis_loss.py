"""Losing Redis loses nothing: real Redis, SC and three SPU processes.

Records go to two topics on a 3-SPU cluster; then Redis loses everything, either by
``FLUSHALL`` or by being replaced with a new empty server on the same port. The running
SC notices that the store went back and exits without touching the SPUs (they keep
their data and keep running); ``LocalCluster.start`` starts an SC again, which rebuilds
the topics and partitions from what the SPUs report when they reconnect. Then every
record reads back, producing continues, and an admin delete still deletes.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from spark_stream.client import Fluvio, Offset
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.launcher import process_alive
from spark_stream.local.redis_server import find_redis_server, redis_argv, write_auth_config
from spark_stream.supervision import running, spawn, terminate, write_pid_file
from tests.integration.helpers import make_topic, running_cluster
from tests.polling import wait_until

pytestmark = pytest.mark.integration

N = 120
"""Records produced to each topic before Redis is lost."""


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", spus=3, spu_mode=request.param) as running_:
        yield running_


def produce(fluvio: Fluvio, topic: str, values: list[bytes]) -> int:
    """Send ``values`` with acks=all; the number acknowledged."""
    producer = fluvio.topic_producer(topic, acks="all")
    futures = [producer.send(None, value) for value in values]
    producer.flush(timeout=60)
    return sum(1 for f in futures if f.exception(60) is None)


def read_all(fluvio: Fluvio, topic: str) -> list[bytes]:
    """Every record of every partition, from the beginning to the end."""
    stream = fluvio.consumer(topic).stream(Offset.beginning(), stop_at_end=True)
    try:
        return [record.value for record in stream]
    finally:
        stream.close()


def flush(cluster: LocalCluster) -> None:
    client = redis.Redis.from_url(cluster.layout.redis_url, password=cluster.redis_password())
    try:
        client.flushall()
    finally:
        client.close()


def replace(cluster: LocalCluster) -> None:
    """Stop Redis, drop its files, start a new empty server on the same port."""
    record = running(cluster.pid_file("redis"))
    assert record is not None
    terminate(record, 10.0, name="redis")
    folder = cluster.data_dir / "redis"
    shutil.rmtree(folder)
    folder.mkdir()
    log_file = cluster.log_file("redis")
    password = cluster.redis_password()
    assert password is not None  # the local cluster's Redis wants one
    config = write_auth_config(folder, password)  # the new server: same password
    argv = redis_argv(
        find_redis_server(), cluster.layout.redis_port, folder, log_file, config_file=config
    )
    write_pid_file(cluster.pid_file("redis"), spawn(argv, log_file))
    wait_until(lambda: _answers(cluster.layout.redis_url, password), 30, "the new Redis")


def _answers(url: str, password: str) -> bool:
    client = redis.Redis.from_url(url, socket_timeout=1, password=password)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def wait_online(fluvio: Fluvio, topic: str, partitions: int) -> None:
    def ready() -> bool:
        try:
            infos = fluvio.topic_partitions(topic)
            if len(infos) < partitions or any(i.leader is None for i in infos):
                return False
            for info in infos:
                fluvio.fetch_offsets(topic, info.partition)
        except Exception:  # not rebuilt or not served yet: poll again
            return False
        return True

    wait_until(ready, 90, f"topic {topic} rebuilt and served")


@pytest.mark.parametrize(
    ("lose", "cluster"),
    [(flush, "custom"), (replace, "custom"), (flush, "group")],
    ids=["flushall", "new-empty-server", "flushall-spu-group"],
    indirect=["cluster"],
)
def test_topics_come_back_from_the_spus(cluster: LocalCluster, lose: object) -> None:
    """Custom SPUs are registered again from their reports; a group's SPUs come back
    with the group ``start`` creates again (the SC adopts the running processes)."""
    assert callable(lose)
    with Fluvio.connect(cluster.endpoint, timeout=30) as fluvio:
        a = make_topic(fluvio, partitions=2, replication=2, timeout=60)
        b = make_topic(fluvio, partitions=1, replication=3, timeout=60)
        acked = {
            a: produce(fluvio, a, [f"a{i}".encode() for i in range(N)]),
            b: produce(fluvio, b, [f"b{i}".encode() for i in range(N)]),
        }
    assert acked == {a: N, b: N}
    spu_pids = {i: cluster.spu_pid(i) for i in cluster.layout.spu_ids}

    lose(cluster)
    # The SC sees the store went back and exits, leaving the SPUs and their data alone.
    wait_until(lambda: process_alive(cluster.pid_file("sc")) is None, 90, "the SC to exit")
    sc_log = cluster.log_file("sc").read_text()
    assert "lost its data" in sc_log
    assert {i: cluster.spu_pid(i) for i in cluster.layout.spu_ids} == spu_pids
    held = sorted(p.name for i in cluster.layout.spu_ids for p in cluster.spu_dir(i).iterdir())
    assert f"{a}-0" in held and f"{a}-1" in held and f"{b}-0" in held

    cluster.start()  # a new SC on the emptied store: the SPUs report what they hold
    assert {i: cluster.spu_pid(i) for i in cluster.layout.spu_ids} == spu_pids
    with Fluvio.connect(cluster.endpoint, timeout=30) as fluvio:
        wait_online(fluvio, a, 2)
        wait_online(fluvio, b, 1)
        assert "the store forgot what SPU" in cluster.log_file("sc").read_text()
        if cluster.layout.spu_mode == "group":  # its SPUs are the group's, not custom ones
            groups = {g.name: g.status.resolution.value for g in fluvio.admin().list_spu_groups()}
            assert groups == {"main": "Reserved"}
        kinds = {s.spu_id: s.spec.spu_type.value for s in fluvio.admin().list_spus()}
        print(f"SPUs after the rebuild: {kinds}")
        topics = {t.name: t.spec for t in fluvio.admin().list_topics()}
        assert (topics[a].partitions, topics[a].replication_factor) == (2, 2)
        assert (topics[b].partitions, topics[b].replication_factor) == (1, 3)
        read = {a: read_all(fluvio, a), b: read_all(fluvio, b)}
        print(
            f"{lose.__name__}: sent {N} to each topic, acknowledged {acked}, "
            f"read back {{a: {len(read[a])}, b: {len(read[b])}}} after the rebuild"
        )
        assert sorted(read[a]) == sorted(f"a{i}".encode() for i in range(N))
        assert read[b] == [f"b{i}".encode() for i in range(N)]

        more = produce(fluvio, a, [b"after-1", b"after-2"]) + produce(fluvio, b, [b"after"])
        assert more == 3
        assert len(read_all(fluvio, a)) == N + 2
        assert read_all(fluvio, b)[-1] == b"after"

        fluvio.admin().delete_topic(a)  # an explicit delete still deletes, everywhere
        wait_until(lambda: a not in {t.name for t in fluvio.admin().list_topics()}, 30, "a deleted")

        def gone() -> bool:
            return not any(
                (cluster.spu_dir(i) / f"{a}-{p}").exists()
                for i in cluster.layout.spu_ids
                for p in (0, 1)
            )

        wait_until(gone, 30, f"the replica directories of {a} removed")
        assert len(read_all(fluvio, b)) == N + 1
