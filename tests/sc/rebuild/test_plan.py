"""Rebuild planning (``sc.rebuild.plan``): a row per rule of its theory of operation."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from sc.local_store import LocalStore
from sc.rebuild import RebuildPlan, forgotten, newest, plan_rebuild
from sc.rebuild.plan import EpochRaise, TopicGrowth
from spark_stream.models import (
    KvObject,
    PartitionResolution,
    PartitionSpec,
    PrivateEndpoint,
    PublicEndpoint,
    SpuType,
    TopicResolution,
)
from spark_stream.protocol.control import Replica, ReplicaMeta
from tests.sc.controllers.helpers import make_partition, make_spu, make_topic

OLD, NEW = "store-old", "store-new"


def _meta(
    name: str,
    replicas: tuple[int, ...] = (1, 2),
    *,
    store: str = OLD,
    epoch: int = 0,
    revision: int = 50,
    leader: int | None = 1,
    uid: str | None = None,
    retention: int | None = None,
) -> ReplicaMeta:
    spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas, retention_secs=retention)
    return ReplicaMeta(store, Replica(name, leader, spec, revision, uid or f"u-{name}", epoch))


@pytest.mark.parametrize(
    ("meta", "store_id", "revision", "expected"),
    [
        (_meta("t-0", store=OLD), NEW, 100, True),  # another store: the data was lost
        (_meta("t-0", store=NEW, revision=50), NEW, 10, True),  # the store went back
        (_meta("t-0", store=NEW, revision=50), NEW, 50, False),  # the store knows it
        (_meta("t-0", store=NEW, revision=5), NEW, 50, False),  # deleted since: purge
        (_meta("t-0", store=""), NEW, 0, False),  # kept before any store: no evidence
    ],
)
def test_forgotten(meta: ReplicaMeta, store_id: str, revision: int, expected: bool) -> None:
    assert forgotten(meta, store_id, revision) is expected


@pytest.mark.parametrize(
    ("records", "epoch", "revision"),
    [
        ([_meta("t-0", epoch=1), _meta("t-0", epoch=3), _meta("t-0", epoch=2)], 3, 50),
        ([_meta("t-0", epoch=2, revision=9), _meta("t-0", epoch=2, revision=12)], 2, 12),
        ([_meta("t-0", epoch=4, revision=1), _meta("t-0", epoch=2, revision=99)], 4, 1),
    ],
)
def test_newest_takes_the_highest_epoch_then_revision(
    records: list[ReplicaMeta], epoch: int, revision: int
) -> None:
    best = newest(records)["t-0"].replica
    assert (best.leader_epoch, best.revision) == (epoch, revision)


@dataclass
class Row:
    """One case: a store, a report from SPU 1, what the plan must hold."""

    id: str
    objects: list[KvObject] = field(default_factory=list)
    records: list[ReplicaMeta] = field(default_factory=list)
    revision: int | None = None
    spu: bool = False
    topics: dict[str, tuple[int, dict[int, tuple[int, ...]]]] = field(default_factory=dict)
    partitions: dict[str, tuple[str, int | None, int]] = field(default_factory=dict)
    growths: list[TopicGrowth] = field(default_factory=list)
    raises: list[EpochRaise] = field(default_factory=list)


def _known_partition(name: str, index: int, uid: str, epoch: int) -> KvObject:
    partition = make_partition(name, index, (1, 2), leader=1)
    status = partition.status.model_copy(update={"leader_epoch": epoch})
    return partition.with_status(status).with_uid(uid)


ROWS = [
    Row("nothing reported: nothing to do"),
    Row(
        "an empty store: the SPU, the topic and its partitions come back",
        records=[_meta("t-0", epoch=2), _meta("t-1", (2, 1), leader=2)],
        spu=True,
        topics={"t": (2, {0: (1, 2), 1: (2, 1)})},
        partitions={"t-0": ("u-t-0", 1, 2), "t-1": ("u-t-1", 2, 0)},
    ),
    Row(
        "a store that knows everything: nothing to do",
        objects=[
            make_spu(1),
            make_topic("t", 1, 2, resolution=TopicResolution.PROVISIONED, replica_map={0: (1, 2)}),
            _known_partition("t", 0, "u-t-0", 0),
        ],
        records=[_meta("t-0", store=NEW, revision=1)],
        revision=10,
    ),
    Row(
        "deleted while the SPU was away (same store, older record): left to the purge",
        objects=[make_spu(1)],
        records=[_meta("t-0", store=NEW, revision=3)],
        revision=10,
    ),
    Row(
        "a registered SPU is not registered again; a partition index reported alone",
        objects=[make_spu(1)],
        records=[_meta("t-3")],
        topics={"t": (1, {3: (1, 2)})},
        partitions={"t-3": ("u-t-3", 1, 0)},
    ),
    Row(
        "a partition another SPU did not report: the known topic grows, map row first",
        objects=[
            make_spu(1),
            make_topic("t", 1, 2, resolution=TopicResolution.PROVISIONED, replica_map={0: (1, 2)}),
            _known_partition("t", 0, "u-t-0", 0),
        ],
        records=[_meta("t-0"), _meta("t-1", (2, 1), leader=2)],
        revision=2,
        partitions={"t-1": ("u-t-1", 2, 0)},
        growths=[TopicGrowth("t", {1: (2, 1)})],
    ),
    Row(
        "a newer leader epoch than the store's rebuilt one: raised with its leader",
        objects=[
            make_spu(1),
            make_topic("t", 1, 2, resolution=TopicResolution.PROVISIONED, replica_map={0: (1, 2)}),
            _known_partition("t", 0, "u-t-0", 1),
        ],
        records=[_meta("t-0", epoch=4, leader=2)],
        revision=2,
        raises=[EpochRaise("t-0", 2, 4)],
    ),
    Row(
        "an older epoch than the store's: not lowered",
        objects=[
            make_spu(1),
            make_topic("t", 1, 2, resolution=TopicResolution.PROVISIONED, replica_map={0: (1, 2)}),
            _known_partition("t", 0, "u-t-0", 5),
        ],
        records=[_meta("t-0", epoch=4)],
        revision=2,
    ),
    Row(
        "the store has the partition with another uid (created anew): the store's",
        objects=[
            make_spu(1),
            make_topic("t", 1, 2, resolution=TopicResolution.PROVISIONED, replica_map={0: (1, 2)}),
            _known_partition("t", 0, "other", 0),
        ],
        records=[_meta("t-0", epoch=9)],
        revision=2,
    ),
    Row(
        "two topics, one report",
        records=[_meta("a-0", (1,)), _meta("b-0", (1, 2, 3)), _meta("b-1", (1, 3, 2))],
        spu=True,
        topics={"a": (1, {0: (1,)}), "b": (2, {0: (1, 2, 3), 1: (1, 3, 2)})},
        partitions={"a-0": ("u-a-0", 1, 0), "b-0": ("u-b-0", 1, 0), "b-1": ("u-b-1", 1, 0)},
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_plan_rebuild(row: Row) -> None:
    store = LocalStore.of(row.objects, row.revision)
    public = PublicEndpoint(port=7001)
    private = PrivateEndpoint(port=7002)
    plan = plan_rebuild(store, NEW, row.records, spu_id=1, public=public, private=private)
    if plan.spu is not None:
        assert plan.spu.spec.spu_type is SpuType.CUSTOM
        assert (plan.spu.spu_id, plan.spu.spec.public_endpoint.port) == (1, 7001)
        assert plan.spu.spec.private_endpoint.port == 7002
    assert (plan.spu is not None) is row.spu
    topics = {t.name: (t.spec.partitions, dict(t.status.replica_map)) for t in plan.topics}
    assert topics == row.topics
    for topic in plan.topics:
        assert topic.status.resolution is TopicResolution.PROVISIONED
        assert topic.spec.partitions == len(topic.status.replica_map)  # nothing to grow
    parts = {p.name: (p.uid, p.status.leader, p.status.leader_epoch) for p in plan.partitions}
    assert parts == row.partitions
    assert list(plan.growths) == row.growths
    assert list(plan.raises) == row.raises
    assert plan.empty is not (row.spu or row.topics or row.partitions or row.growths or row.raises)


def test_rebuilt_topic_takes_the_settings_and_factor_of_the_newest_record() -> None:
    records = [
        _meta("t-0", (1, 2), epoch=1, retention=60),
        _meta("t-1", (1, 2, 3), epoch=3, retention=3600),
    ]
    plan = plan_rebuild(LocalStore(), NEW, records, spu_id=1)
    (topic,) = plan.topics
    assert (topic.spec.retention_secs, topic.spec.replication_factor) == (3600, 3)
    offline = plan_rebuild(LocalStore(), NEW, [_meta("t-0", leader=None)], spu_id=1)
    assert offline.partitions[0].status.resolution is PartitionResolution.OFFLINE
    assert offline.forgotten == ("t-0",)


def test_an_empty_plan_is_empty() -> None:
    assert RebuildPlan().empty


def test_a_managed_spu_is_not_registered_as_custom() -> None:
    """Its group registers it again (a custom SPU in the group's range would make the
    group Invalid); its topics are rebuilt all the same."""
    plan = plan_rebuild(LocalStore(), NEW, [_meta("t-0")], spu_id=1, group="main")
    assert plan.spu is None
    assert [t.name for t in plan.topics] == ["t"]


def test_a_tombstoned_record_is_not_rebuilt() -> None:
    """Deleted from this store after a rebuild: the SPU that was away still names the
    lost store, but the uid is a tombstone, so the record is left to the purge."""
    records = [_meta("t-0"), _meta("t-1")]
    plan = plan_rebuild(LocalStore(), NEW, records, spu_id=1, tombstones={"u-t-0"})
    assert [p.name for p in plan.partitions] == ["t-1"]
    assert plan.forgotten == ("t-1",)
