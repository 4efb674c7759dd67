"""Delivery gates: a row per rule of the gate table (fail closed, fencing, stale plans,
versions, leadership drops, the audit ring)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_stream.errors import FencedMemberError, GateNotReadyError, InvalidRequestError
from spu.gate_audit import admissions, overlapping_grants
from spu.gates import ApplyResult, Gate, GateTable, GateUpdate

A = "0b6f7c1e-4a55-4d63-9d07-6f1e2a1b3c4d"
B = "9f3e2d1c-0b1a-4f5e-8d7c-6b5a4e3d2c1b"


def up(
    member: str | None,
    grant_epoch: int,
    generation: int,
    *,
    group: str = "billing",
    topic: str = "orders",
    partition: int = 0,
) -> GateUpdate:
    return GateUpdate(group, topic, partition, member, grant_epoch, generation)


def table(audit_size: int = 100) -> GateTable:
    """A table on a clock that ticks 10 ns per reading."""
    ticks = itertools.count(0, 10)
    return GateTable(spu=1, audit_size=audit_size, clock=lambda: next(ticks))


# -- check ---------------------------------------------------------------------------


def test_no_gate_fails_closed_retriably() -> None:
    gates = table()
    with pytest.raises(GateNotReadyError, match=r"group 'billing' on orders-0: .*fails closed"):
        gates.check("billing", "orders", 0, A, 1)
    assert GateNotReadyError.retriable


def test_the_granted_member_is_admitted() -> None:
    gates = table()
    gates.apply([up(A, 1, 1)])
    assert gates.check("billing", "orders", 0, A, 1) == Gate(A, 1, 1, version=1)


def test_a_gate_of_another_group_or_partition_does_not_admit() -> None:
    gates = table()
    gates.apply([up(A, 1, 1)])
    with pytest.raises(GateNotReadyError, match="group 'other' on orders-0"):
        gates.check("other", "orders", 0, A, 1)
    with pytest.raises(GateNotReadyError, match="group 'billing' on orders-1"):
        gates.check("billing", "orders", 1, A, 1)


FENCED_ROWS = [
    # (case, gate update, fetching member, its grant epoch, message)
    ("another member holds it", up(B, 2, 2), A, 1, "granted to another member"),
    ("the gate is closed", up(None, 2, 2), A, 1, "the gate is closed"),
    ("a stale grant epoch", up(A, 3, 4), A, 1, r"grant epoch 1 is stale \(the gate holds 3\)"),
    ("a grant epoch the plan never gave", up(A, 1, 4), A, 3, "grant epoch 3 is stale"),
]


@pytest.mark.parametrize(
    ("update", "member", "grant_epoch", "message"),
    [row[1:] for row in FENCED_ROWS],
    ids=[row[0] for row in FENCED_ROWS],
)
def test_fenced(update: GateUpdate, member: str, grant_epoch: int, message: str) -> None:
    gates = table()
    gates.apply([update])
    with pytest.raises(FencedMemberError, match=message) as caught:
        gates.check("billing", "orders", 0, member, grant_epoch)
    assert "group 'billing' on orders-0" in str(caught.value)
    assert not caught.value.retriable


def test_a_grant_newer_than_the_gate_waits_for_the_gate() -> None:
    # The member was granted at generation 5; this leader still holds generation 3's gate.
    gates = table()
    gates.apply([up(B, 3, 3)])
    with pytest.raises(GateNotReadyError, match="grant epoch 5 is newer than this leader's gate"):
        gates.check("billing", "orders", 0, A, 5)


def test_a_stream_ends_when_its_gate_changes_and_comes_back() -> None:
    gates = table()
    gates.apply([up(A, 1, 1)])
    opened = gates.check("billing", "orders", 0, A, 1)
    gates.drop_partition("orders", 0)  # leadership lost ...
    gates.apply([up(A, 1, 1)])  # ... and regained: same grant, a new entry
    assert gates.check("billing", "orders", 0, A, 1).version != opened.version
    with pytest.raises(FencedMemberError, match="changed since the stream opened"):
        gates.check("billing", "orders", 0, A, 1, version=opened.version)


# -- apply: generations and versions ---------------------------------------------------


def test_a_stale_generation_is_ignored() -> None:
    gates = table()
    gates.apply([up(A, 2, 2)])
    late = up(B, 1, 1)
    assert gates.apply([late]) == ApplyResult(changed=(), ignored=(late,))
    assert gates.gate("billing", "orders", 0) == Gate(A, 2, 2, version=1)
    assert gates.applied_generation("billing") == 2


def test_a_stale_generation_is_ignored_for_a_partition_with_no_gate_yet() -> None:
    # The fence is per group: a late plan cannot open partition 1 to its old owner.
    gates = table()
    gates.apply([up(A, 2, 2)])
    late = up(B, 1, 1, partition=1)
    assert gates.apply([late]).ignored == (late,)
    assert gates.gate("billing", "orders", 1) is None


def test_an_equal_generation_is_applied_again() -> None:
    gates = table()
    gates.apply([up(A, 2, 2)])
    audit_before = len(gates.audit_log().changes)
    assert gates.apply([up(A, 2, 2)]) == ApplyResult()  # idempotent: no change, no audit
    assert len(gates.audit_log().changes) == audit_before
    # Equal generation, another partition (a leader change brings it): applied.
    assert gates.apply([up(A, 2, 2, partition=1)]).changed == (("billing", "orders", 1),)
    # Equal generation, other content: re-applied, and what it admits changed.
    assert gates.apply([up(B, 2, 2)]).changed == (("billing", "orders", 0),)
    gates.check("billing", "orders", 0, B, 2)


def test_a_higher_generation_replaces_and_bumps_the_version() -> None:
    gates = table()
    gates.apply([up(A, 1, 1)])
    result = gates.apply([up(B, 2, 2)])
    assert result.changed == (("billing", "orders", 0),)
    assert gates.gate("billing", "orders", 0) == Gate(B, 2, 2, version=2)
    assert gates.applied_generation("billing") == 2


def test_a_higher_generation_that_keeps_the_grant_keeps_the_version() -> None:
    # The plan changed elsewhere in the group: this partition's stream goes on.
    gates = table()
    gates.apply([up(A, 1, 1)])
    opened = gates.check("billing", "orders", 0, A, 1)
    assert gates.apply([up(A, 1, 3)]) == ApplyResult()
    assert gates.check("billing", "orders", 0, A, 1, version=opened.version).generation == 3
    assert gates.applied_generation("billing") == 3


def test_updates_of_one_batch_apply_in_order() -> None:
    gates = table()
    result = gates.apply([up(A, 1, 1), up(B, 2, 2), up(A, 1, 1, partition=1)])
    assert result.changed == (("billing", "orders", 0),)
    assert [u.partition for u in result.ignored] == [1]
    gates.check("billing", "orders", 0, B, 2)


# -- leadership and deletion ----------------------------------------------------------


def test_a_deposed_leader_drops_every_group_gate_of_the_partition() -> None:
    gates = table()
    gates.apply([up(A, 1, 1), up(B, 1, 1, group="audit"), up(A, 1, 1, partition=1)])
    dropped = gates.drop_partition("orders", 0)
    assert dropped == [("audit", "orders", 0), ("billing", "orders", 0)]
    for group, member in (("billing", A), ("audit", B)):
        with pytest.raises(GateNotReadyError):
            gates.check(group, "orders", 0, member, 1)
    gates.check("billing", "orders", 1, A, 1)  # other partitions keep theirs
    assert gates.applied_generation("billing") == 1  # still fences stale plans
    assert gates.drop_partition("orders", 0) == []
    assert [(c.member, c.cause) for c in gates.audit_log().changes[-2:]] == [
        (None, "drop_partition"),
        (None, "drop_partition"),
    ]


def test_a_deleted_group_goes_and_a_new_one_starts_over() -> None:
    gates = table()
    gates.apply([up(A, 4, 4), up(A, 4, 4, partition=1), up(B, 1, 1, group="audit")])
    assert gates.drop_group("billing") == [("billing", "orders", 0), ("billing", "orders", 1)]
    assert gates.applied_generation("billing") is None
    assert gates.applied_generations() == {"audit": 1}
    assert len(gates) == 1
    assert gates.drop_partition("orders", 1) == []
    # A group of the same name created again begins at generation 1.
    assert gates.apply([up(B, 1, 1)]).changed == (("billing", "orders", 0),)


# -- the audit ring -------------------------------------------------------------------


def test_the_audit_records_every_change_with_its_time() -> None:
    gates = table()
    gates.apply([up(A, 1, 1)])
    gates.apply([up(A, 1, 2)])  # generation only
    gates.apply([up(None, 3, 3)])
    gates.drop_group("billing")
    log = gates.audit_log()
    assert log.spu == 1 and log.dropped == 0
    assert [(c.t_ns, c.member, c.generation, c.cause) for c in log.changes] == [
        (0, A, 1, "apply"),
        (10, A, 2, "apply"),
        (20, None, 3, "apply"),
        (30, None, 3, "drop_group"),
    ]
    assert [(a.member, a.start_ns, a.end_ns) for a in admissions(log)] == [(A, 0, 20)]


def test_the_audit_ring_is_bounded_and_counts_what_it_dropped() -> None:
    gates = table(audit_size=3)
    gates.apply([up(A, g, g) if g % 2 else up(B, g, g) for g in range(1, 6)])
    log = gates.audit_log()
    assert [c.generation for c in log.changes] == [3, 4, 5]
    assert log.dropped == 2
    with pytest.raises(InvalidRequestError, match="lost its 2 oldest changes"):
        overlapping_grants([log])


def test_audit_size_below_one_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="audit_size must be >= 1, got 0"):
        GateTable(audit_size=0)


BAD_UPDATES = [
    # (case, fields, message)
    ("empty group", ("", "orders", 0, A, 1, 1), "group must not be empty"),
    ("empty topic", ("billing", "", 0, A, 1, 1), "topic must not be empty"),
    ("empty member", ("billing", "orders", 0, "", 1, 1), "member must be a member id or None"),
    ("negative partition", ("billing", "orders", -1, A, 1, 1), "partition must be >= 0"),
    ("negative generation", ("billing", "orders", 0, A, 0, -1), "generation must be >= 0"),
    ("grant after its plan", ("billing", "orders", 0, A, 3, 2), "grant_epoch 3 is newer"),
]


@pytest.mark.parametrize(
    ("fields", "message"),
    [row[1:] for row in BAD_UPDATES],
    ids=[row[0] for row in BAD_UPDATES],
)
def test_bad_updates_are_refused_naming_the_field(
    fields: tuple[str, str, int, str, int, int], message: str
) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        GateUpdate(*fields)


# -- properties -----------------------------------------------------------------------

_updates = st.builds(
    lambda member, grant, extra, partition: up(member, grant, grant + extra, partition=partition),
    st.sampled_from([A, B, None]),
    st.integers(0, 4),
    st.integers(0, 2),
    st.integers(0, 1),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_updates, st.just("drop")), max_size=30))
def test_the_table_follows_the_newest_plan_and_never_admits_two_grants(
    steps: list[GateUpdate | str],
) -> None:
    gates = table()
    newest = -1
    for step in steps:
        if step == "drop":
            gates.drop_partition("orders", 0)
            continue
        assert isinstance(step, GateUpdate)
        before = gates.gate("billing", "orders", step.partition)
        result = gates.apply([step])
        after = gates.gate("billing", "orders", step.partition)
        if step.generation < newest:
            assert result.ignored == (step,) and after == before
            continue
        newest = step.generation
        assert after is not None
        assert (after.member, after.grant_epoch, after.generation) == (
            step.member,
            step.grant_epoch,
            step.generation,
        )
        moved = before is None or (before.member, before.grant_epoch) != (
            step.member,
            step.grant_epoch,
        )
        assert (step.key in result.changed) == moved
        assert (after.version != (before.version if before else None)) == moved
    assert gates.applied_generation("billing") == (None if newest < 0 else newest)
    assert overlapping_grants([gates.audit_log()]) == []
