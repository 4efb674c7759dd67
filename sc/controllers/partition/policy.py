"""Partition policy: what the SC knows about replicas, and how it picks a leader.

The leader's last live replica status (``status.lrs``) says, per replica, its LEO and
whether it was in sync. A partition whose leader never reported (empty ``lrs``) holds
no committed record anywhere, so every replica counts as in sync: any may lead.
"""

from __future__ import annotations

from collections.abc import Collection

from sc.election import ReplicaStanding, elect_leader
from spark_stream.models import Partition, PartitionResolution, PartitionStatus

__all__ = ["standings", "elect", "leader_of", "with_leader", "offline", "has_live_leader"]


def standings(partition: Partition) -> dict[int, ReplicaStanding]:
    """Each replica's standing from the partition's last reported live replica status."""
    status = partition.status
    if not status.lrs:
        return {spu: ReplicaStanding(spu, -1, True) for spu in partition.spec.replicas}
    return {
        rep.spu_id: ReplicaStanding(rep.spu_id, rep.leo, rep.in_sync, rep.damaged)
        for rep in status.lrs
    }


def leader_of(partition: Partition) -> int:
    """The partition's current leader: the status' one, else the spec's initial leader."""
    leader = partition.status.leader
    return partition.spec.initial_leader if leader is None else leader


def has_live_leader(partition: Partition, online: Collection[int]) -> bool:
    """Whether the partition's leader is an online SPU."""
    return leader_of(partition) in online


def elect(
    partition: Partition, online: Collection[int], exclude: Collection[int] = ()
) -> int | None:
    """The partition's new leader among ``online`` SPUs, honouring unclean election."""
    return elect_leader(
        partition.spec.replicas,
        standings(partition),
        online,
        unclean=partition.spec.unclean_leader_election,
        exclude=exclude,
    )


def with_leader(partition: Partition, leader: int) -> PartitionStatus:
    """Status after the SC chose ``leader``: ``Online`` under that leader, at the next
    leader epoch.

    Every election bumps ``leader_epoch`` (the SC elects only a leader other than the
    current one), so a deposed leader's epoch is older than its successor's and a fetch
    carrying the old epoch is fenced. The live replica list is kept until the new
    leader's first report replaces it.
    """
    update = {
        "leader": leader,
        "leader_epoch": partition.status.leader_epoch + 1,
        "resolution": PartitionResolution.ONLINE,
        "reason": None,
    }
    return partition.status.model_copy(update=update)


def offline(partition: Partition, reason: str) -> PartitionStatus:
    """Status when no replica may lead: ``Offline``, the old leader kept for its return."""
    update = {
        "leader": leader_of(partition),
        "resolution": PartitionResolution.OFFLINE,
        "reason": reason,
    }
    return partition.status.model_copy(update=update)
