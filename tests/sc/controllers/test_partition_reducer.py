"""Partition controller: one row per bullet of the seed's "Partition Controller" section."""

from __future__ import annotations

from typing import Any

import pytest

from sc.actions import (
    Action,
    CmAddPartition,
    CmDeletePartition,
    CmLeaderChange,
    CmUpdatePartition,
    KvUpdateStatus,
)
from sc.controllers import LrsUpdate, Reconcile
from sc.controllers.partition import reduce
from sc.local_store import LocalStore
from spark_stream.models import (
    KvObject,
    Partition,
    PartitionResolution,
    PartitionStatus,
    ReplicaStatus,
)
from tests.sc.controllers.helpers import (
    OFFLINE,
    ONLINE,
    Cluster,
    added,
    deleted,
    kv_actions,
    make_partition,
    make_spu,
    make_topic,
    modified,
)

P = PartitionResolution
REPS = (1, 2, 3)
UP = [make_spu(1), make_spu(2), make_spu(3)]
S1_DOWN = [make_spu(1, OFFLINE, rev=2), make_spu(2), make_spu(3)]
S1_GOING_DOWN = modified(make_spu(1), make_spu(1, OFFLINE, rev=2))
S2_BACK = [make_spu(1, OFFLINE), make_spu(2, rev=2), make_spu(3, OFFLINE)]
S2_COMING_BACK = modified(make_spu(2, OFFLINE), make_spu(2, rev=2))

# Partition led by 1; the leader's last LRS: 2 in sync at LEO 8, 3 in sync at LEO 9.
LED = make_partition("t", 0, REPS, lrs=[(1, 10, True), (2, 8, True), (3, 9, True)])
# Partition led by 1 where only 1 was in sync.
LONE = make_partition("t", 1, REPS, lrs=[(1, 10, True), (2, 4, False), (3, 6, False)])
LONE_UNCLEAN = make_partition(
    "t", 1, REPS, lrs=[(1, 10, True), (2, 4, False), (3, 6, False)], unclean=True
)
FOLLOWED = make_partition("t", 2, (2, 1, 3), lrs=[(2, 5, True), (1, 5, True), (3, 5, True)])
NEW = make_partition("t", 3, REPS, resolution=P.INIT)
# Offline partitions whose leader 1 is down, waiting for an eligible replica.
WAITING = make_partition(
    "t", 4, REPS, resolution=P.OFFLINE, leader=1, lrs=[(1, 10, True), (2, 10, True), (3, 2, False)]
)
WAITING_OUT_OF_SYNC = make_partition(
    "t", 5, REPS, resolution=P.OFFLINE, leader=1, lrs=[(1, 10, True), (2, 3, False)]
)
WAITING_FOR_2 = make_partition("t", 6, REPS, resolution=P.OFFLINE, leader=2, lrs=[(2, 10, True)])


def _status(p: Partition, **update: Any) -> KvUpdateStatus:
    return KvUpdateStatus("Partition", p.name, p.status.model_copy(update=update), p.revision)


def _elected(p: Partition, leader: int) -> list[Action]:
    """An election: Online under ``leader`` at the next leader epoch, pushed with it."""
    epoch = p.status.leader_epoch + 1
    return [
        _status(p, leader=leader, leader_epoch=epoch, resolution=P.ONLINE, reason=None),
        CmLeaderChange(p.name, leader, p.spec.replicas, epoch),
    ]


def _at_epoch(p: Partition, epoch: int) -> Partition:
    return p.with_status(p.status.model_copy(update={"leader_epoch": epoch}))


def _lrs(p: Partition, leader: int, leo: int = 12, hw: int = 11) -> LrsUpdate:
    reps = (ReplicaStatus(spu_id=leader, leo=leo, hw=hw), ReplicaStatus(spu_id=2, leo=hw, hw=hw))
    return LrsUpdate(p.name, leader, reps, leo, hw, 0, size=4096)


def _damaged_lrs(p: Partition, *, follower_in_sync: bool = True) -> LrsUpdate:
    """The leader 1 reports its own replica damaged (bit rot found by its scrub)."""
    reps = (
        ReplicaStatus(spu_id=1, leo=12, hw=11, damaged=True, repair="damaged: crc"),
        ReplicaStatus(spu_id=2, leo=11, hw=11, in_sync=follower_in_sync),
        ReplicaStatus(spu_id=3, leo=12, hw=11, in_sync=follower_in_sync),
    )
    return LrsUpdate(p.name, 1, reps, 12, 11, 0, size=4096)


def _damaged_status(p: Partition, update: LrsUpdate, **changes: Any) -> PartitionStatus:
    return PartitionStatus(
        resolution=P.ONLINE,
        leader=1,
        leader_epoch=p.status.leader_epoch,
        lrs=update.replicas,
        leo=12,
        hw=11,
        log_start_offset=0,
        size=4096,
    ).model_copy(update=changes)


