"""The Z1 checker over gate audit logs: constructed logs of one and several SPUs, and
logs written by real gate tables on a shared fake clock."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidRequestError
from spu.gate_audit import AuditLog, ChangeCause, GateChange, admissions, overlapping_grants
from spu.gates import GateTable, GateUpdate

A = "0b6f7c1e-4a55-4d63-9d07-6f1e2a1b3c4d"
B = "9f3e2d1c-0b1a-4f5e-8d7c-6b5a4e3d2c1b"


def change(
    t: int,
    member: str | None,
    grant_epoch: int = 1,
    generation: int | None = None,
    cause: ChangeCause = "apply",
    *,
    group: str = "billing",
    partition: int = 0,
) -> GateChange:
    generation = grant_epoch if generation is None else generation
    return GateChange(t, group, "orders", partition, member, grant_epoch, generation, cause)


def log(spu: int, *changes: GateChange, ended_ns: int | None = None) -> AuditLog:
    return AuditLog(spu, changes, ended_ns=ended_ns)


def test_a_handoff_with_a_gap_is_not_an_overlap() -> None:
    # A is revoked (closed at 10), B granted at 20: the partition paused in between.
    spu1 = log(1, change(0, A, 1), change(10, None, 2), change(20, B, 3))
    assert overlapping_grants([spu1]) == []
    assert [(a.member, a.start_ns, a.end_ns) for a in admissions(spu1)] == [
        (A, 0, 10),
        (B, 20, None),
    ]


def test_a_handoff_at_one_instant_is_not_an_overlap() -> None:
    # Intervals are half-open: A's ends where B's begins.
    assert overlapping_grants([log(1, change(0, A, 1), change(10, B, 2))]) == []


def test_a_deposed_leader_still_admitting_another_member_is_an_overlap() -> None:
    # SPU 1 drops its gate only at 30; SPU 2, the new leader, admitted B from 20.
    spu1 = log(1, change(0, A, 1), change(30, None, 1, cause="drop_partition"))
    spu2 = log(2, change(20, B, 2))
    [overlap] = overlapping_grants([spu1, spu2])
    assert (overlap.first.spu, overlap.first.member) == (1, A)
    assert (overlap.second.spu, overlap.second.member) == (2, B)
    assert str(overlap) == (
        f"group 'billing' on orders-0: SPU 1 admitted {A} (grant epoch 1) during [0, 30) "
        f"and SPU 2 admitted {B} (grant epoch 2) during [20, ...)"
    )


def test_a_leader_change_carrying_the_same_grant_is_not_an_overlap() -> None:
    # The gate moved with leadership: both SPUs admit A's grant for a while, nobody else.
    spu1 = log(1, change(0, A, 1), change(30, None, 1, cause="drop_partition"))
    spu2 = log(2, change(20, A, 1), change(40, B, 2))
    assert overlapping_grants([spu1, spu2]) == []


def test_the_same_member_under_two_grant_epochs_at_once_is_an_overlap() -> None:
    # A zombie's old grant on the deposed leader and the member's new one elsewhere.
    spu1 = log(1, change(0, A, 1))
    spu2 = log(2, change(20, A, 5))
    [overlap] = overlapping_grants([spu1, spu2])
    assert (overlap.first.grant, overlap.second.grant) == ((A, 1), (A, 5))


def test_a_stopped_spu_admits_nothing_after_it_ended() -> None:
    killed_at_15 = log(1, change(0, A, 1), ended_ns=15)
    still_running = log(1, change(0, A, 1))  # the same log without its end
    new_leader = log(2, change(20, B, 2))
    assert overlapping_grants([killed_at_15, new_leader]) == []
    assert len(overlapping_grants([still_running, new_leader])) == 1


def test_gates_of_other_groups_and_partitions_are_not_compared() -> None:
    spu1 = log(1, change(0, A, 1), change(0, B, 1, group="audit"), change(0, B, 1, partition=1))
    spu2 = log(2, change(5, B, 1, partition=2))
    assert overlapping_grants([spu1, spu2]) == []


def test_a_newer_generation_keeping_the_grant_continues_its_admission() -> None:
    spu1 = log(1, change(0, A, 1, 1), change(10, A, 1, 2), change(20, None, 3))
    assert [(a.start_ns, a.end_ns) for a in admissions(spu1)] == [(0, 20)]


def test_every_overlapping_pair_is_reported_in_gate_and_time_order() -> None:
    spu1 = log(1, change(0, A, 1), change(0, A, 1, partition=1))
    spu2 = log(2, change(5, B, 2, partition=1), change(10, B, 2))
    spu3 = log(3, change(20, None, 3), change(20, A, 3))
    found = overlapping_grants([spu3, spu2, spu1])
    assert [(o.first.partition, o.first.spu, o.second.spu) for o in found] == [
        (0, 1, 2),
        (0, 1, 3),
        (0, 2, 3),
        (1, 1, 2),
    ]


BAD_LOGS = [
    ("a ring that dropped changes", AuditLog(1, (change(0, A),), dropped=3), "lost its 3"),
    ("time going backwards", log(1, change(10, A), change(5, B, 2)), "goes back in time"),
    ("an end before the last change", log(1, change(10, A), ended_ns=5), "ends at 5, before"),
]


@pytest.mark.parametrize(
    ("bad", "message"), [row[1:] for row in BAD_LOGS], ids=[row[0] for row in BAD_LOGS]
)
def test_logs_the_check_cannot_trust_are_refused(bad: AuditLog, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        overlapping_grants([bad])


def test_tables_on_one_clock_a_leader_change_then_a_move() -> None:
    """Two SPUs' tables on one shared clock, as SPU processes on one host share
    CLOCK_MONOTONIC: the gate moves with leadership, then the plan moves the partition."""
    now = [0]
    spu1 = GateTable(spu=1, clock=lambda: now[0])
    spu2 = GateTable(spu=2, clock=lambda: now[0])
    spu1.apply([GateUpdate("billing", "orders", 0, A, 1, 1)])
    now[0] = 100
    spu2.apply([GateUpdate("billing", "orders", 0, A, 1, 1)])  # new leader, same push
    now[0] = 150
    spu1.drop_partition("orders", 0)  # the deposed leader learns late: same grant, fine
    now[0] = 200
    spu2.apply([GateUpdate("billing", "orders", 0, B, 2, 2)])
    assert overlapping_grants([spu1.audit_log(), spu2.audit_log()]) == []

    # Had the deposed leader kept its gate past the move, A and B would overlap.
    now[0] = 0
    stale = GateTable(spu=1, clock=lambda: now[0])
    stale.apply([GateUpdate("billing", "orders", 0, A, 1, 1)])
    now[0] = 250
    stale.drop_partition("orders", 0)
    [overlap] = overlapping_grants([stale.audit_log(), spu2.audit_log()])
    assert (overlap.first.end_ns, overlap.second.start_ns) == (250, 200)
