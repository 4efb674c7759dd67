"""The public api in process (``ScApp`` on the in-memory KV) through ``AdminClient``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.errors import (
    InsufficientResourcesError,
    InvalidConfigError,
    InvalidRequestError,
    NotFoundError,
    ObjectExistsError,
    SpuExistsError,
    TopicExistsError,
    UnknownTopicError,
    UnsupportedVersionError,
)
from spark_stream.models import (
    PartitionResolution,
    Spu,
    SpuGroupResolution,
    TopicResolution,
)
from spark_stream.net.connection import Connection
from spark_stream.protocol import ApiKey
from spark_stream.protocol.control import MetadataUpdate
from spark_stream.spu_identity import secret_verifier
from tests.polling import until
from tests.sc.sim_spu import SimSpu, run, sim_secret

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def running_sc(**overrides: Any) -> AsyncIterator[tuple[ScApp, AdminClient]]:
    settings = load_settings(
        ScSettings, public_port=0, private_port=0, heartbeat_timeout_s=2.0, **overrides
    )
    app = ScApp(settings, kv=MemoryKvStore())
    await app.start()
    admin = AdminClient("127.0.0.1", app.public_port, timeout=10)
    try:
        yield app, admin
    finally:
        await admin.close()
        await app.stop()


def test_topic_life_cycle_and_typed_errors() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            spec = {"partitions": 3, "replication_factor": 2, "compression": "zstd"}
            # No SPU is registered: refused, dry run or not, unless missing SPUs are allowed.
            short = "'orders' not created: replication factor 2 needs 2 SPUs, 0 registered"
            with pytest.raises(InsufficientResourcesError, match=short):
                await admin.create_topic("orders", spec)
            with pytest.raises(InsufficientResourcesError, match="1 needs 1 SPU, 0 registered"):
                await admin.create_topic("orders", dry_run=True)
            assert await admin.list_topics() == []
            topic = await admin.create_topic(
                "orders",
                spec,
                retention_secs=3600,
                segment_size=1 << 20,
                allow_missing_spus=True,
            )
            assert topic.revision > 0 and topic.spec.compression.value == "zstd"
            with pytest.raises(TopicExistsError):
                await admin.create_topic("orders", partitions=1)
            with pytest.raises(InvalidConfigError, match="partitions"):
                await admin.create_topic("bad", partitions=0)
            with pytest.raises(InvalidConfigError, match="replication_factor"):
                await admin.create_topic("bad", replication_factor="x")
            with pytest.raises(InvalidConfigError, match="name"):
                await admin.create_topic("Not_A_Name")
            dry = await admin.create_topic(
                "dry", partitions=2, dry_run=True, allow_missing_spus=True
            )
            assert dry.name == "dry" and [t.name for t in await admin.list_topics()] == ["orders"]
            # Read-your-writes: the topic is listed at once; with no SPU it cannot provision.
            await until(_resolution(admin, "orders", TopicResolution.INSUFFICIENT_RESOURCES))
            (listed,) = await admin.list_topics("orders")
            assert "SPU" in (listed.status.reason or "")
            topic, partitions = await admin.describe_topic("orders")
            assert topic.name == "orders" and partitions == []
            with pytest.raises(UnknownTopicError):
                await admin.describe_topic("nope")
            with pytest.raises(UnknownTopicError):
                await admin.list_partitions("nope")
            with pytest.raises(UnknownTopicError):
                await admin.delete_topic("nope")
            await admin.delete_topic("orders")
            assert await admin.list_topics() == []

    run(body())


def _resolution(admin: AdminClient, name: str, resolution: TopicResolution) -> Any:
    async def check() -> bool:
        topics = await admin.list_topics(name)
        return bool(topics) and topics[0].status.resolution is resolution

    return check


def test_manual_assignment_and_partition_listing() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            for spu_id in (5, 6):
                await admin.register_spu(spu_id, secret=sim_secret(spu_id))
            assignment = [{"partition": 0, "replicas": [6, 5]}, {"partition": 1, "replicas": [5]}]
            with pytest.raises(InvalidConfigError, match="replicaAssignment"):
                await admin.create_topic("manual", replica_assignment=assignment)
            unknown = [{"partition": 0, "replicas": [6, 7]}]
            with pytest.raises(InvalidConfigError, match="not created: partition 0: unknown SPU 7"):
                await admin.create_topic("waiting", replica_assignment=unknown)
            await admin.create_topic("waiting", replica_assignment=unknown, allow_missing_spus=True)
            await until(_resolution(admin, "waiting", TopicResolution.INVALID_CONFIG))
            await admin.delete_topic("waiting")
            good = [{"partition": 0, "replicas": [6, 5]}, {"partition": 1, "replicas": [5, 6]}]
            await admin.create_topic("manual", replica_assignment=good)
            await until(_resolution(admin, "manual", TopicResolution.PROVISIONED))
            partitions = await admin.list_partitions("manual")
            assert [(p.index, p.spec.replicas) for p in partitions] == [(0, (6, 5)), (1, (5, 6))]
            assert all(p.status.resolution is PartitionResolution.OFFLINE for p in partitions)
            assert [p.name for p in await admin.list_partitions()] == ["manual-0", "manual-1"]

    run(body())


def test_spu_registration_rules() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            spu = await admin.register_spu(1, rack="r1", public_endpoint={"port": 7001})
            assert spu.name == "custom-spu-1" and spu.spec.rack == "r1"
            with pytest.raises(SpuExistsError):
                await admin.register_spu(1, name="other")
            with pytest.raises(InvalidConfigError, match="spuType"):
                await admin.register_spu(2, spu_type="Managed")
            with pytest.raises(InvalidConfigError, match="port"):
                await admin.register_spu(2, public_endpoint={"port": 0})
            await admin.create_spu_group("grp", replicas=1, min_id=100)
            with pytest.raises(SpuExistsError, match="grp"):
                await admin.register_spu(100, secret=sim_secret(100))
            assert 1 in [s.spu_id for s in await admin.list_spus()]
            with pytest.raises(NotFoundError):
                await admin.unregister_spu(9)
            await admin.unregister_spu(name="custom-spu-1")
            assert 1 not in [s.spu_id for s in await admin.list_spus()]

    run(body())


def test_an_spu_secret_is_kept_as_a_verifier_and_never_served() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            answer = await admin.register_spu(3, secret=sim_secret(3))
            stored = await app.kv.get(Spu.kind, answer.name)
            assert isinstance(stored, Spu)
            assert stored.spec.secret_verifier == secret_verifier(sim_secret(3))
            (listed,) = await admin.list_spus()
            assert answer.spec.secret_verifier is None and listed.spec.secret_verifier is None
            updates = admin.watch_metadata()
            try:
                first = await anext(updates)
            finally:
                await updates.aclose()
            spus, _, _ = first.objects()
            assert [s.spec.secret_verifier for s in spus] == [None]

    run(body())


def test_spu_groups_create_scale_and_delete() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            group = await admin.create_spu_group("main", replicas=2, min_id=10)
            assert group.spec.spu_ids == range(10, 12)
            with pytest.raises(ObjectExistsError):
                await admin.create_spu_group("main", replicas=3, min_id=10)

            async def ids() -> list[int]:
                return [s.spu_id for s in await admin.list_spus()]

            await until(lambda: _eq(ids(), [10, 11]), what="managed SPUs created")
            (listed,) = await admin.list_spu_groups()
            assert listed.status.resolution is SpuGroupResolution.RESERVED
            with pytest.raises(InvalidRequestError, match="managed"):
                await admin.unregister_spu(10)
            await admin.scale_spu_group("main", 3)
            await until(lambda: _eq(ids(), [10, 11, 12]), what="scaled up")
            assert app.provisioner.running() == {10: 0, 11: 0, 12: 0}
            await admin.scale_spu_group("main", 1)
            await until(lambda: _eq(ids(), [10]), what="scaled down")
            await until(lambda: app.provisioner.running() == {10: 0}, what="terminated")
            await admin.delete_spu_group("main")
            await until(lambda: _eq(ids(), []), what="group's SPUs removed")
            with pytest.raises(NotFoundError):
                await admin.delete_spu_group("main")
            with pytest.raises(InvalidConfigError, match="replicas"):
                await admin.create_spu_group("bad", replicas=-1)

    run(body())


async def _eq(value: Any, expected: Any) -> bool:
    return await value == expected


def test_metadata_watch_snapshot_changes_and_resume() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            updates = admin.watch_metadata()
            first = await asyncio.wait_for(updates.__anext__(), 5)
            assert first.full and [s["spec"]["spuId"] for s in first.spus] == [1]
            assert first.topics == [] and first.partitions == []
            await admin.create_topic("a", partitions=2)
            seen: dict[str, Any] = {}
            async with asyncio.timeout(10):
                while sorted(seen) != ["a-0", "a-1"] or any(
                    p["status"]["resolution"] != "Offline" for p in seen.values()
                ):
                    update = await updates.__anext__()
                    assert not update.full
                    seen.update({p["metadata"]["name"]: p for p in update.partitions})
            resume_at = update.revision
            await updates.aclose()
            await admin.create_topic("b", partitions=1)
            # Resuming from a revision sends only what came after it, not a snapshot.
            resumed = admin.watch_metadata(resume_at)
            update = await asyncio.wait_for(resumed.__anext__(), 5)
            assert not update.full and update.revision > resume_at
            assert [t["metadata"]["name"] for t in update.topics] == ["b"]
            await resumed.aclose()
            await admin.delete_topic("b")
            fresh = admin.watch_metadata(10**9)  # a revision the SC never saw: snapshot
            update = await asyncio.wait_for(fresh.__anext__(), 5)
            assert update.full and [t["metadata"]["name"] for t in update.topics] == ["a"]
            await fresh.aclose()

    run(body())


def test_metadata_watch_reports_deletes_and_leader_changes_only() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            await admin.register_spu(1, secret=sim_secret(1))
            spu = await SimSpu(app.private_port, 1).connect()
            try:
                await admin.create_topic("t", partitions=1)
                await until(lambda: "t-0" in spu.replicas, what="replica pushed")
                updates = admin.watch_metadata()
                snapshot = await asyncio.wait_for(updates.__anext__(), 5)
                assert snapshot.full
                # Offsets moving (LRS with a higher LEO) are not metadata.
                await spu.send_lrs([spu.lrs_entry("t-0", leo=50, hw=50)])
                await admin.delete_topic("t")
                update: MetadataUpdate = await asyncio.wait_for(updates.__anext__(), 5)
                names = {d["name"] for d in update.deleted}
                if not names:  # the Online transition may arrive first
                    assert update.partitions
                    update = await asyncio.wait_for(updates.__anext__(), 5)
                    names = {d["name"] for d in update.deleted}
                assert {"t", "t-0"} <= names
                await updates.aclose()
            finally:
                await spu.close()

    run(body())


def test_public_server_answers_bad_requests_with_typed_errors() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            conn = await Connection.open("127.0.0.1", app.public_port)
            try:
                with pytest.raises(InvalidRequestError, match="name"):
                    await conn.request(ApiKey.CREATE_TOPIC, {"spec": {}}, timeout=5)
                with pytest.raises(InvalidRequestError):
                    await conn.request(ApiKey.CREATE_TOPIC, {"name": 5, "spec": {}}, timeout=5)
                with pytest.raises(UnsupportedVersionError):
                    await conn.request(ApiKey.SPU_CONNECT, {}, timeout=5)
                meta, _ = await conn.request(ApiKey.LIST_TOPICS, {}, timeout=5)
                assert meta["topics"] == []
            finally:
                await conn.close()

    run(body())


def test_add_partitions_grows_only_with_typed_errors() -> None:
    async def body() -> None:
        async with running_sc() as (app, admin):
            for spu_id in (1, 2):
                await admin.register_spu(spu_id, secret=sim_secret(spu_id))
            await admin.create_topic("t", partitions=1, replication_factor=2)
            await until(_resolution(admin, "t", TopicResolution.PROVISIONED))
            grown = await admin.add_partitions("t")  # one by default, as Fluvio's CLI
            assert grown.spec.partitions == 2 and sorted(grown.status.replica_map) == [0, 1]
            assert [p.index for p in await admin.list_partitions("t")] == [0, 1]
            # Two admins adding at once: both additions count (compare-and-set, retried).
            other = AdminClient("127.0.0.1", app.public_port, timeout=10)
            try:
                await asyncio.gather(admin.add_partitions("t", 2), other.add_partitions("t", 3))
            finally:
                await other.close()
            topic, parts = await admin.describe_topic("t")
            assert topic.spec.partitions == 7 and len(topic.status.replica_map) == 7
            assert [p.index for p in parts] == list(range(7))
            with pytest.raises(UnknownTopicError, match="'nope' does not exist"):
                await admin.add_partitions("nope")
            with pytest.raises(InvalidConfigError, match="count: partitions can only be added"):
                await admin.add_partitions("t", 0)
            with pytest.raises(InvalidConfigError, match="would have 100007 partitions"):
                await admin.add_partitions("t", 100_000)
            manual = [{"partition": 0, "replicas": [1]}]
            await admin.create_topic("manual", replica_assignment=manual)
            with pytest.raises(InvalidConfigError, match="manual replica assignment"):
                await admin.add_partitions("manual")
            await admin.unregister_spu(2)
            with pytest.raises(InsufficientResourcesError, match="2 needs 2 SPUs, 1 registered"):
                await admin.add_partitions("t")
            # Nothing changed by the refusals.
            assert (await admin.describe_topic("t"))[0].spec.partitions == 7

    run(body())