LED_ONLINE_AGAIN = PartitionStatus(
    resolution=P.ONLINE,
    leader=1,
    lrs=_lrs(LED, 1).replicas,
    leo=12,
    hw=11,
    log_start_offset=0,
    size=4096,  # the leader's log size reaches the partition status
)
NO_LEADER = "no in-sync replica is online"
LED_AT_4 = _at_epoch(LED, 4)
LONE_AT_4 = _at_epoch(LONE, 4)
WAITING_AT_4 = _at_epoch(WAITING, 4)
LED_MOVED = LED.with_spec(LED.spec.model_copy(update={"replicas": (1, 2, 3, 4)})).with_revision(2)
LED_STATUS_ONLY = LED.with_status(LED_ONLINE_AGAIN).with_revision(2)

ROWS: list[tuple[str, list[KvObject[Any, Any]], Any, list[Action]]] = [
    # seed: "Add Partition -> add to the Connection Manager + status Offline"
    ("add partition", [*UP, NEW], added(NEW),
     [CmAddPartition(NEW), _status(NEW, resolution=P.OFFLINE, leader=1, leader_epoch=0)]),
    ("re-listed partition keeps its status", [*UP, LED], added(LED), [CmAddPartition(LED)]),
    # seed: "Modify Partition -> update Partition spec in the Connection Manager"
    ("modify partition spec", [*UP, LED_MOVED], modified(LED, LED_MOVED),
     [CmUpdatePartition(LED_MOVED)]),
    ("status-only change: nothing", [*UP, LED_STATUS_ONLY], modified(LED, LED_STATUS_ONLY), []),
    # seed: "Delete Partition -> delete Partition spec from the Connection Manager"
    # ... with the deleted object's uid, so every SPU can delete that incarnation's storage
    ("delete partition", [*UP], deleted(LED.with_uid("u1")),
     [CmDeletePartition(LED.name, REPS, "u1")]),
    # seed: "SPU Online -> Offline: leader computed -> update the leader (CM)"
    ("leader offline: in-sync replica with highest LEO leads", [*S1_DOWN, LED], S1_GOING_DOWN,
     _elected(LED, 3)),
    # seed: "no suitable leader -> status Offline in the KV store"
    ("leader offline: no in-sync replica, Offline", [*S1_DOWN, LONE], S1_GOING_DOWN,
     [_status(LONE, resolution=P.OFFLINE, leader=1, reason=NO_LEADER)]),
    ("leader offline: unclean topic takes the best out-of-sync replica", [*S1_DOWN, LONE_UNCLEAN],
     S1_GOING_DOWN, _elected(LONE_UNCLEAN, 3)),
    ("leader SPU deleted: elected away as if offline", [make_spu(2), make_spu(3), LED],
     deleted(make_spu(1)), _elected(LED, 3)),
    ("follower offline: nothing", [*S1_DOWN, FOLLOWED], S1_GOING_DOWN, []),
    ("already Offline: nothing", [*S1_DOWN, WAITING], S1_GOING_DOWN, []),
    ("fresh partition whose initial leader drops: any replica may lead", [*S1_DOWN, NEW],
     S1_GOING_DOWN, _elected(NEW, 2)),
    # seed: "SPU Offline -> Online: Offline partitions where it is eligible get it as leader"
    ("SPU back, eligible: it leads", [*S2_BACK, WAITING], S2_COMING_BACK, _elected(WAITING, 2)),
    # seed: "SPU not suitable to be leader: partition unchanged"
    ("SPU back, not in sync: unchanged", [*S2_BACK, WAITING_OUT_OF_SYNC], S2_COMING_BACK, []),
    ("SPU back, it is the leader: its own LRS turns it Online", [*S2_BACK, WAITING_FOR_2],
     S2_COMING_BACK, []),
    ("SPU back, partition not Offline: nothing", [*S2_BACK, FOLLOWED], S2_COMING_BACK, []),
    # seed: "Change LRS -> status Online, leader and replicas from the LRS"
    ("LRS from the leader: Online", [*UP, LED], _lrs(LED, 1),
     [KvUpdateStatus("Partition", LED.name, LED_ONLINE_AGAIN, LED.revision)]),
    ("LRS turns an Offline partition Online", [*S2_BACK, WAITING_FOR_2], _lrs(WAITING_FOR_2, 2),
     [KvUpdateStatus("Partition", WAITING_FOR_2.name, PartitionStatus(
         resolution=P.ONLINE, leader=2, lrs=_lrs(WAITING_FOR_2, 2).replicas, leo=12, hw=11,
         log_start_offset=0, size=4096), WAITING_FOR_2.revision)]),
    ("same LRS again: nothing", [*UP, LED_STATUS_ONLY], _lrs(LED, 1), []),
    ("LRS from a deposed leader: dropped", [*UP, LED], _lrs(LED, 2), []),
    ("LRS for an unknown partition: dropped", [*UP], _lrs(LED, 1), []),
    ("topic events are not ours", [*UP, LED], added(make_topic("t")), []),
    # leader epochs (KIP-320): every election bumps the epoch, nothing else changes it
    ("failover bumps the leader epoch", [*S1_DOWN, LED_AT_4], S1_GOING_DOWN,
     [_status(LED_AT_4, leader=3, leader_epoch=5, resolution=P.ONLINE, reason=None),
      CmLeaderChange(LED.name, 3, REPS, 5)]),
    ("SPU back and elected: the epoch bumps", [*S2_BACK, WAITING_AT_4], S2_COMING_BACK,
     [_status(WAITING_AT_4, leader=2, leader_epoch=5, resolution=P.ONLINE, reason=None),
      CmLeaderChange(WAITING.name, 2, REPS, 5)]),
    ("no leader: Offline keeps the epoch", [*S1_DOWN, LONE_AT_4], S1_GOING_DOWN,
     [_status(LONE_AT_4, resolution=P.OFFLINE, leader=1, leader_epoch=4, reason=NO_LEADER)]),
    ("LRS keeps the epoch", [*UP, LED_AT_4], _lrs(LED_AT_4, 1),
     [KvUpdateStatus("Partition", LED.name,
                     LED_ONLINE_AGAIN.model_copy(update={"leader_epoch": 4}), LED.revision)]),
    ("re-listed partition keeps its epoch", [*UP, LED_AT_4], added(LED_AT_4),
     [CmAddPartition(LED_AT_4)]),
    # bit rot: a leader reporting its own replica damaged hands over to a healthy one
    ("LRS: the leader's replica is damaged: the best healthy in-sync replica leads",
     [*UP, LED], _damaged_lrs(LED),
     [KvUpdateStatus("Partition", LED.name, _damaged_status(LED, _damaged_lrs(LED), leader=3,
                     leader_epoch=1), LED.revision), CmLeaderChange(LED.name, 3, REPS, 1)]),
    ("LRS: damaged leader, no healthy in-sync replica: it keeps leading, marked",
     [*UP, LED], _damaged_lrs(LED, follower_in_sync=False),
     [KvUpdateStatus("Partition", LED.name, _damaged_status(
         LED, _damaged_lrs(LED, follower_in_sync=False)), LED.revision)]),
    ("LRS: damaged leader, the healthy replicas offline: it keeps leading",
     [make_spu(1), make_spu(2, OFFLINE), make_spu(3, OFFLINE), LED], _damaged_lrs(LED),
     [KvUpdateStatus("Partition", LED.name, _damaged_status(LED, _damaged_lrs(LED)),
                     LED.revision)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("objects", "event", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_partition_reducer(
    objects: list[KvObject[Any, Any]], event: Any, expected: list[Action]
) -> None:
    assert reduce(LocalStore.of(objects), event) == expected


def test_spu_offline_elects_for_every_partition_it_led() -> None:
    second = make_partition("u", 0, (1, 3, 2), lrs=[(1, 7, True), (3, 7, True), (2, 7, True)])
    actions = reduce(LocalStore.of([*S1_DOWN, LED, LONE, second, FOLLOWED]), S1_GOING_DOWN)
    assert actions == [
        *_elected(LED, 3),
        _status(LONE, resolution=P.OFFLINE, leader=1, reason=NO_LEADER),
        *_elected(second, 3),  # tie on LEO: 3 is listed before 2
    ]


def test_reconcile_sweeps_init_and_leaderless_partitions() -> None:
    store = LocalStore.of([*S1_DOWN, NEW, LED, FOLLOWED, WAITING])
    assert reduce(store, Reconcile()) == [
        *_elected(LED, 3),
        _status(NEW, resolution=P.OFFLINE, leader=1),
        *_elected(WAITING, 2),
    ]


def test_reconcile_on_a_settled_snapshot_is_empty() -> None:
    assert reduce(LocalStore.of([*UP, LED, FOLLOWED]), Reconcile()) == []


def test_failover_and_return_end_to_end() -> None:
    # Leader 1 fails: 3 (highest LEO) takes over. 1 returns: it is a follower now and its
    # stale LRS is dropped. 3's LRS is accepted.
    cluster = Cluster(*UP, LED)
    cluster.run(cluster.set_spu(1, OFFLINE))
    led = cluster.store.partition(LED.name)
    assert led is not None
    assert (led.status.leader, led.status.resolution) == (3, P.ONLINE)
    cluster.run(cluster.set_spu(1, ONLINE))
    assert kv_actions(cluster.run(_lrs(LED, 1))) == []
    cluster.run(_lrs(LED, 3, leo=20, hw=20))
    led = cluster.store.partition(LED.name)
    assert led is not None
    assert (led.status.leader, led.status.hw) == (3, 20)
    # Everyone down but 1, which is out of sync in 3's report: the partition goes Offline.
    cluster.run(cluster.set_spu(2, OFFLINE))
    cluster.run(cluster.set_spu(3, OFFLINE))
    led = cluster.store.partition(LED.name)
    assert led is not None
    assert led.status.resolution is P.OFFLINE
    # 3 returns: as the recorded leader it resumes through its LRS.
    cluster.run(cluster.set_spu(3, ONLINE), _lrs(LED, 3, leo=20, hw=20))
    led = cluster.store.partition(LED.name)
    assert led is not None
    assert (led.status.leader, led.status.resolution) == (3, P.ONLINE)
    # One election in all (1 -> 3): 3's reports and its return kept epoch 1.
    assert led.status.leader_epoch == 1
