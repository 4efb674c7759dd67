"""Leader election: who leads a partition once its leader is gone.

Theory of operation:

- The SC knows, per replica, what the last leader reported in its live replica status
  (LRS): the replica's log end offset (LEO) and whether it was in sync. In-sync
  replicas hold every committed record (the high watermark is the minimum LEO over the
  in-sync set), so any of them can lead without losing acknowledged data.
- **Clean election**: among the replicas that are online (and not excluded, e.g. the
  leader that just failed), pick the in-sync one with the highest LEO; ties go to the
  replica listed first in the partition's replica list (the assignment's preference).
- No in-sync replica online -> no leader: the partition goes ``Offline`` and waits for
  an eligible replica to come back (Offline -> Online when it does).
- A replica known **damaged** (a frame of its log failed its crc, not repaired yet) never
  leads, clean or unclean: it would serve readers a frame they cannot read.
- **Unclean election** only when the topic asks (``uncleanLeaderElection``): if no clean
  candidate exists, the online replica with the highest LEO leads even though it may
  lack committed records. Availability over durability, never by default.

Pure functions, no I/O; the partition controller turns the outcome into actions.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ReplicaStanding", "elect_leader", "is_eligible"]


@dataclass(frozen=True, slots=True)
class ReplicaStanding:
    """What the SC last heard about one replica.

    Attributes:
        spu: the SPU holding the replica.
        leo: its log end offset (-1: never reported).
        in_sync: whether the leader last counted it in the in-sync set.
        damaged: its log holds a frame that failed its crc and is not repaired yet.
    """

    spu: int
    leo: int = -1
    in_sync: bool = False
    damaged: bool = False


def _by_spu(
    standings: Mapping[int, ReplicaStanding] | Iterable[ReplicaStanding],
) -> Mapping[int, ReplicaStanding]:
    if isinstance(standings, Mapping):
        return standings
    return {s.spu: s for s in standings}


def elect_leader(
    replicas: Sequence[int],
    standings: Mapping[int, ReplicaStanding] | Iterable[ReplicaStanding],
    online: Collection[int],
    *,
    unclean: bool = False,
    exclude: Collection[int] = (),
) -> int | None:
    """Choose a partition's new leader, or ``None`` when no replica may lead.

    Args:
        replicas: the partition's replicas in preference order (the spec's list).
        standings: the last known state of each replica (missing: never reported,
            so not in sync and LEO -1).
        online: ids of the SPUs currently online.
        unclean: the topic allows an out-of-sync leader when no in-sync one is online.
        exclude: SPUs that may not lead (e.g. the leader that just went offline).

    Returns:
        The chosen SPU id; ``None`` means the partition has no eligible leader.
    """
    known = _by_spu(standings)
    ranked: list[tuple[int, int, ReplicaStanding]] = []
    for index, spu in enumerate(replicas):
        standing = known.get(spu) or ReplicaStanding(spu)
        if spu in online and spu not in exclude and not standing.damaged:
            ranked.append((index, spu, standing))
    clean = [entry for entry in ranked if entry[2].in_sync]
    pool = clean or (ranked if unclean else [])
    if not pool:
        return None
    # Highest LEO wins; on a tie the replica listed first (smallest index) wins.
    best = max(pool, key=lambda entry: (entry[2].leo, -entry[0]))
    return best[1]


def is_eligible(
    spu: int,
    replicas: Sequence[int],
    standings: Mapping[int, ReplicaStanding] | Iterable[ReplicaStanding],
    *,
    unclean: bool = False,
) -> bool:
    """Whether ``spu`` may lead the partition at all (ignoring who else is online).

    A replica may lead when it was in sync; with ``unclean``, any replica may; a
    damaged one never may.
    """
    if spu not in replicas:
        return False
    standing = _by_spu(standings).get(spu)
    if standing is not None and standing.damaged:
        return False
    if unclean:
        return True
    return standing is not None and standing.in_sync
