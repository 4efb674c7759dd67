"""Preferred leaders: which partitions a sweep hands back to their first replica.

Theory of operation (Kafka's ``auto.leader.rebalance.enable``):

- A partition's **preferred leader** is the first replica of its spec's replica list
  (the assignment spreads first replicas evenly over the SPUs). A failover moves
  leadership away from a dead SPU; nothing moves it back when the SPU returns, so
  without this sweep the survivors lead everything for good.
- A partition is **movable** when it is ``Online``, led by another SPU, and its
  preferred replica is online, listed in sync by the stored live replica status (the
  in-sync set elections trust, ``sc.isr``) and not damaged: exactly the conditions
  under which a clean election could choose it, so a move loses no committed record.
- **Imbalance** of an SPU: of the partitions it is preferred for, the share it does not
  lead. Only SPUs whose imbalance is above the threshold get partitions back (a
  threshold of 0 moves every movable partition: the admin's ``elect-preferred``).
- At most ``limit`` partitions move per sweep (in name order), so a big cluster does
  not change every leader at once; the next sweep takes the rest.

Pure functions; the partition reducer turns each move into an election (next leader
epoch, ``CmLeaderChange``), the same path as a failover.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable

from sc.controllers.partition.policy import leader_of, standings
from sc.election import is_eligible
from spark_stream.models import Partition, PartitionResolution

__all__ = ["preferred_leader", "is_movable", "imbalance", "plan_preferred"]


def preferred_leader(partition: Partition) -> int:
    """The partition's preferred leader: the first replica of its spec."""
    return partition.spec.replicas[0]


def is_movable(partition: Partition, online: Collection[int]) -> bool:
    """Whether leadership may move to the preferred replica now (see the module doc)."""
    preferred = preferred_leader(partition)
    if partition.status.resolution is not PartitionResolution.ONLINE:
        return False
    if leader_of(partition) == preferred or preferred not in online:
        return False
    return is_eligible(preferred, partition.spec.replicas, standings(partition))


def imbalance(partitions: Iterable[Partition]) -> dict[int, float]:
    """Per SPU, the share of the partitions it is preferred for that it does not lead."""
    preferred: Counter[int] = Counter()
    not_led: Counter[int] = Counter()
    for partition in partitions:
        spu = preferred_leader(partition)
        preferred[spu] += 1
        if leader_of(partition) != spu:
            not_led[spu] += 1
    return {spu: not_led[spu] / count for spu, count in preferred.items()}


def plan_preferred(
    partitions: Iterable[Partition],
    online: Collection[int],
    *,
    limit: int,
    imbalance_pct: float = 0.0,
    topic: str | None = None,
) -> list[Partition]:
    """The partitions whose leadership a sweep moves to their preferred replica.

    Args:
        partitions: every partition of the store.
        online: ids of the SPUs currently online.
        limit: most partitions moved by this sweep.
        imbalance_pct: move only partitions of SPUs whose imbalance is above this
            percentage (0: any imbalance).
        topic: only this topic's partitions (None: every topic).

    Returns:
        The partitions to move, in name order, at most ``limit`` of them.
    """
    scope = [p for p in partitions if topic is None or p.topic == topic]
    ratios = imbalance(scope)
    threshold = imbalance_pct / 100.0
    moves = [p for p in scope if ratios[preferred_leader(p)] > threshold and is_movable(p, online)]
    moves.sort(key=lambda p: (p.topic, p.index))
    return moves[: max(limit, 0)]
