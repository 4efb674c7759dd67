"""Topic controller: one row per bullet of the seed's "Topic Controller" section, and more."""

from __future__ import annotations

from typing import Any

import pytest

from sc.actions import Action, CmAddPartition, KvCreate, KvUpdateStatus
from sc.assignment import InsufficientSpus, InvalidAssignment
from sc.controllers import Reconcile
from sc.controllers.topic import reduce
from sc.controllers.topic.policy import missing_spus
from sc.local_store import LocalStore
from spark_stream.models import (
    KvObject,
    Partition,
    PartitionAssignment,
    PartitionResolution,
    PartitionSpec,
    SpuResolution,
    Topic,
    TopicResolution,
    TopicStatus,
)
from tests.sc.controllers.helpers import (
    Cluster,
    added,
    deleted,
    kv_actions,
    make_partition,
    make_spu,
    make_topic,
    modified,
)

R = TopicResolution
SPUS = [make_spu(0), make_spu(1), make_spu(2)]


def _manual(name: str, rows: dict[int, tuple[int, ...]], **kw: Any) -> Topic:
    assignment = tuple(PartitionAssignment(partition=p, replicas=r) for p, r in rows.items())
    return make_topic(name, len(rows), len(rows[0]), replica_assignment=assignment, **kw)


def _status(topic: Topic, resolution: TopicResolution, **kw: Any) -> KvUpdateStatus:
    status = TopicStatus(resolution=resolution, **kw)
    return KvUpdateStatus("Topic", topic.name, status, topic.revision)


def _provisioned(topic: Topic, replica_map: dict[int, tuple[int, ...]]) -> list[Action]:
    parts = [
        KvCreate(Partition.new(topic.name, i, PartitionSpec.for_replicas(topic.spec, r)))
        for i, r in sorted(replica_map.items())
    ]
    return [_status(topic, R.PROVISIONED, replica_map=replica_map), *parts]


def _grown(topic: Topic, replica_map: dict[int, tuple[int, ...]], new: list[int]) -> list[Action]:
    status, *parts = _provisioned(topic, replica_map)
    return [
        status,
        *(
            p
            for p in parts
            if isinstance(p, KvCreate) and isinstance(p.obj, Partition) and p.obj.index in new
        ),
    ]


T_INIT = make_topic("orders", 3, 2)
T_PENDING = make_topic("orders", 3, 2, resolution=R.PENDING)
T_BIG = make_topic("big", 2, 4, resolution=R.PENDING)
SHORT = "replication factor 4 needs 4 SPUs, 3 registered"
T_SHORT = make_topic("big", 2, 4, resolution=R.INSUFFICIENT_RESOURCES, reason=SHORT)
M_INIT = _manual("manual", {0: (0, 9), 1: (9, 1)})
UNKNOWN = "partition 0: unknown SPU 9"
M_INVALID = _manual("manual", {0: (0, 9), 1: (9, 1)}, resolution=R.INVALID_CONFIG, reason=UNKNOWN)
M_PENDING = _manual("manual", {0: (2, 0), 1: (1, 2)}, resolution=R.PENDING)
T_DONE = make_topic("orders", 2, 1, resolution=R.PROVISIONED, replica_map={0: (0,), 1: (1,)})
P0 = make_partition("orders", 0, [0])
P1 = make_partition("orders", 1, [1])
SPU9 = make_spu(9)

# T_DONE after ``ADD_PARTITIONS`` raised its spec to 4: the map still has 2 rows.
T_GROWN = make_topic("orders", 4, 1, resolution=R.PROVISIONED, replica_map={0: (0,), 1: (1,)})
GROWN_MAP = {0: (0,), 1: (1,), 2: (2,), 3: (0,)}  # as if created with 4 (leaders 0, 1, 2, 0)
T_GROWN2 = make_topic("wide", 3, 2, resolution=R.PROVISIONED, replica_map={0: (0, 1)})
SHORT_GROW = "cannot add partitions: replication factor 2 needs 2 SPUs, 1 registered"

# Computed by sc.assignment for 3 SPUs (docs/assignment.md explains the fill).
ORDERS_MAP = {0: (0, 1), 1: (2, 0), 2: (1, 2)}

