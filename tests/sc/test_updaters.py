"""Updaters and the action dispatcher, mostly against the in-memory KV store.

The kind round trip runs against both KV implementations (memory and a real Redis),
including a kind that only the kind registry knows.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from sc.actions import (
    CmAddSpu,
    KvCreate,
    KvDelete,
    KvUpdateSpec,
    KvUpdateStatus,
    ProvisionSpu,
    TerminateSpu,
)
from sc.connection_manager import ConnectionManager
from sc.kv import KvStore, MemoryKvStore
from sc.provisioner import NullProvisioner, Provisioner
from sc.updaters import ActionDispatcher, KvUpdater, ProvisionerUpdater
from spark_stream.models import (
    KINDS,
    ConsumerGroup,
    ConsumerGroupSpec,
    ConsumerGroupStatus,
    FrozenModel,
    KvObject,
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
from tests.sc.conftest import Backend
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
                KvUpdateStatus("Topic", "t", provisioned, topic.revision),
                KvCreate(PART),
                KvCreate(SPU),
                KvUpdateStatus.of(group, SpuGroupStatus(resolution=SpuGroupResolution.RESERVED)),
            ]
        )
        assert (outcome.done, outcome.dropped, outcome.failed) == (4, [], [])
        assert (await kv.get("Topic", "t")).status == provisioned  # type: ignore[union-attr]
        assert await kv.get("Partition", "t-0") is not None
        outcome = await updater.execute(
            [
                KvUpdateStatus("Partition", "t-0", offline(1)),
                KvUpdateStatus("Spu", "spu-1", SpuStatus(resolution=SpuResolution.ONLINE)),
            ]
        )
        assert outcome.done == 2
        spu = await kv.get("Spu", "spu-1")
        assert spu is not None and spu.status.resolution is SpuResolution.ONLINE
        outcome = await updater.execute([KvDelete("Partition", "t-0"), KvDelete("Spu", "spu-1")])
        assert outcome.done == 2
        assert await kv.get("Partition", "t-0") is None and await kv.get("Spu", "spu-1") is None

    run(body())


def test_overtaken_writes_are_dropped_not_raised() -> None:
    async def body() -> None:
        kv = MemoryKvStore()
        topic = await kv.create(TOPIC)
        await kv.update_status("Topic", "t", TopicStatus(resolution=TopicResolution.PENDING))
        stale = KvUpdateStatus.of(topic, TopicStatus())
        outcome = await KvUpdater(kv).execute(
            [
                stale,
                KvCreate(PART),
                KvCreate(PART),
                KvDelete("Spu", "nobody"),
            ]
        )
        assert outcome.done == 1
        assert outcome.dropped == [stale, KvCreate(PART), KvDelete("Spu", "nobody")]
        assert (await kv.get("Topic", "t")).status.resolution is TopicResolution.PENDING  # type: ignore[union-attr]

    run(body())


def test_actions_on_one_object_keep_their_order() -> None:
    async def body() -> None:
        kv = MemoryKvStore()
        await kv.create(TOPIC)
        await kv.create(PART)
        writes = [KvUpdateStatus("Partition", "t-0", offline(leader)) for leader in range(1, 40)]
        outcome = await KvUpdater(kv, concurrency=8).execute(writes)
        assert outcome.done == 39
        stored = await kv.get("Partition", "t-0")
        assert stored is not None and stored.status.leader == 39

    run(body())


class WidgetSpec(FrozenModel):
    """Spec of a kind that only the test below registers."""

    size: int


class WidgetStatus(FrozenModel):
    """Status of that kind: no ``resolution``, unlike every built-in kind."""

    state: str = "new"


class Widget(KvObject[WidgetSpec, WidgetStatus]):
    """A kind no SC code names: it exists only in the kind registry, during one test."""

    kind: ClassVar[str] = "Widget"

    status: WidgetStatus = WidgetStatus()


#: One object of each registered kind (parents first), then a new spec and a new status.
SAMPLES: list[tuple[KvObject[Any, Any], FrozenModel, FrozenModel]] = [
    (TOPIC, TopicSpec(partitions=2), TopicStatus(resolution=TopicResolution.PENDING)),
    (PART, PartitionSpec(initial_leader=1, replicas=(1, 2)), offline(1)),
    (SPU, SpuSpec(spu_id=1, rack="r1"), SpuStatus(resolution=SpuResolution.ONLINE)),
    (
        SpuGroup.new("g", SpuGroupSpec(replicas=0)),
        SpuGroupSpec(replicas=0, min_id=5),
        SpuGroupStatus(resolution=SpuGroupResolution.RESERVED),
    ),
    (
        ConsumerGroup.new("billing"),
        ConsumerGroupSpec(session_timeout_ms=20_000),
        ConsumerGroupStatus(group_epoch=1),
    ),
    (Widget.build("w", WidgetSpec(size=1)), WidgetSpec(size=2), WidgetStatus(state="ready")),
]


def test_every_registered_kind_round_trips_through_the_updater(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(KINDS, Widget.kind, Widget)
    # A new kind needs a row in SAMPLES, and no action class or updater arm.
    assert {obj.kind for obj, _, _ in SAMPLES} == set(KINDS)

    async def body(kv: KvStore) -> None:
        updater = KvUpdater(kv)

        async def write(action: KvCreate | KvUpdateSpec | KvUpdateStatus | KvDelete) -> Any:
            outcome = await updater.execute([action])
            assert (outcome.done, outcome.dropped, outcome.failed) == (1, [], []), action
            return await kv.get(action.kind, action.name)

        for obj, spec, status in SAMPLES:
            created = await write(KvCreate(obj))
            assert created.spec == obj.spec and created.status == obj.status
            changed = await write(KvUpdateSpec.of(created, spec))
            assert changed.spec == spec and changed.revision > created.revision
            updated = await write(KvUpdateStatus.of(changed, status))
            assert (type(updated), updated.spec, updated.status) == (type(obj), spec, status)
        for obj, _, _ in reversed(SAMPLES):
            assert await write(KvDelete(obj.kind, obj.name)) is None
        assert await kv.revision() == 4 * len(SAMPLES)

    backend.run(body)


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
        cm = ConnectionManager(1.0, lambda e: None)
        recorder = Recorder()
        dispatcher = ActionDispatcher(KvUpdater(kv), cm, ProvisionerUpdater(recorder))
        outcome = await dispatcher.execute(
            [
                CmAddSpu(SPU),
                KvCreate(SPU),
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
        cm = ConnectionManager(1.0, lambda e: None)
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
