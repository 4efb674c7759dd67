"""T8: the SC is SIGKILLed and restarted; group members reconnect: nothing bumps or moves."""

from __future__ import annotations

import asyncio

import pytest

from sc.kv import RedisKvStore
from spark_stream.client.admin import AdminClient
from spark_stream.local import free_port
from spark_stream.models import ConsumerGroup
from tests.harness.processes import ScChild
from tests.sc.groups.member import RawMember
from tests.sc.groups.test_coordinator import settle
from tests.sc.sim_spu import run

pytestmark = pytest.mark.integration


async def group_object(url: str, name: str) -> ConsumerGroup:
    kv = RedisKvStore(url)
    try:
        obj = await kv.get("ConsumerGroup", name)
        assert isinstance(obj, ConsumerGroup)
        return obj
    finally:
        await kv.close()


async def rejoin(member: RawMember, within: float = 15.0) -> None:
    """Resume with the member's epoch and partitions, retrying while the SC restarts."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    epoch, owned = member.epoch, sorted(member.assigned())
    while True:
        try:
            await member.close()
            member.conn = None
            await member.join(
                member_epoch=epoch, owned=[{"topic": t, "partition": p} for t, p in owned]
            )
            return
        except Exception:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.1)  # retry interval while the SC restarts


def test_sc_restart_keeps_the_plan(sc_factory: type[ScChild], redis_url: str) -> None:
    sc = sc_factory(ports=(free_port(), free_port()), heartbeat=1.0).start()

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            await admin.create_topic("orders", partitions=6, allow_missing_spus=True)
        members = [RawMember(sc.public_port, "billing", ["orders"]) for _ in range(3)]
        for m in members:
            await m.join()
        await settle(members)
        before = await group_object(redis_url, "billing")
        owned = [m.assigned() for m in members]

        sc.kill()
        sc.start()
        for m in members:
            await rejoin(m)
        after = await group_object(redis_url, "billing")
        assert after.revision == before.revision  # nothing written
        assert after.status.generation == before.status.generation
        assert [m.assigned() for m in members] == owned
        assert all(
            m.last is not None and m.last.generation == before.status.generation for m in members
        )
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            desc = await admin.describe_group("billing")
        assert sorted(desc.live) == sorted(m.member_id for m in members)
        for m in members:
            await m.close()

    run(body())


def test_clean_sc_stop_is_not_a_leave(sc_factory: type[ScChild], redis_url: str) -> None:
    """SIGTERM closes the members' connections from the SC side: the plan stays."""
    sc = sc_factory(ports=(free_port(), free_port()), heartbeat=1.0).start()

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            await admin.create_topic("orders", partitions=4, allow_missing_spus=True)
        members = [RawMember(sc.public_port, "billing", ["orders"]) for _ in range(2)]
        for m in members:
            await m.join()
        await settle(members, total=4)
        before = await group_object(redis_url, "billing")
        sc.stop()
        after = await group_object(redis_url, "billing")
        assert after.revision == before.revision
        assert len(after.status.members) == 2
        sc.start()
        for m in members:
            await rejoin(m)
        assert (await group_object(redis_url, "billing")).revision == before.revision
        for m in members:
            await m.close()

    run(body())
