"""What one assignment push means for the partitions a group member holds (pure).

A push (``GroupAssignment``) carries the member's whole assignment (``assigned``: each
partition with its grant epoch) and the grants it must give back (``revoke``). The
member (``_group_member.GroupMembership._apply``) compares that with its pumps: a held
partition gone without a revoke, or granted again under another grant epoch (someone
else may have held it meanwhile), is lost; a revoked one it holds is handed back after
``on_revoke`` and a commit; each assigned partition is then kept, resumed (a revoke the
SC cancelled) or started anew. These functions make those decisions; the member does the
I/O. No asyncio here: the pumps are only read.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from spark_stream.client.consumer._group_parts import Pump, TopicPartition
from spark_stream.protocol import control as c

__all__ = [
    "GrantAction",
    "grant_action",
    "held_revoked",
    "lost_partitions",
    "push_grants",
    "tp_list",
]


def tp_list(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """Partitions in the wire form of the group requests (``owned``, a release), sorted."""
    return [{"topic": t, "partition": p} for t, p in sorted(tps)]


def push_grants(
    push: c.GroupAssignment,
) -> tuple[dict[TopicPartition, int], list[TopicPartition]]:
    """A push's assignment (partition -> grant epoch) and its revokes, in push order."""
    assigned = {(g["topic"], g["partition"]): int(g["grantEpoch"]) for g in push.assigned}
    revoke = [(g["topic"], g["partition"]) for g in push.revoke]
    return assigned, revoke


def lost_partitions(
    pumps: Mapping[TopicPartition, Pump],
    assigned: Mapping[TopicPartition, int],
    revoke: Collection[TopicPartition],
) -> list[TopicPartition]:
    """The held partitions this push takes without a revoke (no commit, ``on_lost``):
    absent from both lists, or assigned under another grant epoch than the pump's. In
    the pumps' order."""
    return [
        tp
        for tp, pump in pumps.items()
        if assigned.get(tp, pump.grant_epoch) != pump.grant_epoch
        or (tp not in assigned and tp not in revoke)
    ]


def held_revoked(
    pumps: Mapping[TopicPartition, Pump], revoke: Iterable[TopicPartition]
) -> list[TopicPartition]:
    """The revoked partitions the member holds (it hands these back), sorted."""
    return sorted(tp for tp in revoke if tp in pumps)


class GrantAction(enum.Enum):
    """What the member does with one assigned partition after the revokes."""

    KEEP = "keep"  # its pump reads under this grant already
    RESUME = "resume"  # a revoke the SC cancelled: hand out again from the position
    START = "start"  # a new grant, a new grant epoch, or a pump that ended (fenced, failed)


def grant_action(pump: Pump | None, grant_epoch: int) -> GrantAction:
    """The action for an assigned partition (grant epoch ``grant_epoch``) whose pump is
    ``pump`` (None: not held)."""
    if pump is not None and pump.revoking and pump.grant_epoch == grant_epoch:
        return GrantAction.RESUME
    if pump is None or pump.grant_epoch != grant_epoch or pump.done:
        return GrantAction.START
    return GrantAction.KEEP