ROWS: list[tuple[str, list[KvObject[Any, Any]], Any, list[Action]]] = [
    # seed: "Add Topic -> status Init"; Init is the model's default, so the controller
    # continues straight to the validation below.
    ("add topic: Init, then validated", [*SPUS, T_INIT], added(T_INIT),
     [_status(T_INIT, R.PENDING)]),
    # seed: "Init or Invalid: validate; params OK -> Pending"
    ("Init, params OK: Pending", [*SPUS, T_INIT], modified(T_INIT, T_INIT),
     [_status(T_INIT, R.PENDING)]),
    # seed: "params Invalid -> InvalidConfig" (with reason)
    ("Init, manual map with unknown SPU: InvalidConfig", [*SPUS, M_INIT], added(M_INIT),
     [_status(M_INIT, R.INVALID_CONFIG, reason=UNKNOWN)]),
    ("InvalidConfig, still invalid: nothing", [*SPUS, M_INVALID], modified(M_INIT, M_INVALID), []),
    ("InvalidConfig, SPU now registered: Pending", [*SPUS, SPU9, M_INVALID],
     modified(M_INIT, M_INVALID), [_status(M_INVALID, R.PENDING)]),
    # seed: "Pending or InsufficientResources: SPUs OK -> Provisioned + replicaMap +
    # a Partition per entry"
    ("Pending, enough SPUs: Provisioned and partitions", [*SPUS, T_PENDING],
     modified(T_INIT, T_PENDING), _provisioned(T_PENDING, ORDERS_MAP)),
    ("Pending manual map: Provisioned as given", [*SPUS, M_PENDING],
     modified(M_INIT, M_PENDING), _provisioned(M_PENDING, {0: (2, 0), 1: (1, 2)})),
    # seed: "Not enough SPUs -> InsufficientResources"
    ("Pending, too few SPUs: InsufficientResources", [*SPUS, T_BIG], modified(T_BIG, T_BIG),
     [_status(T_BIG, R.INSUFFICIENT_RESOURCES, reason=SHORT)]),
    ("InsufficientResources, still short: nothing", [*SPUS, T_SHORT], modified(T_BIG, T_SHORT),
     []),
    # seed: "Add SPU -> every Pending/InsufficientResources topic gets a replica map"
    ("add SPU: waiting topic provisioned", [*SPUS, make_spu(3), T_SHORT], added(make_spu(3)),
     _provisioned(T_SHORT, {0: (0, 1, 2, 3), 1: (1, 0, 2, 3)})),
    ("add SPU: still short, nothing", [*SPUS, T_SHORT], added(SPUS[0]), []),
    ("add SPU: manual topic naming it is re-validated", [*SPUS, SPU9, M_INVALID], added(SPU9),
     [_status(M_INVALID, R.PENDING)]),
    ("provisioned topic: nothing", [*SPUS, T_DONE, P0, P1], modified(T_DONE, T_DONE), []),
    ("deleted topic: the KV store removes its partitions", [*SPUS], deleted(T_DONE), []),
    ("SPU modified: nothing", [*SPUS, T_SHORT], modified(SPUS[0], SPUS[0]), []),
    # ADD_PARTITIONS: the spec grew, the map gains rows and the store partitions
    ("provisioned topic grown: new rows and partitions only", [*SPUS, T_GROWN, P0, P1],
     modified(T_DONE, T_GROWN), _grown(T_GROWN, GROWN_MAP, [2, 3])),
    ("grown, too few SPUs: map kept, reason", [SPUS[0], T_GROWN2], modified(T_GROWN2, T_GROWN2),
     [_status(T_GROWN2, R.PROVISIONED, replica_map={0: (0, 1)}, reason=SHORT_GROW)]),
    ("add SPU: a grown topic waiting for SPUs gets its partitions", [*SPUS[:2], T_GROWN2],
     added(SPUS[1]), _grown(T_GROWN2, {0: (0, 1), 1: (1, 0), 2: (0, 1)}, [1, 2])),
    ("reconcile: a spec grown before an SC stop is provisioned", [*SPUS, T_GROWN, P0, P1],
     Reconcile(), _grown(T_GROWN, GROWN_MAP, [2, 3])),
]  # fmt: skip


