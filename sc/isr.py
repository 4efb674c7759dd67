"""The in-sync set the store records, which elections trust: when a leader's shrink is in it.

A leader drops a lagging follower from its in-sync set only once the SC accepted the
smaller set (Kafka's AlterPartition); from then on it commits records that follower
lacks. Elections pick among the replicas the *store* lists in sync, so the SC accepts a
shrink only after the store records it: otherwise an SC that crashed (or a standby that
took over) between the answer and the write would elect from the older, larger set and
could choose the follower that never received those committed records.
"""

from __future__ import annotations

from spark_stream.models import PartitionStatus

__all__ = ["in_sync_ids", "unrecorded_removals"]


def in_sync_ids(status: PartitionStatus) -> frozenset[int]:
    """The SPU ids ``status`` lists in sync."""
    return frozenset(replica.spu_id for replica in status.lrs if replica.in_sync)


def unrecorded_removals(
    stored: PartitionStatus | None, reported: PartitionStatus
) -> frozenset[int]:
    """Replicas ``reported`` leaves out of the in-sync set that ``stored`` still lists in sync.

    Empty when the report shrinks nothing the store holds (a growth, an unchanged set,
    a partition the store never heard from, or one it no longer has), or once the store
    records the shrink.
    """
    if stored is None:
        return frozenset()
    return in_sync_ids(stored) - in_sync_ids(reported)
