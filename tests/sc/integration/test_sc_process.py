"""The SC as a real process on a real Redis, with simulated SPUs speaking the protocol."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from spark_stream.client.admin import AdminClient
from spark_stream.errors import (
    InsufficientResourcesError,
    InvalidRequestError,
    ServerStartError,
    UnauthorizedError,
)
from spark_stream.local import RedisServer, free_port
from spark_stream.models import SpuResolution, TopicResolution
from spark_stream.net.connection import Connection
from spark_stream.protocol import ApiKey
from spark_stream.protocol.control import HeartbeatRequest
from tests.harness.processes import ScChild
from tests.polling import until
from tests.sc.sim_spu import SimSpu, run

pytestmark = pytest.mark.integration


async def topic_is(admin: AdminClient, name: str, resolution: TopicResolution) -> bool:
    topics = await admin.list_topics(name)
    return bool(topics) and topics[0].status.resolution is resolution


async def spu_is(admin: AdminClient, spu_id: int, resolution: SpuResolution) -> bool:
    return any(
        s.spu_id == spu_id and s.status.resolution is resolution for s in await admin.list_spus()
    )


async def leaders(admin: AdminClient, topic: str) -> dict[str, tuple[int | None, str]]:
    return {
        p.name: (p.status.leader, p.status.resolution.value)
        for p in await admin.list_partitions(topic)
    }


async def all_online(admin: AdminClient, topic: str, count: int) -> bool:
    found = await leaders(admin, topic)
    return len(found) == count and all(r == "Online" for _, r in found.values())


def test_topic_waits_for_spus_then_provisions_and_replicas_reach_them(
    sc_factory: type[ScChild],
) -> None:
    sc = sc_factory().start()

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            with pytest.raises(InsufficientResourcesError, match="2 needs 2 SPUs, 0 registered"):
                await admin.create_topic("orders", partitions=4, replication_factor=2)
            await admin.create_topic(
                "orders", partitions=4, replication_factor=2, allow_missing_spus=True
            )
            await until(
                lambda: topic_is(admin, "orders", TopicResolution.INSUFFICIENT_RESOURCES),
                what="InsufficientResources",
            )
            for spu_id in (1, 2):
                await admin.register_spu(spu_id)
            sims = [await SimSpu(sc.private_port, i).connect() for i in (1, 2)]
            try:
                await until(
                    lambda: topic_is(admin, "orders", TopicResolution.PROVISIONED),
                    what="Provisioned",
                )
                (topic,) = await admin.list_topics("orders")
                assert sorted(topic.status.replica_map) == [0, 1, 2, 3]
                await until(lambda: all_online(admin, "orders", 4), what="partitions online")
                for sim in sims:  # replication factor 2 on 2 SPUs: each holds all four
                    await sim.wait_for(lambda s=sim: len(s.replicas) == 4)
                    assert {r.topic for r in sim.replicas.values()} == {"orders"}
                found = await leaders(admin, "orders")
                # Whoever connects first may take the partitions whose initial leader is
                # not up yet (no preferred-leader rebalance), so only check membership.
                assert {leader for leader, _ in found.values()} <= {1, 2}
            finally:
                for sim in sims:
                    await sim.close()

    run(body())


def test_failover_lrs_and_silent_spu(sc_factory: type[ScChild]) -> None:
    sc = sc_factory(heartbeat=1.0).start()

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            for spu_id in (1, 2, 3):
                await admin.register_spu(spu_id)
            sims = {i: await SimSpu(sc.private_port, i).connect() for i in (1, 2, 3)}
            try:
                await admin.create_topic("t", partitions=3, replication_factor=3)
                await until(lambda: all_online(admin, "t", 3), what="partitions online")
                # LRS from the leader becomes the partition status.
                leader = (await leaders(admin, "t"))["t-0"][0]
                assert leader is not None
                reply = await sims[leader].send_lrs([sims[leader].lrs_entry("t-0", 42, 40)])
                assert reply.accepted == 1

                async def lrs_stored() -> bool:
                    _, parts = await admin.describe_topic("t")
                    st = parts[0].status
                    return (st.leo, st.hw, len(st.lrs)) == (42, 40, 3)

                await until(lrs_stored, what="LRS in the partition status")
                # Disconnect: Offline, and the leader moves to an in-sync replica.
                await sims[leader].close()
                await until(
                    lambda: spu_is(admin, leader, SpuResolution.OFFLINE),
                    what="disconnected SPU offline",
                )

                async def moved() -> bool:
                    found = await leaders(admin, "t")
                    return found["t-0"][0] not in (leader, None) and found["t-0"][1] == "Online"

                await until(moved, what="t-0 has a new leader")
                new = (await leaders(admin, "t"))["t-0"][0]
                assert new is not None
                await sims[new].wait_for(lambda: sims[new].replicas["t-0"].leader == new)
                # A silent SPU (socket open, no heartbeat) is dropped after the timeout.
                sims[new].silence()
                await until(
                    lambda: spu_is(admin, new, SpuResolution.OFFLINE),
                    within=15,
                    what="silent SPU offline",
                )
                last = ({1, 2, 3} - {leader, new}).pop()
                await until(lambda: _leader_is(admin, "t-0", last), what="leader moved again")
            finally:
                for sim in sims.values():
                    await sim.close()

    run(body())


async def _leader_is(admin: AdminClient, name: str, spu_id: int) -> bool:
    return (await leaders(admin, name.rsplit("-", 1)[0]))[name] == (spu_id, "Online")


def test_refused_peers_and_malformed_frames_leave_the_sc_serving(
    sc_factory: type[ScChild],
) -> None:
    sc = sc_factory().start()

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            await admin.register_spu(1)
            with pytest.raises(UnauthorizedError, match="not registered"):
                await SimSpu(sc.private_port, 9).connect()
            with pytest.raises(UnauthorizedError, match="token"):
                await SimSpu(sc.private_port, 1, token="nope").connect()
            assert "spu refused spu=9" in sc.log() and "spu refused spu=1" in sc.log()
            spu = await SimSpu(sc.private_port, 1).connect()
            try:
                for port in (sc.private_port, sc.public_port):
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.write(b"\xff" * 64)
                    await writer.drain()
                    async with asyncio.timeout(5):
                        assert await reader.read()  # an error frame, then EOF
                    writer.close()
                conn = await Connection.open("127.0.0.1", sc.public_port)
                with pytest.raises(InvalidRequestError):
                    await conn.request(ApiKey.CREATE_TOPIC, {"name": ["x"]}, timeout=5)
                await conn.close()
                assert spu.conn is not None
                await spu.conn.call(HeartbeatRequest(1), timeout=5)
                await until(lambda: spu_is(admin, 1, SpuResolution.ONLINE), what="online")
                assert sc.alive
            finally:
                await spu.close()

    run(body())


def test_sc_stops_cleanly_on_sigterm(sc_factory: type[ScChild]) -> None:
    sc = sc_factory().start()
    assert sc.stop() == 0
    assert "sc stopped" in sc.log()


def test_an_unreachable_redis_is_named_and_the_sc_exits(sc_factory: type[ScChild]) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    sc = sc_factory(redis_url=url)
    sc.env["FLUVIO_SC_REDIS_START_TIMEOUT_S"] = "1"
    with pytest.raises(ServerStartError, match="exited"):
        sc.start()
    assert sc.returncode == 1
    errors = [line for line in sc.log().splitlines() if " ERROR " in line]
    assert len(errors) == 1 and f"redis at {url} is unreachable" in errors[0]


def test_sigterm_stops_an_sc_still_waiting_for_redis(sc_factory: type[ScChild]) -> None:
    sc = sc_factory(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    sc.env["FLUVIO_SC_REDIS_START_TIMEOUT_S"] = "600"
    sc.spawn()
    sc.wait_for(lambda: "checking redis" in sc.log(), 30, "the redis check")
    assert sc.stop(timeout=20) == 0  # not -9: it did not need SIGKILL
    assert "stopped on signal during start" in sc.log()


def test_bad_configuration_exits_with_an_error(sc_factory: type[ScChild]) -> None:
    sc = sc_factory(heartbeat=-1.0)
    with pytest.raises(ServerStartError, match="heartbeat_timeout_s"):
        sc.start()


async def _eventually_equal(fn: Any, expected: Any) -> bool:
    return await fn() == expected


def test_redis_persistence_is_checked_at_start(
    sc_factory: type[ScChild], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A Redis without its append-only file: a warning, or a refusal when required."""
    with RedisServer(tmp_path_factory.mktemp("no-aof"), appendonly=False) as redis_server:
        sc = sc_factory(redis_url=redis_server.url)
        sc.env["FLUVIO_SC_REQUIRE_REDIS_PERSISTENCE"] = "true"
        with pytest.raises(ServerStartError, match="exited"):
            sc.start()
        assert sc.returncode == 2
        assert "does not keep its data: persistence is off" in sc.log()
        warned = sc_factory(redis_url=redis_server.url).start()
        try:
            lines = [line for line in warned.log().splitlines() if "does not keep" in line]
            assert len(lines) == 1 and " WARNING " in lines[0]
        finally:
            assert warned.stop() == 0
