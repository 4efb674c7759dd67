"""The rebuild in process: ``ScApp`` on the in-memory KV, simulated SPUs reporting what
they hold (``SpuConnectRequest.replica_meta``) over the real private protocol."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.errors import UnauthorizedError
from spark_stream.models import PartitionSpec
from spark_stream.protocol.control import Replica, ReplicaId, ReplicaMeta
from tests.polling import until
from tests.sc.sim_spu import SimSpu, run

pytestmark = pytest.mark.integration

OLD = "a-store-that-was-lost"


@contextlib.asynccontextmanager
async def running_sc() -> AsyncIterator[tuple[ScApp, AdminClient]]:
    settings = load_settings(ScSettings, public_port=0, private_port=0, heartbeat_timeout_s=5)
    app = ScApp(settings, kv=MemoryKvStore())
    await app.start()
    admin = AdminClient("127.0.0.1", app.public_port, timeout=10)
    try:
        yield app, admin
    finally:
        await admin.close()
        await app.stop()


def held(
    spu: int, index: int, *, store: str = OLD, epoch: int = 2, revision: int = 40
) -> tuple[ReplicaId, ReplicaMeta]:
    """What SPU ``spu`` holds of partition ``t-{index}`` (replicas 1 and 2, 1 leads)."""
    spec = PartitionSpec(initial_leader=1, replicas=(1, 2), retention_secs=600)
    replica = Replica(f"t-{index}", 1, spec, revision, f"uid-t{index}", epoch)
    return replica.id, ReplicaMeta(store, replica)


def sim(app: ScApp, spu_id: int, *entries: tuple[ReplicaId, ReplicaMeta], **kw: object) -> SimSpu:
    return SimSpu(
        app.private_port,
        spu_id,
        stored=[e[0] for e in entries],
        meta=[e[1] for e in entries],
        public_port=30_000 + spu_id,
        **kw,  # type: ignore[arg-type]
    )


def test_a_forgotten_topic_is_rebuilt_and_a_later_delete_sticks() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            one = await sim(app, 1, held(1, 0), held(1, 1)).connect()
            assert one.accepted is not None and one.accepted.store_id == app.cm.store_id
            await until(lambda: set(one.replicas) == {"t-0", "t-1"}, what="replicas pushed")
            assert one.purged == []  # nothing purged: the store had forgotten it
            assert {r.uid for r in one.replicas.values()} == {"uid-t0", "uid-t1"}
            (topic,) = await admin.list_topics()
            assert (topic.name, topic.spec.partitions, topic.spec.retention_secs) == ("t", 2, 600)
            spus = {s.spu_id: s.spec.public_endpoint.port for s in await admin.list_spus()}
            assert spus == {1: 30_001}  # registered again, at the port it reported
            epochs = {p.name: p.status.leader_epoch for p in app.store.partitions()}
            assert epochs == {"t-0": 2, "t-1": 2}

            # SPU 2 had a newer election of t-0: the stored epoch is raised, not lowered.
            two = await sim(app, 2, held(2, 0, epoch=5), held(2, 1, epoch=1)).connect()
            await until(lambda: set(two.replicas) == {"t-0", "t-1"}, what="SPU 2's replicas")
            epochs = {p.name: p.status.leader_epoch for p in app.store.partitions()}
            assert epochs == {"t-0": 5, "t-1": 2}
            await two.close()

            await admin.delete_topic("t")  # an explicit delete: purged, and remembered
            await until(lambda: {e.name for e in one.purged} == {"t-0", "t-1"}, what="purge")
            assert await app.kv.tombstones() >= {"uid-t0", "uid-t1"}

            # SPU 2 was away during the delete; its records still name the lost store.
            again = await sim(app, 2, held(2, 0, epoch=5)).connect()
            await until(lambda: [e.name for e in again.purged] == ["t-0"], what="stale purge")
            assert await admin.list_topics() == []
            await again.close()
            await one.close()

    run(body())


def test_records_of_the_current_store_are_not_rebuilt() -> None:
    """A partition deleted while its SPU was away: its record names this store."""

    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1)
            assert app.store.revision >= 1
            spu = await sim(app, 1, held(1, 0, store=app.cm.store_id, revision=1)).connect()
            await until(lambda: [e.name for e in spu.purged] == ["t-0"], what="purge")
            assert await admin.list_topics() == []
            await spu.close()

    run(body())


def test_a_report_without_the_token_rebuilds_nothing() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            with pytest.raises(UnauthorizedError, match="token"):
                await sim(app, 1, held(1, 0), token="guess").connect()
            assert await admin.list_topics() == []
            assert await admin.list_spus() == []

    run(body())


def test_a_managed_spu_is_left_to_its_group() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            with pytest.raises(UnauthorizedError, match="not registered"):
                await sim(app, 1, held(1, 0), group="main").connect()
            assert [t.name for t in await admin.list_topics()] == ["t"]  # data kept
            assert await admin.list_spus() == []

    run(body())
