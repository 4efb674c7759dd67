"""Fixtures for the Spark connector and job tests: one real local cluster per session.

``fluvio_cluster`` is a ``LocalCluster`` with a real Redis, the SC and three SPU
processes (custom SPUs, so a test may pause one), under a temporary directory, with its
own client profile; it is stopped by pid at the end of the session. ``fluvio`` is a
connected client; ``new_topic`` creates a uniquely named topic and waits until every
partition has a leader. Tests using these are ``integration`` tests (and ``spark`` when
they also use the ``spark`` fixture of ``tests/conftest.py``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pytest

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.integration.gate_audits import AUDIT_ENV, assert_no_overlapping_grants
from tests.polling import wait_until

__all__ = ["produce"]

SPUS = 3
# Generous follower lag bound, so a paused follower stays in sync long enough for a test
# to see the high watermark held back (eviction would advance it).
# Frames up to 512 KiB (above the producer's default 256 KiB batches), so a topic may use
# segments that small and a test can see retention at work.
# Every gate change is audited, so group tests can check Z1 (``no_overlapping_grants``).
_ENV = {
    "FLUVIO_SPU_REPLICA_MAX_LAG_MS": "60000",
    "FLUVIO_SPU_MAX_BATCH_BYTES": "524288",
    **AUDIT_ENV,
}


@pytest.fixture(scope="session")
def fluvio_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A local cluster of three SPUs for the session (its own profile and data dir)."""
    root: Path = tmp_path_factory.mktemp("fluvio")
    saved = {"FLUVIO_PROFILE": os.environ.get("FLUVIO_PROFILE")}
    os.environ["FLUVIO_PROFILE"] = str(root / "profile.json")
    # The SPU settings go to the cluster's processes only: through os.environ they would
    # leak into every cluster other tests start later in the session.
    cluster = LocalCluster(
        root / "cluster", spus=SPUS, sc_port=0, spu_mode="custom", start_timeout=60.0, env=_ENV
    )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def fluvio(fluvio_cluster: LocalCluster) -> Iterator[Fluvio]:
    """A client connected to the session cluster."""
    client = Fluvio.connect(fluvio_cluster.endpoint)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def no_overlapping_grants(fluvio_cluster: LocalCluster) -> Iterator[None]:
    """After the test, Z1 over the session cluster's gate audits (every grant so far)."""
    yield
    assert_no_overlapping_grants(fluvio_cluster)


@pytest.fixture
def new_topic(fluvio: Fluvio) -> Callable[..., str]:
    """``new_topic(partitions=1, replicas=1, **settings)`` -> a fresh topic's name."""

    def make(partitions: int = 1, replicas: int = 1, prefix: str = "t", **settings: object) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        fluvio.admin().create_topic(
            name, partitions=partitions, replicationFactor=replicas, **settings
        )

        def ready() -> bool:
            try:
                infos = fluvio.topic_partitions(name)
            except Exception:
                return False
            return len(infos) == partitions and all(
                i.leader is not None and i.leader_endpoint for i in infos
            )

        wait_until(ready, 30.0, f"topic {name} to have leaders")
        for p in range(partitions):
            wait_until(lambda p=p: _offsets_ok(fluvio, name, p), 30.0, f"{name}/{p} to answer")
        return name

    return make


def _offsets_ok(fluvio: Fluvio, topic: str, partition: int) -> bool:
    try:
        fluvio.fetch_offsets(topic, partition)
    except Exception:
        return False
    return True


def produce(
    fluvio: Fluvio,
    topic: str,
    values: Sequence[str],
    *,
    keys: Sequence[str | None] | None = None,
    partition: int | None = None,
    timestamps_us: Sequence[int] | None = None,
    acks: str = "all",
) -> None:
    """Produce ``values`` (one Arrow batch) and wait until they are acknowledged."""
    columns: dict[str, pa.Array] = {"value": pa.array(list(values), pa.string())}
    if keys is not None:
        columns["key"] = pa.array(list(keys), pa.string())
    if timestamps_us is not None:
        columns["timestamp"] = pa.array(list(timestamps_us), pa.int64())
    producer = fluvio.topic_producer(topic, acks=acks, linger_ms=0)
    try:
        producer.send_batch(
            pa.table(columns),
            partition=partition,
            key_column="key" if keys is not None else None,
            timestamp_column="timestamp" if timestamps_us is not None else None,
        ).result(timeout=60)
    finally:
        producer.close()