@pytest.mark.parametrize(
    ("objects", "event", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_topic_reducer(
    objects: list[KvObject[Any, Any]], event: Any, expected: list[Action]
) -> None:
    assert reduce(LocalStore.of(objects), event) == expected


def test_add_spu_provisions_several_topics_with_chained_leaders() -> None:
    a = make_topic("a", 1, 1, resolution=R.INSUFFICIENT_RESOURCES, reason="x")
    b = make_topic("b", 1, 1, resolution=R.PENDING)
    c = make_topic("c", 1, 1, resolution=R.PROVISIONED, replica_map={0: (0,)})
    store = LocalStore.of([*SPUS, a, b, c, make_partition("c", 0, [0])])
    actions = reduce(store, added(SPUS[2]))
    # one partition exists, so "a" starts at index 1 and "b" at index 2
    assert actions == [*_provisioned(a, {0: (1,)}), *_provisioned(b, {0: (2,)})]


def test_start_index_follows_existing_partitions() -> None:
    existing = [make_partition("old", i, [i % 3]) for i in range(4)]
    topic = make_topic("new", 3, 1, resolution=R.PENDING)
    actions = reduce(LocalStore.of([*SPUS, *existing, topic]), modified(topic, topic))
    first = actions[0]
    assert isinstance(first, KvUpdateStatus) and isinstance(first.status, TopicStatus)
    assert first.status.replica_map == {0: (1,), 1: (2,), 2: (0,)}


def test_rack_labels_reach_the_assignment() -> None:
    spus = [make_spu(i, rack=f"r{i // 2}") for i in range(4)]  # r0: 0,1  r1: 2,3
    topic = make_topic("racked", 4, 2, resolution=R.PENDING)
    first = reduce(LocalStore.of([*spus, topic]), modified(topic, topic))[0]
    assert isinstance(first, KvUpdateStatus) and isinstance(first.status, TopicStatus)
    for replicas in first.status.replica_map.values():
        assert len({spu // 2 for spu in replicas}) == 2
    ignoring = make_topic("flat", 4, 2, resolution=R.PENDING, ignore_rack_assignment=True)
    flat = reduce(LocalStore.of([*spus, ignoring]), modified(ignoring, ignoring))[0]
    assert isinstance(flat, KvUpdateStatus) and isinstance(flat.status, TopicStatus)
    assert any(len({s // 2 for s in r}) == 1 for r in flat.status.replica_map.values())


def test_partitions_carry_topic_settings() -> None:
    topic = make_topic("t", 1, 2, resolution=R.PENDING, retention_secs=60,
                       min_in_sync_replicas=2, unclean_leader_election=True)  # fmt: skip
    create = reduce(LocalStore.of([*SPUS, topic]), modified(topic, topic))[1]
    assert isinstance(create, KvCreate) and isinstance(create.obj, Partition)
    spec = create.obj.spec
    assert (spec.retention_secs, spec.min_in_sync_replicas, spec.unclean_leader_election) == (
        60,
        2,
        True,
    )
    assert create.obj.metadata.parent is not None
    assert create.obj.metadata.parent.name == "t"


# --- reconcile and idempotency ----------------------------------------------------------


def test_reconcile_recreates_missing_partitions_only() -> None:
    store = LocalStore.of([*SPUS, T_DONE, P0])
    missing = Partition.new("orders", 1, PartitionSpec.for_replicas(T_DONE.spec, (1,)))
    assert reduce(store, Reconcile()) == [KvCreate(missing)]
    assert reduce(LocalStore.of([*SPUS, T_DONE, P0, P1]), Reconcile()) == []


def test_topic_event_does_not_repeat_creates_in_flight() -> None:
    # Right after provisioning, the topic's own status write comes back before the
    # partitions exist: the controller must not create them a second time.
    assert reduce(LocalStore.of([*SPUS, T_DONE]), modified(T_PENDING, T_DONE)) == []


def test_whole_workflow_reaches_a_fixed_point_and_replays_to_nothing() -> None:
    cluster = Cluster(*SPUS)
    topic = make_topic("events", 6, 3)
    emitted = cluster.run(cluster.put(topic))
    final = cluster.store.topic("events")
    assert final is not None
    assert final.status.resolution is R.PROVISIONED
    assert sorted(final.status.replica_map) == list(range(6))
    parts = cluster.store.partitions_of("events")
    assert [p.index for p in parts] == list(range(6))
    assert all(p.status.resolution is PartitionResolution.OFFLINE for p in parts)
    assert all(p.status.leader == p.spec.replicas[0] for p in parts)
    assert sum(isinstance(a, CmAddPartition) for a in emitted) == 6
    # An SC restart re-lists everything: replaying every object as ADDED, and a
    # reconcile sweep, write nothing to the KV store.
    replay = [added(obj) for kind in ("Spu", "Topic", "Partition")
              for obj in cluster.store.objects(kind)]  # fmt: skip
    again = cluster.run(*replay, Reconcile())
    assert kv_actions(again) == []
    assert sum(isinstance(a, CmAddPartition) for a in again) == 6  # the new CM needs them


# --- the create api's SPU check (policy.missing_spus) -----------------------------------

Missing = InsufficientSpus | InvalidAssignment | None
MISSING_ROWS: list[tuple[str, list[KvObject[Any, Any]], Topic, Missing]] = [
    ("factor = SPUs: fits", SPUS, make_topic("t", 3, 3), None),
    ("factor > SPUs: short", SPUS, make_topic("t", 1, 5), InsufficientSpus(needed=5, available=3)),
    ("no SPU at all: short", [], make_topic("t"), InsufficientSpus(needed=1, available=0)),
    # Registered SPUs count whatever their status, as for the assignment itself.
    ("offline SPUs count", [make_spu(0, SpuResolution.OFFLINE)], make_topic("t"), None),
    ("manual map on registered SPUs: fits", SPUS, M_PENDING, None),
    ("manual map naming SPU 9: invalid", SPUS, M_INIT, InvalidAssignment(UNKNOWN)),
    ("manual map, SPU 9 registered: fits", [*SPUS, SPU9], M_INIT, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("objects", "topic", "expected"),
    [r[1:] for r in MISSING_ROWS],
    ids=[r[0] for r in MISSING_ROWS],
)
def test_missing_spus(
    objects: list[KvObject[Any, Any]],
    topic: Topic,
    expected: Missing,
) -> None:
    assert missing_spus(topic, LocalStore.of(objects)) == expected


def test_short_reason_is_singular_for_one_spu() -> None:
    assert InsufficientSpus(1, 0).reason == "replication factor 1 needs 1 SPU, 0 registered"
    assert InsufficientSpus(5, 3).reason == "replication factor 5 needs 5 SPUs, 3 registered"
