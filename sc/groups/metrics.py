"""Counters the group coordinator keeps per group, for operators (issue 11, "metrics").

There is no metrics facility yet (issue 14 adds a Prometheus exporter): the counters live
here, in memory (they restart at 0 with the SC), and ``fluvio consumer-group describe
--state -O json`` shows them. ``PROMETHEUS`` names the series the exporter will use, so
the two stay one list. Pure bookkeeping; the coordinator calls in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_stream.models import ConsumerGroupStatus

__all__ = ["GroupMetrics", "PROMETHEUS"]

#: Field of ``GroupMetrics.to_dict`` -> the Prometheus series (label ``group``).
PROMETHEUS: dict[str, str] = {
    "members": "fluvio_group_members",
    "rebalances": "fluvio_group_rebalances_total",
    "reassignments": "fluvio_group_reassignments_total",
    "reassignMsLast": "fluvio_group_reassign_ms_last",
    "reassignMsMax": "fluvio_group_reassign_ms_max",
    "fencedCommits": "fluvio_group_fenced_commits_total",
    "gateWaitTimeouts": "fluvio_group_gate_wait_timeouts_total",
    # Reported by the SPUs (``GateTable.group_rejections``), summed over them here; the
    # exporter reads it per SPU with a ``reason`` label (``not_ready``, ``fenced``).
    "gateRejections": "fluvio_spu_gate_rejections_total",
}


@dataclass
class GroupMetrics:
    """One group's counters since the SC started.

    Attributes:
        rebalances: plans published with a new generation (the grants changed).
        reassignments: partitions granted to a member after they lost their holder
            (a revoke, a leave, an expiry), each timed in ``reassign_ms_*``.
        reassign_ms_last: the last such partition's time from losing its holder (the
            revoke or departure published) to the grant pushed to the next one.
        reassign_ms_max: the longest of those.
        fenced_commits: committed partitions the commit fence refused.
        gate_wait_timeouts: grant pushes sent before the leaders reported holding the
            gates (200 ms bound; the member then retries on ``GateNotReadyError``).
    """

    rebalances: int = 0
    reassignments: int = 0
    reassign_ms_last: float | None = None
    reassign_ms_max: float | None = None
    fenced_commits: int = 0
    gate_wait_timeouts: int = 0
    _unheld: dict[tuple[str, int], float] = field(default_factory=dict, repr=False)

    def lost_holder(self, partitions: set[tuple[str, int]], now: float) -> None:
        """These partitions lost their holder (or started being revoked) at ``now``."""
        for tp in partitions:
            self._unheld.setdefault(tp, now)

    def forget(self, partitions: set[tuple[str, int]]) -> None:
        """These partitions no longer wait for a holder (deleted, or kept)."""
        for tp in partitions:
            self._unheld.pop(tp, None)

    def published(
        self,
        old: ConsumerGroupStatus,
        new: ConsumerGroupStatus,
        partitions: Mapping[str, int],
        now: float,
    ) -> None:
        """A plan was published at ``now``: count a rebalance, and time the partitions
        that lost their holder (``partitions``: each topic's partition count now).

        A partition is unheld when it left the plan, is being revoked, or passed to
        another member (its holder died); it stops waiting when it was deleted (past
        its topic's count) or kept its holder.
        """
        if new.generation != old.generation:
            self.rebalances += 1
        held = {g.tp: g.member_id for g in new.assignment if not g.revoking}
        before = {g.tp: g.member_id for g in old.assignment}
        lost = {tp for tp in before if tp not in held}
        lost |= {g.tp for g in new.assignment if g.revoking}
        lost |= {tp for tp, m in held.items() if before.get(tp, m) != m}  # a dead holder
        self.forget({tp for tp in lost if tp[1] >= partitions.get(tp[0], 0)})
        self.forget({tp for tp, m in held.items() if before.get(tp) == m})
        self.lost_holder({tp for tp in lost if tp[1] < partitions.get(tp[0], 0)}, now)

    def granted(self, partitions: set[tuple[str, int]], now: float) -> None:
        """A member was pushed these partitions at ``now``."""
        for tp in partitions:
            since = self._unheld.pop(tp, None)
            if since is None:
                continue
            ms = (now - since) * 1000
            self.reassignments += 1
            self.reassign_ms_last = ms
            longest = self.reassign_ms_max
            self.reassign_ms_max = ms if longest is None else max(ms, longest)

    def to_dict(self, members: int) -> dict[str, Any]:
        """The counters as wire/JSON fields (``members``: the group's member count now)."""
        return {
            "members": members,
            "rebalances": self.rebalances,
            "reassignments": self.reassignments,
            "reassignMsLast": _ms(self.reassign_ms_last),
            "reassignMsMax": _ms(self.reassign_ms_max),
            "fencedCommits": self.fenced_commits,
            "gateWaitTimeouts": self.gate_wait_timeouts,
        }


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
