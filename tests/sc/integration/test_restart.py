"""Crash safety: SC SIGKILL and restart, Redis restart under a running SC."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sc.kv import RedisKvStore
from spark_stream.client.admin import AdminClient
from spark_stream.local import RedisServer, free_port
from spark_stream.models import SpuResolution, TopicResolution
from tests.harness.processes import ScChild
from tests.polling import until
from tests.sc.sim_spu import SimSpu, run, sim_secret

pytestmark = pytest.mark.integration


async def kv_dump(url: str) -> tuple[int, dict[str, list[dict[str, Any]]]]:
    """Every object in the KV (with revisions) and the store revision."""
    kv = RedisKvStore(url)
    try:
        objects, revision = await kv.list_kinds(None)
        return revision, {k: [o.to_dict() for o in objs] for k, objs in objects.items()}
    finally:
        await kv.close()


async def all_online(admin: AdminClient, topic: str, count: int) -> bool:
    parts = await admin.list_partitions(topic)
    return len(parts) == count and all(p.status.resolution.value == "Online" for p in parts)


async def spus_online(admin: AdminClient, ids: set[int]) -> bool:
    spus = await admin.list_spus()
    return {s.spu_id for s in spus if s.status.resolution is SpuResolution.ONLINE} == ids


async def reconnect(sim: SimSpu, within: float = 15.0) -> None:
    """Reconnect a simulated SPU, retrying while the SC is not back yet."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    await sim.close()
    while True:
        try:
            await sim.connect()
            return
        except Exception:
            await sim.close()
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.1)  # retry interval while the SC restarts


def test_sigkill_and_restart_rebuild_state_without_changing_it(
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
                await admin.create_topic("a", partitions=6, replication_factor=2)
                await admin.create_topic("b", partitions=2, replication_factor=3)
                await until(lambda: all_online(admin, "a", 6), what="a online")
                await until(lambda: all_online(admin, "b", 2), what="b online")
                await until(lambda: spus_online(admin, {1, 2, 3}), what="SPUs online")
                held = {s.spu_id: sorted(s.replicas) for s in sims}
            before = await kv_dump(redis_url)

            sc.kill()
            sc.start()  # same ports: the SPUs reconnect where they were
            for sim in sims:
                await reconnect(sim)
            log_mark = "Reconcile connected=[1, 2, 3]"
            await until(lambda: log_mark in sc.log(), within=20, what="reconcile after restart")
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                assert await all_online(admin, "a", 6) and await spus_online(admin, {1, 2, 3})
                for sim in sims:  # each SPU got the same replicas back, in full
                    await sim.wait_for(lambda s=sim: sorted(s.replicas) == held[s.spu_id])
                    assert sim.full_pushes >= 2
                after = await kv_dump(redis_url)
            # Nothing was written: same revision, same objects, nothing duplicated.
            assert after == before
        finally:
            for sim in sims:
                await sim.close()

    run(body(), timeout=120)


def test_spus_that_do_not_come_back_go_offline_after_restart(
    sc_factory: type[ScChild],
) -> None:
    ports = (free_port(), free_port())
    sc = sc_factory(ports=ports, heartbeat=1.0).start()

    async def body() -> None:
        sims: list[SimSpu] = []
        try:
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                for spu_id in (1, 2):
                    await admin.register_spu(spu_id, secret=sim_secret(spu_id))
                sims = [await SimSpu(sc.private_port, i).connect() for i in (1, 2)]
                await admin.create_topic("t", partitions=2, replication_factor=2)
                await until(lambda: all_online(admin, "t", 2), what="online")
            sc.kill()
            await sims[1].close()  # SPU 2 dies with the SC
            sc.start()
            await reconnect(sims[0])
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                await until(lambda: spus_online(admin, {1}), within=20, what="SPU 2 offline")

                async def led_by_1() -> bool:
                    parts = await admin.list_partitions("t")
                    return all(
                        p.status.leader == 1 and p.status.resolution.value == "Online"
                        for p in parts
                    )

                await until(led_by_1, what="SPU 1 leads both partitions")
        finally:
            for sim in sims:
                await sim.close()

    run(body(), timeout=120)


def test_redis_restart_under_a_running_sc(sc_factory: type[ScChild], tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        sc = sc_factory(redis_url=redis.url).start()

        async def body() -> None:
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                await admin.register_spu(1, secret=sim_secret(1))
                spu = await SimSpu(sc.private_port, 1).connect()
                try:
                    await admin.create_topic("before", partitions=1)
                    await until(lambda: all_online(admin, "before", 1), what="before online")
                    await asyncio.to_thread(redis.restart)
                    # The SC reconnects with backoff and resumes its watch: a topic
                    # created after the restart is provisioned and pushed to the SPU.
                    await admin.create_topic("after", partitions=2)
                    await until(
                        lambda: all_online(admin, "after", 2), within=30, what="after online"
                    )
                    await spu.wait_for(lambda: {"after-0", "after-1"} <= set(spu.replicas))
                    (topic,) = await admin.list_topics("after")
                    assert topic.status.resolution is TopicResolution.PROVISIONED
                    assert [t.name for t in await admin.list_topics()] == ["after", "before"]
                finally:
                    await spu.close()

        run(body(), timeout=120)
        sc.stop()
