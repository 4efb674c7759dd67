"""Updaters and the action dispatcher against the in-memory KV store (no sockets)."""

from __future__ import annotations

from typing import Any

from sc.actions import (
    CmAddSpu,
    CreatePartition,
    CreateSpu,
    DeletePartition,
    DeleteSpu,
    ProvisionSpu,
    TerminateSpu,
    UpdatePartitionStatus,
    UpdateSpuGroupStatus,
    UpdateSpuStatus,
    UpdateTopicStatus,
)
from sc.connection_manager import ConnectionManager
from sc.kv import MemoryKvStore
from sc.provisioner import NullProvisioner, Provisioner
from sc.updaters import ActionDispatcher, KvUpdater, ProvisionerUpdater, object_key
from spark_stream.models import (
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    Spu,
    SpuGroup,
    SpuGroupResolution,
    SpuGroupSpec,
    SpuGroupStatus,
    SpuResolution,
    SpuSpec,
    SpuStatus,
    SpuTemplate,
    Topic,
    TopicResolution,
    TopicSpec,
    TopicStatus,
)
from tests.sc.sim_spu import run

TOPIC = Topic.new("t", TopicSpec(partitions=1))
PART = Partition.new("t", 0, PartitionSpec(initial_leader=1, replicas=(1,)))
SPU = Spu.new("spu-1", SpuSpec(spu_id=1))


def offline(leader: int) -> PartitionStatus:
    return PartitionStatus(resolution=PartitionResolution.OFFLINE, leader=leader)


def test_every_kv_action_is_written() -> None:
    async def body() -> None:
        kv = MemoryKvStore()
        topic = await kv.create(TOPIC)
        group = await kv.create(SpuGroup.new("g", SpuGroupSpec(replicas=0)))
        updater = KvUpdater(kv)
        provisioned = TopicStatus(resolution=TopicResolution.PROVISIONED, replica_map={0: (1,)})
        outcome = await updater.execute(
            [
                UpdateTopicStatus("t", provisioned, topic.revision),
                CreatePartition(PART),
                CreateSpu(SPU),
                UpdateSpuGroupStatus(
                    "g", SpuGroupStatus(resolution=SpuGroupResolution.RESERVED), group.revision
                ),
            ]
        )
        assert (outcome.done, outcome.dropped, outcome.failed) == (4, [], [])
        assert (await kv.get("Topic", "t")).status == provisioned  # type: ignore[union-attr]
        assert await kv.get("Partition", "t-0") is not None
        outcome = await updater.execute(
            [
                UpdatePartitionStatus("t-0", offline(1)),
                UpdateSpuStatus("spu-1", SpuStatus(resolution=SpuResolution.ONLINE)),
            ]
        )
        assert outcome.done == 2
        spu = await kv.get("Spu", "spu-1")
        assert spu is not None and spu.status.resolution is SpuResolution.ONLINE
        outcome = await updater.execute([DeletePartition("t-0"), DeleteSpu("spu-1")])
        assert outcome.done == 2
        assert await kv.get("Partition", "t-0") is None and await kv.get("Spu", "spu-1") is None

    run(body())


def test_overtaken_writes_are_dropped_not_raised() -> None:
    async def body() -> None:
        kv = MemoryKvStore()
        topic = await kv.create(TOPIC)
        await kv.update_status("Topic", "t", TopicStatus(resolution=TopicResolution.PENDING))
        stale = UpdateTopicStatus("t", TopicStatus(), topic.revision)
        outcome = await KvUpdater(kv).execute(
            [
                stale,
                CreatePartition(PART),
                CreatePartition(PART),
                DeleteSpu("nobody"),
            ]
        )
        assert outcome.done == 1
        assert outcome.dropped == [stale, CreatePartition(PART), DeleteSpu("nobody")]
        assert (await kv.get("Topic", "t")).status.resolution is TopicResolution.PENDING  # type: ignore[union-attr]

    run(body())


def test_actions_on_one_object_keep_their_order() -> None:
    async def body() -> None:
        kv = MemoryKvStore()
        await kv.create(TOPIC)
        await kv.create(PART)
        writes = [UpdatePartitionStatus("t-0", offline(leader)) for leader in range(1, 40)]
        outcome = await KvUpdater(kv, concurrency=8).execute(writes)
        assert outcome.done == 39
        stored = await kv.get("Partition", "t-0")
        assert stored is not None and stored.status.leader == 39

    run(body())


def test_object_keys_name_kind_and_object() -> None:
    assert object_key(CreatePartition(PART)) == ("Partition", "t-0")
    assert object_key(CreateSpu(SPU)) == ("Spu", "spu-1")
    assert object_key(UpdateTopicStatus("t", TopicStatus())) == ("Topic", "t")


class Recorder(Provisioner):
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[Any] = []
        self.fail = fail

    async def provision(self, spu: ProvisionSpu) -> None:
        if self.fail:
            raise OSError("no such command")
        self.calls.append(("provision", spu.spu_id))

    async def terminate(self, spu: TerminateSpu) -> None:
        self.calls.append(("terminate", spu.spu_id))

    def running(self) -> dict[int, int]:
        return {}


def test_action_dispatcher_routes_each_family() -> None:
    async def body() -> None:
        kv = MemoryKvStore()
        cm = ConnectionManager("t", 1.0, lambda e: None)
        recorder = Recorder()
        dispatcher = ActionDispatcher(KvUpdater(kv), cm, ProvisionerUpdater(recorder))
        outcome = await dispatcher.execute(
            [
                CmAddSpu(SPU),
                CreateSpu(SPU),
                ProvisionSpu(7, "g-7", "g", SpuTemplate()),
                TerminateSpu(6, "g-6", "g"),
            ]
        )
        assert outcome.done == 4 and not outcome.failed
        assert 1 in cm.spus
        assert await kv.get("Spu", "spu-1") is not None
        assert recorder.calls == [("provision", 7), ("terminate", 6)]

    run(body())


def test_provisioner_failures_are_reported_and_do_not_raise() -> None:
    async def body() -> None:
        cm = ConnectionManager("t", 1.0, lambda e: None)
        action = ProvisionSpu(7, "g-7", "g", SpuTemplate())
        broken = ProvisionerUpdater(Recorder(fail=True))
        failing = ActionDispatcher(KvUpdater(MemoryKvStore()), cm, broken)
        assert (await failing.execute([action])).failed == [action]
        none = ActionDispatcher(KvUpdater(MemoryKvStore()), cm, None)
        assert (await none.execute([action])).failed == [action]
        null = NullProvisioner()
        ok = ActionDispatcher(KvUpdater(MemoryKvStore()), cm, ProvisionerUpdater(null))
        assert (await ok.execute([action])).done == 1
        assert null.running() == {7: 0}

    run(body())
