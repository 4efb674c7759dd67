"""ConsumerGroup model: spec bounds, the plan's invariants, and the field checks."""

from __future__ import annotations

import msgpack
import pytest

from spark_stream.errors import InvalidConfigError, InvalidRequestError
from spark_stream.models import (
    KINDS,
    MAX_EPOCH,
    ConsumerGroup,
    ConsumerGroupSpec,
    ConsumerGroupStatus,
    GroupGrant,
    GroupKind,
    GroupMember,
    GroupState,
    check_group_name,
    check_instance_id,
    check_member_epoch,
    check_member_id,
)

A = "0b6f5f0e-8d8e-4b8a-9c57-1f0e7a3c2d11"
B = "7d1c2b3a-0000-4000-8000-000000000002"

PLAN = """\
kind: ConsumerGroup
metadata:
  name: billing
spec:
  kind: members
  sessionTimeoutMs: 20000
status:
  state: Reconciling
  generation: 4
  groupEpoch: 3
  members:
    - {memberId: 7d1c2b3a-0000-4000-8000-000000000002, topics: [orders], memberEpoch: 2}
    - {memberId: 0b6f5f0e-8d8e-4b8a-9c57-1f0e7a3c2d11, instanceId: web-1, clientId: c1,
       host: 10.0.0.1, memberEpoch: 3, topics: [orders, audit, orders], joinedAt: 17}
  assignment:
    - {topic: orders, partition: 1, memberId: 7d1c2b3a-0000-4000-8000-000000000002,
       grantEpoch: 4}
    - {topic: orders, partition: 0, memberId: 0b6f5f0e-8d8e-4b8a-9c57-1f0e7a3c2d11,
       grantEpoch: 2, revoking: true}
"""


def test_plan_yaml_parses_sorted_and_round_trips() -> None:
    group = ConsumerGroup.from_yaml(PLAN)
    status = group.status
    assert group.kind in KINDS and group.spec.session_timeout_ms == 20_000
    assert (status.state, status.generation, status.group_epoch) == (GroupState.RECONCILING, 4, 3)
    # members sorted by id, assignment by (topic, partition), topics sorted and distinct
    assert [m.member_id for m in status.members] == [A, B]
    assert status.members[0].topics == ("audit", "orders")
    assert [g.tp for g in status.assignment] == [("orders", 0), ("orders", 1)]
    assert status.owners() == {("orders", 0): (A, 2), ("orders", 1): (B, 4)}
    assert [g.tp for g in status.grants_of(A)] == [("orders", 0)]
    assert status.member(B) is not None and status.member("nobody") is None
    assert ConsumerGroup.from_yaml(group.to_yaml()) == group
    wire = msgpack.packb(group.to_dict())
    assert ConsumerGroup.from_dict(msgpack.unpackb(wire)) == group


def test_defaults_are_the_briefs() -> None:
    spec = ConsumerGroupSpec()
    assert spec.kind is GroupKind.MEMBERS
    assert (spec.session_timeout_ms, spec.heartbeat_interval_ms) == (10_000, 1_000)
    assert spec.rebalance_timeout_ms == 60_000
    assert spec.offsets_retention_ms == 7 * 86_400_000
    status = ConsumerGroupStatus()
    assert (status.state, status.generation, status.group_epoch) == (GroupState.EMPTY, 0, 0)
    assert ConsumerGroup.new("g").status == status
    assert ConsumerGroupSpec.from_dict({"kind": "External"}).kind is GroupKind.EXTERNAL


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"sessionTimeoutMs": 2_999}, "sessionTimeoutMs"),
        ({"sessionTimeoutMs": 60_001}, "sessionTimeoutMs"),
        ({"heartbeatIntervalMs": 499}, "heartbeatIntervalMs"),
        ({"rebalanceTimeoutMs": 999}, "rebalanceTimeoutMs"),
        ({"rebalanceTimeoutMs": 1_800_001}, "rebalanceTimeoutMs"),
        ({"offsetsRetentionMs": 59_999}, "offsetsRetentionMs"),
        ({"kind": "queue"}, "kind"),
        ({"sessionTimeoutMs": 3_000, "heartbeatIntervalMs": 2_000}, "heartbeatIntervalMs"),
    ],
)
def test_spec_out_of_bounds_is_refused_naming_the_field(
    spec: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidConfigError, match=field):
        ConsumerGroupSpec.from_dict(spec)


