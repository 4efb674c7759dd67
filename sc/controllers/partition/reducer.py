"""Partition controller: partition specs to SPUs, leader election, live replica status.

Theory of operation (seed ``003``, "Partition Controller"):

- **Add Partition** -> ``CmAddPartition`` (the replicas' SPUs get the spec) and, for a
  new partition (``Init``), status ``Offline`` under its initial leader; the leader's
  first live replica status (LRS) turns it ``Online``. A partition re-listed after an
  SC restart keeps its status: only the connection manager is told again.
- **Modify Partition** (spec changed) -> ``CmUpdatePartition``. **Delete Partition** ->
  ``CmDeletePartition`` with the deleted object's uid (every SPU deletes that storage).
- **SPU Online -> Offline** -> for every partition it led: elect a new leader among the
  online replicas (``sc.election``: in sync, highest LEO; unclean only if the topic
  allows). Found -> status ``Online`` under the new leader at the next leader epoch (KV)
  and ``CmLeaderChange`` with that epoch to the replicas. None -> status ``Offline``
  (KV), the old leader and its epoch kept.
- **SPU Offline -> Online** -> for every ``Offline`` partition that has the SPU as a
  replica, is not led by it (a returning leader resumes by its own LRS) and has no live
  leader: if the SPU is eligible, it leads (same two actions as above).
- **SPU deleted** -> as Online -> Offline: its partitions get a new leader.
- **LRS change** -> status ``Online`` with the reported leader, replicas, LEO and HW,
  the leader epoch kept (only an election changes it). A report from an SPU that is not
  the partition's leader is dropped: that fences a deposed leader that comes back and
  still believes it leads. A leader that reports **its own replica damaged** (a frame
  of its log failed its crc) is replaced at once when a healthy in-sync replica is
  online (same two actions as an election); otherwise it keeps leading, damaged.
- **Reconcile** -> the same rules as a sweep: ``Init`` partitions go ``Offline``,
  partitions whose leader is not online get an election.
- **ElectPreferred** -> the partitions ``preferred.plan_preferred`` picks (online,
  preferred replica online and in sync, its SPU's imbalance above the threshold, at most
  ``limit``) are elected to their preferred replica: same two actions as an election.

A status equal to the current one is never written, so replaying an event on a
snapshot that already reflects it adds no KV action.
"""

from __future__ import annotations

from sc.actions import (
    Action,
    CmAddPartition,
    CmDeletePartition,
    CmLeaderChange,
    CmUpdatePartition,
    KvUpdateStatus,
)
from sc.controllers.events import Change, ControllerEvent, ElectPreferred, LrsUpdate, Reconcile
from sc.controllers.partition.policy import elect, has_live_leader, leader_of, offline, with_leader
from sc.controllers.partition.preferred import plan_preferred, preferred_leader
from sc.kv.store import ChangeType
from sc.local_store import StoreView
from spark_stream.models import (
    Partition,
    PartitionResolution,
    PartitionStatus,
    Spu,
)

__all__ = ["reduce"]

_NO_LEADER = "no in-sync replica is online"


def reduce(store: StoreView, event: ControllerEvent) -> list[Action]:
    """Actions for one event; events about other objects yield none."""
    match event:
        case Change(kind=Partition.kind):
            return _on_partition_change(event)
        case Change(kind=Spu.kind, type=ChangeType.MODIFIED, old=Spu() as old, new=Spu() as new):
            if old.status.is_online and not new.status.is_online:
                return _on_spu_offline(store, new.spu_id)
            if new.status.is_online and not old.status.is_online:
                return _on_spu_online(store, new.spu_id)
        case Change(kind=Spu.kind, type=ChangeType.DELETED, old=Spu() as old):
            return _on_spu_offline(store, old.spu_id)  # a deleted SPU leads nothing
        case LrsUpdate():
            return _on_lrs(store, event)
        case Reconcile():
            return _reconcile(store)
        case ElectPreferred():
            return _elect_preferred(store, event)
    return []


def _on_partition_change(change: Change) -> list[Action]:
    if change.type is ChangeType.DELETED and isinstance(change.old, Partition):
        deleted = change.old
        return [CmDeletePartition(change.name, deleted.spec.replicas, deleted.uid)]
    new = change.new
    if not isinstance(new, Partition):
        return []
    if change.type is ChangeType.ADDED:
        return [CmAddPartition(new), *_initial_status(new)]
    old = change.old
    if isinstance(old, Partition) and old.spec == new.spec:
        return []
    return [CmUpdatePartition(new)]


