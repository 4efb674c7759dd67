"""The private api in process (``ScApp`` on the in-memory KV) with simulated SPUs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sc.app import ScApp
from sc.isr import in_sync_ids
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.errors import (
    ConnectionClosedError,
    InvalidRequestError,
    KvUnavailableError,
    UnauthorizedError,
)
from spark_stream.models import (
    KvObject,
    Partition,
    PartitionResolution,
    PartitionStatus,
    SpuResolution,
)
from spark_stream.net.connection import Connection
from spark_stream.protocol import ApiKey
from spark_stream.protocol.control import (
    HeartbeatRequest,
    LrsStatus,
    SpuConnectRequest,
    UpdateLrsRequest,
)
from tests.polling import until
from tests.sc.sim_spu import SimSpu, run, sim_secret

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def running_sc(
    heartbeat: float = 2.0, kv: MemoryKvStore | None = None
) -> AsyncIterator[tuple[ScApp, AdminClient]]:
    settings = load_settings(
        ScSettings, public_port=0, private_port=0, heartbeat_timeout_s=heartbeat
    )
    app = ScApp(settings, kv=kv or MemoryKvStore())
    await app.start()
    admin = AdminClient("127.0.0.1", app.public_port, timeout=10)
    try:
        yield app, admin
    finally:
        await admin.close()
        await app.stop()


async def spu_status(admin: AdminClient, spu_id: int) -> SpuResolution | None:
    for spu in await admin.list_spus():
        if spu.spu_id == spu_id:
            return spu.status.resolution
    return None


def is_status(admin: AdminClient, spu_id: int, resolution: SpuResolution) -> Any:
    async def check() -> bool:
        return await spu_status(admin, spu_id) is resolution

    return check


def test_unregistered_spus_wrong_secrets_and_claims_of_another_id_are_refused() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            await admin.register_spu(2, secret=sim_secret(2))
            with pytest.raises(UnauthorizedError, match="SPU 3 is not registered"):
                await SimSpu(app.private_port, 3).connect()
            with pytest.raises(UnauthorizedError, match=r"^SPU 1: wrong secret \(not the one"):
                await SimSpu(app.private_port, 1, token="guess").connect()
            # SPU 2, with its own valid secret, claims SPU 1's id
            with pytest.raises(UnauthorizedError, match="^SPU 1: wrong secret"):
                await SimSpu(app.private_port, 1, token=sim_secret(2)).connect()
            assert app.cm.connected_ids() == frozenset()
            assert await spu_status(admin, 1) is SpuResolution.INIT
            # The refused connection is closed by the SC.
            conn = await Connection.open("127.0.0.1", app.private_port)
            stream = await conn.stream(SpuConnectRequest(7, sim_secret(7)))
            with pytest.raises(UnauthorizedError):
                await stream.__anext__()
            await until(lambda: conn.closed, what="refused connection closed")

    run(body())


def test_requests_before_connect_or_for_another_spu_are_refused() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            conn = await Connection.open("127.0.0.1", app.private_port)
            try:
                with pytest.raises(UnauthorizedError):
                    await conn.call(HeartbeatRequest(1), timeout=5)
                with pytest.raises(InvalidRequestError, match="stream"):
                    await conn.call(SpuConnectRequest(1, sim_secret(1)), timeout=5)
            finally:
                await conn.close()
            spu = await SimSpu(app.private_port, 1).connect()
            try:
                assert spu.conn is not None
                with pytest.raises(UnauthorizedError, match="SPU 1"):
                    await spu.conn.call(UpdateLrsRequest(2, []), timeout=5)
                with pytest.raises(InvalidRequestError, match="already"):
                    stream = await spu.conn.stream(SpuConnectRequest(1, sim_secret(1)))
                    await stream.__anext__()
            finally:
                await spu.close()

    run(body())


def test_connect_records_endpoints_marks_online_and_pushes_replicas() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            await admin.create_topic("t", partitions=2)
            spu = await SimSpu(app.private_port, 1, public_port=7100).connect()
            try:
                await until(is_status(admin, 1, SpuResolution.ONLINE), what="SPU online")
                (listed,) = await admin.list_spus()
                assert listed.spec.public_endpoint.port == 7100
                assert listed.spec.private_endpoint.port == 7101
                await spu.wait_for(lambda: sorted(spu.replicas) == ["t-0", "t-1"])
                assert spu.spus[1].spec.public_endpoint.port == 7100

                async def online() -> bool:
                    parts = await admin.list_partitions("t")
                    return all(p.status.resolution is PartitionResolution.ONLINE for p in parts)

                await until(online, what="partitions online from the auto LRS")
                reply = await spu.send_lrs([spu.lrs_entry("t-0", leo=10, hw=8)])
                assert (reply.accepted, reply.rejected) == (1, [])

                async def offsets() -> bool:
                    _, parts = await admin.describe_topic("t")
                    return (parts[0].status.leo, parts[0].status.hw) == (10, 8)

                await until(offsets, what="LRS stored")
                _, parts = await admin.describe_topic("t")
                assert parts[0].status.lrs[0].leo == 10 and parts[0].status.leader == 1
            finally:
                await spu.close()
            await until(is_status(admin, 1, SpuResolution.OFFLINE), what="SPU offline")

    run(body())


def test_leader_moves_when_its_spu_disconnects_and_the_change_is_pushed() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            for spu_id in (1, 2):
                await admin.register_spu(spu_id, secret=sim_secret(spu_id))
            await admin.create_topic("t", partitions=2, replication_factor=2)
            sims = {i: await SimSpu(app.private_port, i).connect() for i in (1, 2)}
            try:

                async def leaders() -> dict[str, tuple[int | None, str]]:
                    return {
                        p.name: (p.status.leader, p.status.resolution.value)
                        for p in await admin.list_partitions("t")
                    }

                async def all_online() -> bool:
                    found = await leaders()
                    return len(found) == 2 and all(r == "Online" for _, r in found.values())

                await until(all_online, what="both partitions online")
                lost = (await leaders())["t-0"][0]
                assert lost in (1, 2)
                other = 3 - lost
                await sims[lost].close()
                await until(is_status(admin, lost, SpuResolution.OFFLINE), what="leader offline")
                await until(
                    lambda: _eq(leaders(), {"t-0": (other, "Online"), "t-1": (other, "Online")}),
                    what="partitions led by the remaining SPU",
                )
                survivor = sims[other]
                await survivor.wait_for(lambda: survivor.replicas["t-0"].leader == other)
                # The old leader comes back: it follows, and its stale LRS is fenced off.
                back = sims[lost]
                await back.connect()
                await back.wait_for(lambda: "t-0" in back.replicas)
                assert back.replicas["t-0"].leader == other
                reply = await back.send_lrs([back.lrs_entry("t-0")])
                assert reply.rejected == ["t-0"]
            finally:
                for sim in sims.values():
                    await sim.close()

    run(body())


class _StallingKv(MemoryKvStore):
    """The memory store, whose partition status writes fail while ``stalled`` (as when
    Redis is unreachable)."""

    stalled = False

    async def update_status(
        self, kind: str, name: str, status: Any, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        if self.stalled and kind == Partition.kind:
            raise KvUnavailableError("partition status writes are stalled by the test")
        return await super().update_status(kind, name, status, expected_revision)


def _dropping(entry: LrsStatus, follower: int) -> LrsStatus:
    """``entry`` with ``follower`` out of the in-sync set (the leader's proposed shrink)."""
    lrs = tuple(
        r.model_copy(update={"in_sync": False}) if r.spu_id == follower else r
        for r in entry.status.lrs
    )
    return LrsStatus(entry.name, entry.status.model_copy(update={"lrs": lrs}))


def test_an_in_sync_shrink_is_accepted_only_once_the_store_records_it() -> None:
    """Elections read the store's in-sync set, so a shrink the store could not record
    is refused: its leader keeps the larger set (and commits nothing only it and the
    remaining followers hold) until a later report is recorded and accepted."""

    async def body() -> None:
        kv = _StallingKv()
        async with running_sc(kv=kv) as (app, admin):
            app.private.shrink_record_timeout_s = 0.5
            for spu_id in (1, 2):
                await admin.register_spu(spu_id, secret=sim_secret(spu_id))
            await admin.create_topic("t", partitions=1, replication_factor=2)
            sims = {i: await SimSpu(app.private_port, i).connect() for i in (1, 2)}
            try:

                async def stored() -> PartitionStatus:
                    (part,) = await admin.list_partitions("t")
                    return part.status

                async def online() -> bool:
                    return (await stored()).resolution is PartitionResolution.ONLINE

                await until(online, what="partition online")
                leader = (await stored()).leader
                assert leader in (1, 2)
                follower = 3 - leader
                sim = sims[leader]
                await sim.wait_for(lambda: sim.replicas["t-0"].leader == leader)
                shrink = _dropping(sim.lrs_entry("t-0", leo=5, hw=5), follower)

                kv.stalled = True
                reply = await sim.send_lrs([shrink])
                assert (reply.accepted, reply.rejected) == (0, ["t-0"])
                assert in_sync_ids(await stored()) == {1, 2}

                kv.stalled = False
                reply = await sim.send_lrs([shrink])
                assert (reply.accepted, reply.rejected) == (1, [])
                assert in_sync_ids(await stored()) == {leader}  # recorded before the answer
            finally:
                for sim in sims.values():
                    await sim.close()

    run(body())


async def _eq(value: Any, expected: Any) -> bool:
    return await value == expected


def test_a_silent_spu_goes_offline_after_the_heartbeat_timeout() -> None:
    async def body() -> None:
        async with running_sc(heartbeat=0.6) as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            spu = await SimSpu(app.private_port, 1, heartbeat_s=0.1).connect()
            try:
                await until(is_status(admin, 1, SpuResolution.ONLINE), what="online")
                spu.silence()
                await until(is_status(admin, 1, SpuResolution.OFFLINE), what="offline")
                assert spu.conn is not None
                await until(
                    lambda: spu.conn is not None and spu.conn.closed,
                    what="connection closed by the SC",
                )
            finally:
                await spu.close()

    run(body())


def test_a_second_connection_replaces_the_first() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            first = await SimSpu(app.private_port, 1).connect()
            second = await SimSpu(app.private_port, 1).connect()
            try:
                await until(
                    lambda: first.conn is not None and first.conn.closed,
                    what="first connection closed",
                )
                assert isinstance(first.error, ConnectionClosedError) or first.error is None
                assert app.cm.connected_ids() == {1}
                await until(is_status(admin, 1, SpuResolution.ONLINE), what="still online")
                assert second.conn is not None
                await second.conn.call(HeartbeatRequest(1), timeout=5)
            finally:
                await first.close()
                await second.close()

    run(body())


def test_unregistering_a_connected_spu_drops_its_connection() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            spu = await SimSpu(app.private_port, 1).connect()
            try:
                await admin.unregister_spu(1)
                await until(lambda: spu.conn is not None and spu.conn.closed, what="dropped")
                with pytest.raises(UnauthorizedError):
                    await SimSpu(app.private_port, 1).connect()
            finally:
                await spu.close()

    run(body())


def test_malformed_frames_do_not_disturb_other_spus() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            spu = await SimSpu(app.private_port, 1).connect()
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", app.private_port)
                writer.write(b"\x00\x00\x00\x10garbage-garbage-garbage")
                await writer.drain()
                async with asyncio.timeout(5):
                    rest = await reader.read()
                assert rest  # an error frame, then the SC closes that connection
                writer.close()
                conn = await Connection.open("127.0.0.1", app.private_port)
                with pytest.raises(InvalidRequestError):
                    await conn.request(ApiKey.HEARTBEAT, {"spu_id": "x"}, timeout=5)
                await conn.close()
                assert spu.conn is not None
                await spu.conn.call(HeartbeatRequest(1), timeout=5)
                assert app.cm.connected_ids() == {1}
            finally:
                await spu.close()

    run(body())


def test_a_report_skipped_while_an_older_one_was_being_written_is_stored_on_its_repeat() -> None:
    """Two reports in one batch: the older one (leo 11) is written, the newer (leo 10)
    equals the mirror before that write and is skipped. The leader's periodic repeat of
    the newer one must reach the controllers once the older write is in the mirror."""

    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            await admin.create_topic("t", partitions=1)
            spu = await SimSpu(app.private_port, 1, public_port=7100).connect()
            try:
                await spu.wait_for(lambda: "t-0" in spu.replicas)

                async def stored_leo(leo: int) -> bool:
                    _, parts = await admin.describe_topic("t")
                    return parts[0].status.leo == leo

                await spu.send_lrs([spu.lrs_entry("t-0", leo=10, hw=10)])
                await until(lambda: stored_leo(10), what="the first report stored")
                older, newer = spu.lrs_entry("t-0", leo=11, hw=11), spu.lrs_entry("t-0", 10, 10)
                await spu.send_lrs([older, newer])
                await until(lambda: stored_leo(11), what="the older report's write")

                async def repeated() -> bool:
                    await spu.send_lrs([newer])  # the leader's periodic report
                    await asyncio.sleep(0.05)
                    return await stored_leo(10)

                await until(repeated, within=10.0, what="the newer report stored on a repeat")
            finally:
                await spu.close()

    run(body())
