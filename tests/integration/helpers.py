"""Helpers for tests that run a real local cluster (Redis, SC and SPU processes).

``running_cluster`` starts a ``LocalCluster`` on free ports under a temporary directory
(custom SPUs, so a test can kill and restart them itself) and always stops it by pid.
``make_topic`` creates a topic and waits, bounded, until every partition has an online
leader the client can reach.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

from spark_stream.client import Fluvio, TopicProducer
from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until

__all__ = ["durable_producer", "leader_pid", "make_topic", "running_cluster", "unique"]


@contextlib.contextmanager
def running_cluster(
    data_dir: Path,
    *,
    spus: int = 3,
    spu_mode: str = "custom",
    env: Mapping[str, str] | None = None,
    auth: bool = False,
) -> Iterator[LocalCluster]:
    """A started local cluster, stopped (every process, by pid) on exit; ``env`` is added
    to every process it starts (``LocalCluster(env=)``); ``auth``: clients need a token
    (the profile holds an admin one, ``cluster.admin_token``)."""
    cluster = LocalCluster(
        data_dir,
        spus=spus,
        sc_port=0,
        spu_mode=spu_mode,
        start_timeout=60.0,
        stop_timeout=10.0,
        profile=data_dir / "profile.json",
        env=env,
        auth=auth,
    )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def unique(prefix: str = "t") -> str:
    """A fresh topic name."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_topic(
    fluvio: Fluvio,
    name: str | None = None,
    *,
    partitions: int = 1,
    replication: int = 1,
    timeout: float = 30.0,
    **spec: object,
) -> str:
    """Create a topic and wait until every partition has a reachable leader."""
    name = name or unique()
    fluvio.admin().create_topic(name, partitions=partitions, replication_factor=replication, **spec)

    def ready() -> bool:
        infos = fluvio.topic_partitions(name)
        if len(infos) < partitions or any(
            i.leader is None or i.resolution != "Online" for i in infos
        ):
            return False
        try:
            for info in infos:
                fluvio.fetch_offsets(name, info.partition)
        except Exception:  # not served yet: poll again
            return False
        return True

    wait_until(ready, timeout, f"topic {name} online")
    return name


def leader_pid(
    fluvio: Fluvio, cluster: LocalCluster, topic: str, partition: int = 0
) -> tuple[int, int]:
    """The SPU id leading ``topic``'s ``partition`` and that SPU process's pid (to stop it)."""
    leader = fluvio.topic_partitions(topic)[partition].leader
    assert leader is not None
    pid = cluster.spu_pid(leader)
    assert pid is not None
    return leader, pid


def durable_producer(fluvio: Fluvio, topic: str, **config: object) -> TopicProducer:
    """The fault tests' producer: ``acks=all``, idempotent, a short linger and retry
    backoff; ``config`` adds or overrides settings (timeouts, linger, retries)."""
    settings: dict[str, object] = {
        "acks": "all",
        "idempotence": True,
        "linger_ms": 2,
        "retry_backoff_ms": 50,
        **config,
    }
    return fluvio.topic_producer(topic, **settings)