def _initial_status(partition: Partition) -> list[Action]:
    if partition.status.resolution is not PartitionResolution.INIT:
        return []
    status = partition.status.model_copy(
        update={
            "resolution": PartitionResolution.OFFLINE,
            "leader": partition.spec.initial_leader,
        }
    )
    return [KvUpdateStatus.of(partition, status)]


def _write(partition: Partition, status: PartitionStatus) -> list[Action]:
    if status == partition.status:
        return []
    return [KvUpdateStatus.of(partition, status)]


def _elect_away(partition: Partition, online: frozenset[int], lost: int) -> list[Action]:
    """Replace the lost leader ``lost``, or mark the partition offline."""
    leader = elect(partition, online, exclude={lost})
    if leader is None:
        return _write(partition, offline(partition, _NO_LEADER))
    return _elected(partition, leader)


def _elected(partition: Partition, leader: int) -> list[Action]:
    """The status under the elected ``leader`` (next epoch) and its push to the replicas."""
    status = with_leader(partition, leader)
    change = CmLeaderChange(partition.name, leader, partition.spec.replicas, status.leader_epoch)
    return [*_write(partition, status), change]


def _on_spu_offline(store: StoreView, spu_id: int) -> list[Action]:
    online = store.online_spu_ids() - {spu_id}
    actions: list[Action] = []
    for partition in store.partitions():
        if leader_of(partition) != spu_id:
            continue
        if partition.status.resolution is PartitionResolution.OFFLINE:
            continue  # already leaderless; it waits for an eligible replica
        actions += _elect_away(partition, online, spu_id)
    return actions


def _take_over(partition: Partition, online: frozenset[int]) -> list[Action]:
    """Give a leaderless partition the best eligible online replica, if there is one."""
    if has_live_leader(partition, online):
        return []  # its leader is up and about to report
    leader = elect(partition, online)
    if leader is None:
        return []
    return _elected(partition, leader)


def _on_spu_online(store: StoreView, spu_id: int) -> list[Action]:
    online = store.online_spu_ids() | {spu_id}
    actions: list[Action] = []
    for partition in store.partitions():
        if partition.status.resolution is not PartitionResolution.OFFLINE:
            continue
        if spu_id not in partition.spec.replicas or leader_of(partition) == spu_id:
            continue
        actions += _take_over(partition, online)
    return actions


def _on_lrs(store: StoreView, report: LrsUpdate) -> list[Action]:
    partition = store.partition(report.partition)
    if partition is None or report.leader != leader_of(partition):
        return []
    status = PartitionStatus(
        resolution=PartitionResolution.ONLINE,
        leader=report.leader,
        leader_epoch=partition.status.leader_epoch,
        lrs=report.replicas,
        leo=report.leo,
        hw=report.hw,
        log_start_offset=report.log_start_offset,
        size=report.size,
        tier=report.tier,
    )
    own = status.replica(report.leader)
    if own is not None and own.damaged:
        reported = partition.model_copy(update={"status": status})
        healthy = elect(reported, store.online_spu_ids(), exclude={report.leader})
        if healthy is not None:
            return _elected(reported, healthy)
    return _write(partition, status)


def _reconcile(store: StoreView) -> list[Action]:
    online = store.online_spu_ids()
    actions: list[Action] = []
    for partition in store.partitions():
        resolution = partition.status.resolution
        if resolution is PartitionResolution.INIT:
            actions += _initial_status(partition)
        elif resolution is PartitionResolution.OFFLINE:
            actions += _take_over(partition, online)
        elif not has_live_leader(partition, online):
            actions += _elect_away(partition, online, leader_of(partition))
    return actions


def _elect_preferred(store: StoreView, event: ElectPreferred) -> list[Action]:
    moves = plan_preferred(
        store.partitions(),
        store.online_spu_ids(),
        limit=event.limit,
        imbalance_pct=event.imbalance_pct,
        topic=event.topic,
    )
    actions: list[Action] = []
    for partition in moves:
        actions += _elected(partition, preferred_leader(partition))
    return actions
