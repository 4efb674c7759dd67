"""Connecting, metadata, the admin face, and clean closing, against a real cluster."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import psutil
import pytest

from spark_stream.client import Fluvio, FluvioAsync, Offset
from spark_stream.client.profile import Profile, save_profile
from spark_stream.errors import ConnectionClosedError, NotFoundError, UnknownTopicError
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.redis_server import free_port
from tests.integration.helpers import make_topic

pytestmark = pytest.mark.integration


def client_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "fluvio-client"]


def sockets_to(port: int) -> int:
    conns = psutil.Process().net_connections(kind="tcp")
    return sum(1 for c in conns if c.raddr and c.raddr.port == port)


def test_connect_through_the_profile(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUVIO_PROFILE", str(cluster.data_dir / "profile.json"))
    with Fluvio.connect() as fluvio:
        assert fluvio.endpoint == cluster.endpoint


def test_fluvio_endpoint_beats_the_profile(
    cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``connect()`` with no argument goes where ``FLUVIO_ENDPOINT`` says, while the
    profile names a dead address (then is missing); an argument still beats both."""
    dead = f"127.0.0.1:{free_port()}"
    profile = save_profile(Profile(endpoint=dead), tmp_path / "profile.json")
    monkeypatch.setenv("FLUVIO_PROFILE", str(profile))
    monkeypatch.setenv("FLUVIO_ENDPOINT", cluster.endpoint)
    with Fluvio.connect(timeout=5) as fluvio:
        assert fluvio.endpoint == cluster.endpoint
        assert {s.spu_id for s in fluvio.admin().list_spus()} == {5001, 5002, 5003}
    profile.unlink()

    async def connect_async() -> str:
        async with await FluvioAsync.connect(timeout=5) as client:
            return client.endpoint

    assert asyncio.run(connect_async()) == cluster.endpoint
    with pytest.raises(ConnectionClosedError):
        Fluvio.connect(dead, timeout=2)


def test_missing_profile_and_dead_endpoint_are_typed(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUVIO_PROFILE", "/nonexistent/profile.json")
    monkeypatch.delenv("FLUVIO_ENDPOINT", raising=False)
    with pytest.raises(NotFoundError, match="cluster start"):
        Fluvio.connect()
    before = len(client_threads())
    with pytest.raises(ConnectionClosedError):
        Fluvio.connect(f"127.0.0.1:{free_port()}", timeout=2)
    assert len(client_threads()) == before  # the loop thread was stopped


def test_close_leaves_no_thread_or_socket(cluster: LocalCluster) -> None:
    before = len(client_threads())
    fluvio = Fluvio.connect(cluster.endpoint)
    topic = make_topic(fluvio, partitions=2)
    producer = fluvio.topic_producer(topic)
    producer.send(b"k", b"v").result(10)
    stream = fluvio.partition_consumer(topic, 0).stream_batches(Offset.beginning())
    assert next(stream).num_rows >= 0
    assert sockets_to(cluster.layout.sc_public_port) >= 1
    fluvio.close()
    fluvio.close()  # idempotent
    stream.close()
    assert len(client_threads()) == before
    assert sockets_to(cluster.layout.sc_public_port) == 0


def test_topic_partitions_and_admin(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=3, replication=2)
    infos = fluvio.topic_partitions(topic)
    assert [i.partition for i in infos] == [0, 1, 2]
    for info in infos:
        assert info.leader in info.replicas and len(info.replicas) == 2
        assert info.leader_endpoint is not None and info.resolution == "Online"
    admin = fluvio.admin()
    assert topic in [t.name for t in admin.list_topics()]
    assert {s.spu_id for s in admin.list_spus()} == {5001, 5002, 5003}
    _, parts = admin.describe_topic(topic)
    assert len(parts) == 3
    admin.delete_topic(topic)
    with pytest.raises(UnknownTopicError):
        admin.describe_topic(topic)


def test_admin_stream_and_producer_facades(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=1)
    admin = fluvio.admin()
    with admin.watch_metadata() as updates:
        first = next(updates)
        assert first.full and topic in [t.name for t in first.objects()[1]]
    producer = fluvio.topic_producer(topic, acks="all", linger_ms=0)
    assert producer.topic == topic and fluvio.partition_consumer(topic, 0).partition == 0
    metadata = producer.send("k", "v", partition=0).result(10)
    assert (metadata.partition, metadata.offset) == (0, 0)
    with pytest.raises(TypeError):
        producer.send(b"k", b"v", 0)  # type: ignore[call-arg]  # partition is keyword-only
    producer.flush(10)
    offsets = fluvio.fetch_offsets(topic, 0)
    assert (offsets.hw, offsets.leo) == (1, 1)
    records = fluvio.consumer(topic).stream(Offset.beginning(), stop_at_end=True)
    assert [(r.key, r.value) for r in records] == [(b"k", b"v")]
