"""The live status a partition's leader reports to the SC, built once per change.

A leader's status (``LeaderController.status``) travels to the SC on every change and,
unchanged, with every heartbeat period's repeat, for every partition the SPU leads: a
thousand partitions rebuild a thousand pydantic models every period for nothing. The
status is a function of a few plain values (``StatusInputs``); ``LastStatus`` keeps the
one built last and hands it out again while the inputs are equal, so a repeat costs a
tuple comparison (and, being the same object, its encoded form is reused by the SC link).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spark_stream.models import PartitionResolution, PartitionStatus, ReplicaStatus
from spark_stream.protocol.control import LrsStatus, Replica
from spu.replication import FollowerProgress
from spu.storage.scrub import Damage

__all__ = ["LastStatus", "StatusInputs", "build_status", "status_inputs"]


@dataclass(frozen=True, slots=True)
class StatusInputs:
    """Everything a leader's live status depends on (compared field by field)."""

    spu_id: int
    replica: Replica
    hw: int
    leo: int
    reported: frozenset[int]
    damage: Damage | None
    follower_leos: tuple[tuple[int, int | None], ...]
    repairs: tuple[tuple[int, int], ...]
    log_start_offset: int
    size: int
    tier: str | None


def status_inputs(
    spu_id: int,
    replica: Replica,
    *,
    hw: int,
    leo: int,
    reported: frozenset[int],
    damage: Damage | None,
    progress: Mapping[int, FollowerProgress | None],
    repairs: Mapping[int, int],
    log_start_offset: int,
    size: int,
    tier: str | None,
) -> StatusInputs:
    """The inputs, with each follower's progress reduced to its LEO (``None``: offline)."""
    return StatusInputs(
        spu_id,
        replica,
        hw,
        leo,
        reported,
        damage,
        tuple((spu, None if p is None else p.leo) for spu, p in progress.items()),
        tuple(repairs.items()),
        log_start_offset,
        size,
        tier,
    )


def build_status(inputs: StatusInputs) -> LrsStatus:
    """The live replica status: the leader's own replica, then each follower's."""
    hw, leo, reported = inputs.hw, inputs.leo, inputs.reported
    follower_leos, repairs = dict(inputs.follower_leos), dict(inputs.repairs)
    lrs = []
    for spu in inputs.replica.replicas:
        if spu == inputs.spu_id:
            damage = inputs.damage
            lrs.append(
                ReplicaStatus(
                    spu_id=spu,
                    leo=leo,
                    hw=hw,
                    in_sync=damage is None,  # a damaged copy is out of sync, even here
                    damaged=damage is not None,
                    repair=None if damage is None else f"damaged: {damage.describe()}",
                )
            )
        elif spu in follower_leos:
            known = follower_leos[spu]
            f_leo = known if known is not None else -1
            in_sync = spu in reported
            cut = repairs.get(spu)
            repair = None
            if cut is not None:
                repair = f"{'repaired' if in_sync else 'repairing'} from offset {cut}"
            lrs.append(
                ReplicaStatus(
                    spu_id=spu,
                    leo=f_leo,
                    hw=min(hw, f_leo),
                    in_sync=in_sync,
                    damaged=cut is not None and not in_sync,
                    repair=repair,
                )
            )
    status = PartitionStatus(
        resolution=PartitionResolution.ONLINE,
        leader=inputs.spu_id,
        leader_epoch=inputs.replica.leader_epoch,
        lrs=tuple(lrs),
        leo=leo,
        hw=hw,
        log_start_offset=inputs.log_start_offset,
        size=inputs.size,
        tier=inputs.tier,
    )
    return LrsStatus(inputs.replica.name, status)


class LastStatus:
    """The status built last, handed out again while its inputs are unchanged."""

    __slots__ = ("_inputs", "_status")

    def __init__(self) -> None:
        self._inputs: StatusInputs | None = None
        self._status: LrsStatus | None = None

    def get(self, inputs: StatusInputs) -> LrsStatus:
        """The status for ``inputs``: the last one when they are equal, else a new one."""
        if self._status is None or inputs != self._inputs:
            self._inputs, self._status = inputs, build_status(inputs)
        return self._status
