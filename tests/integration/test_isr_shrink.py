"""A leader shrinks its in-sync set only once the SC accepted it (processes, one host).

Two SPUs, a topic with replication 2 and ``min_in_sync_replicas=1``, followers evicted
after 1.5 s of silence:

- the follower and the SC are stopped (SIGSTOP): the leader stops hearing from its
  follower and wants to drop it, but cannot reach the SC to have the shrink accepted, so
  an ``acks=all`` request straight to it times out instead of being acknowledged on the
  leader's copy alone (before the fix it was acknowledged once the leader dropped the
  follower on its own);
- both continue; then only the follower is stopped: the SC accepts the leader's shrink
  and an ``acks=all`` request is acknowledged without the follower.

Every acknowledged record is read back once, in order.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio
from spark_stream.errors import FluvioError, RequestTimeoutError
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.launcher import process_alive
from spark_stream.net.connection import Connection
from spark_stream.protocol import Acks, ProduceRequest, ProduceResponse
from spark_stream.records import encode_records
from tests.integration.helpers import make_topic, running_cluster
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    env = {"FLUVIO_SPU_REPLICA_MAX_LAG_MS": "1500"}
    with running_cluster(Path(tmp_path_factory.mktemp("isr-shrink")), spus=2, env=env) as c:
        yield c


def probe(host: str, port: int, topic: str, values: list[str], timeout_ms: int) -> int:
    """One ``acks=all`` produce request straight to the SPU (no SC involved); its base
    offset once acknowledged."""

    async def call() -> int:
        conn = await Connection.open(host, port, timeout=10, name="probe")
        try:
            request = ProduceRequest(topic, 0, Acks.ALL, timeout_ms, encode_records(values))
            reply = await conn.call(request, timeout=timeout_ms / 1000 + 30)
            assert isinstance(reply, ProduceResponse)
            return reply.base_offset
        finally:
            await conn.close()

    return asyncio.run(call())


def leader_endpoint(fluvio: Fluvio, topic: str) -> tuple[int, str, int]:
    leader = fluvio.topic_partitions(topic)[0].leader
    assert leader is not None
    spu = next(s for s in fluvio.admin().list_spus() if s.spu_id == leader)
    endpoint = spu.spec.public_endpoint
    return leader, endpoint.ingress[0].hostname or "127.0.0.1", endpoint.port


def test_a_leader_cut_off_from_the_sc_cannot_shrink_and_acknowledges_nothing(
    cluster: LocalCluster,
) -> None:
    sc_pid = process_alive(cluster.pid_file("sc"))
    assert sc_pid is not None
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, replication=2, min_in_sync_replicas=1)
        leader, host, port = leader_endpoint(fluvio, topic)
        follower = next(s for s in (5001, 5002) if s != leader)
        follower_pid = cluster.spu_pid(follower)
        assert follower_pid is not None
        acked: list[str] = []
        first = [f"before-{i}" for i in range(5)]
        probe(host, port, topic, first, 30_000)
        acked += first

        stopped = [sc_pid, follower_pid]
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(RequestTimeoutError, match="not committed") as refused:
                probe(host, port, topic, [f"cut-off-{i}" for i in range(5)], 5_000)
            print(f"\nacks=all to {leader}, SC and follower stopped: {refused.value}")
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)

        # Only the follower stops now: the SC accepts the shrink, acks=all goes through.
        wait_until(lambda: leader_ready(fluvio, topic), 60, "the partition led and in sync")
        leader, host, port = leader_endpoint(fluvio, topic)
        follower = next(s for s in (5001, 5002) if s != leader)
        follower_pid = cluster.spu_pid(follower)
        assert follower_pid is not None
        os.kill(follower_pid, signal.SIGSTOP)
        try:
            shrunk = [f"shrunk-{i}" for i in range(5)]
            probe(host, port, topic, shrunk, 60_000)
            acked += shrunk
            in_sync = fluvio.topic_partitions(topic)[0]
            print(f"acks=all with only follower {follower} stopped: acknowledged; {in_sync}")
        finally:
            os.kill(follower_pid, signal.SIGCONT)

        values = [
            v for b in fluvio.fetch_batches(topic, 0, 0) for v in b.column("value").to_pylist()
        ]
        got = [v.decode() if isinstance(v, bytes) else v for v in values]
        assert [v for v in got if v in acked] == acked  # every acknowledged record, in order
        assert len(set(got)) == len(got)


def leader_ready(fluvio: Fluvio, topic: str) -> bool:
    """The partition is online and its leader answers acks=all (both replicas in sync)."""
    try:
        info = fluvio.topic_partitions(topic)[0]
        if info.leader is None or info.resolution != "Online":
            return False
        _, host, port = leader_endpoint(fluvio, topic)
        probe(host, port, topic, ["ready"], 5_000)
    except FluvioError:
        return False
    return True
