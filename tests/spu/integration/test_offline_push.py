"""The SC pushes an SPU's ``Offline`` status to the SPUs, and leaders act on it at once.

Real processes: Redis, ``python -m sc``, ``python -m spu`` x 3. A follower SPU is
SIGKILLed; the SC sees its connection end, marks it ``Offline`` and pushes that to the
connected SPUs, so the partition leader evicts it from the in-sync set without waiting
for ``replica_max_lag_ms``. The lag is set to 30 s and the SC's heartbeat timeout too,
so neither can be what unblocks the ``acks=all`` produce within the 15 s bound.
"""

from __future__ import annotations

import asyncio

import pytest

from spark_stream.protocol import Acks
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import fetch_values, produce, run, values

pytestmark = pytest.mark.integration


LAG_MS = 30_000
BOUND_S = LAG_MS / 1000 / 2  # generous, yet well before the lag could evict anyone


def test_follower_sigkill_releases_acks_all_before_the_replica_lag(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        async with spu_cluster(
            [1, 2, 3],
            heartbeat_timeout_s=LAG_MS / 1000,
            spu_settings={"replica_max_lag_ms": LAG_MS},
        ) as cluster:
            await cluster.create_topic(
                "orders", partitions=1, replicationFactor=3, minInSyncReplicas=2
            )
            leader = await cluster.leader_of("orders-0")
            follower = next(i for i in cluster.spu_ids if i != leader)
            conn = await cluster.connect(leader)
            first = await produce(conn, "orders", 0, ["a", "b"], acks=Acks.ALL)
            assert first.hw == first.leo == 2

            loop = asyncio.get_running_loop()
            killed_at = loop.time()
            await cluster.kill_spu(follower)
            # Only the Offline push can shrink the in-sync set to {leader, other} in time:
            # the leader answers RequestTimeoutError if the records are not committed
            # within the bound.
            reply = await produce(
                conn, "orders", 0, ["c"], acks=Acks.ALL, timeout_ms=int(BOUND_S * 1000)
            )
            elapsed = loop.time() - killed_at
            assert reply.hw == reply.leo == 3
            assert elapsed < BOUND_S, f"acks=all took {elapsed:.1f}s after the follower died"
            assert await fetch_values(conn, "orders", 0) == values("a", "b", "c")
            assert cluster.admin is not None
            online = {s.spu_id: s.status.is_online for s in await cluster.admin.list_spus()}
            assert online == {i: i != follower for i in cluster.spu_ids}

    run(body)
