"""What an assignment push means for the partitions a member holds (``_group_assign``):
a row per rule of the member's ``_apply``."""

from __future__ import annotations

import pytest

from spark_stream.client.consumer._group_assign import (
    GrantAction,
    grant_action,
    held_revoked,
    lost_partitions,
    push_grants,
    tp_list,
)
from spark_stream.client.consumer._group_parts import Pump, TopicPartition
from spark_stream.protocol import control as c

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


def _pumps(**epochs: int) -> dict[TopicPartition, Pump]:
    """Pumps keyed ``a0=3`` -> ``("a", 0)`` under grant epoch 3."""
    out = {}
    for name, epoch in epochs.items():
        tp = (name[0], int(name[1:]))
        out[tp] = Pump(tp, epoch)
    return out


def test_push_grants_reads_assignment_and_revokes_in_push_order() -> None:
    push = c.GroupAssignment(
        generation=4,
        member_epoch=2,
        heartbeat_ms=100,
        session_ms=1000,
        assigned=[
            {"topic": "b", "partition": 0, "grantEpoch": 7},
            {"topic": "a", "partition": 1, "grantEpoch": 2},
        ],
        revoke=[{"topic": "a", "partition": 0, "grantEpoch": 1}],
    )
    assigned, revoke = push_grants(push)
    assert list(assigned.items()) == [(B0, 7), (A1, 2)]
    assert revoke == [A0]


def test_tp_list_is_sorted_wire_form() -> None:
    assert tp_list([B0, A1, A0]) == [
        {"topic": "a", "partition": 0},
        {"topic": "a", "partition": 1},
        {"topic": "b", "partition": 0},
    ]
    assert tp_list({}) == []


@pytest.mark.parametrize(
    ("pumps", "assigned", "revoke", "lost"),
    [
        (_pumps(a0=1), {A0: 1}, [], []),  # still assigned under its grant
        (_pumps(a0=1), {}, [A0], []),  # revoked: handed back, not lost
        (_pumps(a0=1), {}, [], [A0]),  # gone without a revoke
        (_pumps(a0=1), {A0: 2}, [], [A0]),  # granted again under another epoch
        (_pumps(a0=1), {A0: 2}, [A0], [A0]),  # regranted and revoked: the epoch decides
        (_pumps(b0=1, a0=1, a1=3), {A1: 3}, [], [B0, A0]),  # in the pumps' order
        ({}, {A0: 1}, [A1], []),  # nothing held, nothing lost
    ],
)
def test_lost_partitions(
    pumps: dict[TopicPartition, Pump],
    assigned: dict[TopicPartition, int],
    revoke: list[TopicPartition],
    lost: list[TopicPartition],
) -> None:
    assert lost_partitions(pumps, assigned, revoke) == lost


def test_held_revoked_is_the_held_revokes_sorted() -> None:
    pumps = _pumps(a0=1, b0=1, a1=1)
    assert held_revoked(pumps, [B0, ("c", 5), A0]) == [A0, B0]
    assert held_revoked(pumps, []) == []


def _pump(epoch: int, *, revoking: bool = False, done: bool = False) -> Pump:
    return Pump(A0, epoch, revoking=revoking, done=done)


@pytest.mark.parametrize(
    ("pump", "epoch", "action"),
    [
        (None, 1, GrantAction.START),  # a new grant
        (_pump(1), 1, GrantAction.KEEP),  # already reading under it
        (_pump(1), 2, GrantAction.START),  # another grant epoch
        (_pump(1, done=True), 1, GrantAction.START),  # fenced or failed: relaunched
        (_pump(1, revoking=True), 1, GrantAction.RESUME),  # a revoke the SC cancelled
        (_pump(1, revoking=True), 2, GrantAction.START),  # revoking, regranted anew
        (_pump(1, revoking=True, done=True), 1, GrantAction.RESUME),  # resume wins
        (Pump(A0, 1, paused=True), 1, GrantAction.KEEP),  # paused stays paused
    ],
)
def test_grant_action(pump: Pump | None, epoch: int, action: GrantAction) -> None:
    assert grant_action(pump, epoch) is action
