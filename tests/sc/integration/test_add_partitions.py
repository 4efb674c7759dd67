"""Adding partitions to a topic: an SC process on Redis, simulated SPUs, SC restarts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sc.kv import RedisKvStore
from spark_stream.client.admin import AdminClient
from spark_stream.local import free_port
from spark_stream.models import Topic
from tests.harness.processes import ScChild
from tests.polling import until
from tests.sc.integration.test_restart import all_online, kv_dump, reconnect
from tests.sc.sim_spu import SimSpu, run, sim_secret

pytestmark = pytest.mark.integration


def test_added_partitions_reach_spus_and_watchers_and_survive_a_restart(
    sc_factory: type[ScChild], redis_url: str
) -> None:
    ports = (free_port(), free_port())
    sc = sc_factory(ports=ports, heartbeat=1.0).start()

    async def body() -> None:
        sims: list[SimSpu] = []
        try:
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                for spu_id in (1, 2, 3):
                    await admin.register_spu(spu_id, secret=sim_secret(spu_id))
                sims = [await SimSpu(sc.private_port, i).connect() for i in (1, 2, 3)]
                await admin.create_topic("a", partitions=2, replication_factor=2)
                await until(lambda: all_online(admin, "a", 2), what="a online")
                before = (await admin.describe_topic("a"))[0].status.replica_map
                updates = admin.watch_metadata()
                assert (await asyncio.wait_for(updates.__anext__(), 5)).full

                topic = await admin.add_partitions("a", 2)
                # The reply comes once the controller placed them: 4 rows, the first 2 kept.
                assert topic.spec.partitions == 4
                assert sorted(topic.status.replica_map) == [0, 1, 2, 3]
                assert {i: topic.status.replica_map[i] for i in (0, 1)} == before
                await until(lambda: all_online(admin, "a", 4), what="new partitions online")
                for index in (2, 3):  # every replica's SPU holds the new partition
                    for spu_id in topic.status.replica_map[index]:
                        sim = sims[spu_id - 1]
                        await sim.wait_for(lambda s=sim, i=index: f"a-{i}" in s.replicas)
                # A metadata watcher sees the grown topic and the new partitions.
                parts: dict[str, dict[str, Any]] = {}
                grown: dict[str, Any] = {"replicaMap": {}}
                async with asyncio.timeout(10):
                    while not {"a-2", "a-3"} <= set(parts) or len(grown["replicaMap"]) != 4:
                        update = await updates.__anext__()
                        parts.update({p["metadata"]["name"]: p for p in update.partitions})
                        for t in update.topics:
                            grown = t["status"]
                await updates.aclose()
            dumped = await kv_dump(redis_url)

            sc.kill()
            sc.start()
            for sim in sims:
                await reconnect(sim)
            log_mark = "Reconcile connected=[1, 2, 3]"
            await until(lambda: log_mark in sc.log(), within=20, what="reconcile after restart")
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                await until(lambda: all_online(admin, "a", 4), what="online after restart")
                after, _ = await admin.describe_topic("a")
                assert after.status.replica_map == topic.status.replica_map
            assert await kv_dump(redis_url) == dumped  # nothing rewritten, nothing doubled
        finally:
            for sim in sims:
                await sim.close()

    run(body(), timeout=120)


def test_a_spec_grown_while_the_sc_was_down_is_provisioned_at_start(
    sc_factory: type[ScChild], redis_url: str
) -> None:
    # The api writes the spec first; an SC stopped before its controller placed the new
    # partitions finds the spec in Redis and grows the topic at its first sweep.
    sc = sc_factory().start()

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            await admin.register_spu(1, secret=sim_secret(1))
            await admin.create_topic("t", partitions=1)
            await until(lambda: _rows(admin, "t", 1), what="provisioned")
        sc.kill()
        kv = RedisKvStore(redis_url)
        try:
            stored = await kv.get(Topic.kind, "t")
            assert isinstance(stored, Topic)
            spec = stored.spec.model_copy(update={"partitions": 3})
            await kv.update_spec(Topic.kind, "t", spec, stored.revision)
        finally:
            await kv.close()
        sc.start()
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            await until(lambda: _rows(admin, "t", 3), within=20, what="grown at start")
            parts = await admin.list_partitions("t")
            assert [(p.index, p.spec.replicas) for p in parts] == [(0, (1,)), (1, (1,)), (2, (1,))]

    run(body(), timeout=60)


async def _rows(admin: AdminClient, name: str, count: int) -> bool:
    topic, parts = await admin.describe_topic(name)
    return len(topic.status.replica_map) == count and len(parts) == count