def _status(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "generation": 2,
        "members": [{"memberId": A, "topics": ["t"]}],
        "assignment": [{"topic": "t", "partition": 0, "memberId": A, "grantEpoch": 2}],
    }
    return base | kw


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (_status(generation=1), "above the generation"),
        (
            _status(assignment=[{"topic": "t", "partition": 0, "memberId": B, "grantEpoch": 1}]),
            "not a member",
        ),
        (
            _status(
                assignment=[
                    {"topic": "t", "partition": 0, "memberId": A, "grantEpoch": 1},
                    {"topic": "t", "partition": 0, "memberId": A, "grantEpoch": 2},
                ]
            ),
            "'t/0' is listed twice",
        ),
        (_status(members=[{"memberId": A}, {"memberId": A}], assignment=[]), "listed twice"),
        (
            _status(
                members=[{"memberId": A, "instanceId": "i"}, {"memberId": B, "instanceId": "i"}],
                assignment=[],
            ),
            "instanceId 'i' is listed twice",
        ),
        (
            _status(assignment=[{"topic": "t", "partition": 0, "memberId": A, "grantEpoch": 0}]),
            "grantEpoch",
        ),
        (_status(members=[{"memberId": "not-a-uuid"}], assignment=[]), "memberId"),
        (_status(members=[{"memberId": A, "memberEpoch": 0}], assignment=[]), "memberEpoch"),
        (_status(members=[{"memberId": A, "topics": ["Bad_Topic"]}], assignment=[]), "topics"),
        (_status(state="Rebalancing"), "state"),
    ],
)
def test_inconsistent_plans_are_refused(status: dict[str, object], reason: str) -> None:
    with pytest.raises(InvalidConfigError, match=reason):
        ConsumerGroupStatus.from_dict(status)


def test_group_name_length_is_249() -> None:
    assert ConsumerGroup.new("g" * 249).name == "g" * 249
    with pytest.raises(InvalidConfigError, match="longer than 249"):
        ConsumerGroup.new("g" * 250)


def test_models_can_be_built_directly() -> None:
    member = GroupMember(member_id=A, topics=("t",))
    grant = GroupGrant(topic="t", partition=3, member_id=A, grant_epoch=1)
    status = ConsumerGroupStatus(generation=1, members=(member,), assignment=(grant,))
    assert status.owners() == {("t", 3): (A, 1)} and not grant.revoking


# -- field checks: each failure is an InvalidRequestError naming the field ---------------


@pytest.mark.parametrize("value", [A, B, "ffffffff-ffff-ffff-ffff-ffffffffffff"])
def test_member_id_accepts_canonical_uuids(value: str) -> None:
    assert check_member_id(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "",
        "00000000-0000-0000-0000-000000000000",  # nil
        A.upper(),
        A.replace("-", ""),
        "{" + A + "}",
        "urn:uuid:" + A,
        A + "0",
        "x" * 10_000,
        "member-1",
        None,
        42,
    ],
)
def test_member_id_refuses_anything_else(value: object) -> None:
    with pytest.raises(InvalidRequestError, match="^member_id: "):
        check_member_id(value)


@pytest.mark.parametrize("check", [check_group_name, check_instance_id])
@pytest.mark.parametrize("value", ["a", "billing", "web-1", "0-x", "g" * 249])
def test_names_follow_the_topic_rule(check: object, value: str) -> None:
    assert check(value) == value  # type: ignore[operator]


@pytest.mark.parametrize(
    ("check", "field"), [(check_group_name, "group"), (check_instance_id, "instance_id")]
)
@pytest.mark.parametrize("value", ["", "g" * 250, "Billing", "a_b", "a.b", "-a", "a-", "ü", 7])
def test_bad_names_are_refused_naming_the_field(check: object, field: str, value: object) -> None:
    with pytest.raises(InvalidRequestError, match=f"^{field}: "):
        check(value)  # type: ignore[operator]


@pytest.mark.parametrize("value", [0, 1, MAX_EPOCH])
def test_join_epochs(value: int) -> None:
    assert check_member_epoch(value) == value


@pytest.mark.parametrize("value", [-1, -2, -3, MAX_EPOCH + 1, True, "1", 1.0])
def test_bad_join_epochs(value: object) -> None:
    with pytest.raises(InvalidRequestError, match="^member_epoch: "):
        check_member_epoch(value)


@pytest.mark.parametrize("value", [-1, -2])
def test_leave_epochs(value: int) -> None:
    assert check_member_epoch(value, leave=True) == value


@pytest.mark.parametrize("value", [0, 1, -3])
def test_bad_leave_epochs(value: int) -> None:
    with pytest.raises(InvalidRequestError, match="^member_epoch: a leave carries -1 or -2"):
        check_member_epoch(value, leave=True)
