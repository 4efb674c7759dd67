"""SC gate planning (``sc.gates``): a group's plan -> the gates each leader must hold.

Table-driven: every row is a rule of ``docs/consumer-groups.md`` ("Delivery gates").
"""

from __future__ import annotations

import pytest

from sc.gates import GateView, desired_gates, gate_changes
from spark_stream.models import ConsumerGroup
from spark_stream.models.group import ConsumerGroupStatus, GroupGrant, GroupMember, GroupState
from spark_stream.protocol import GateEntry

A = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01"
B = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a02"


def group(
    name: str,
    generation: int,
    grants: list[tuple[str, int, str, int, bool]],
    subscribed: tuple[str, ...] = (),
) -> ConsumerGroup:
    members = tuple(
        GroupMember(member_id=m, member_epoch=generation, topics=subscribed)
        for m in sorted({g[2] for g in grants} | ({A} if subscribed else set()))
    )
    assignment = tuple(
        GroupGrant(topic=t, partition=p, member_id=m, grant_epoch=e, revoking=r)
        for t, p, m, e, r in sorted(grants)
    )
    state = GroupState.STABLE if members else GroupState.EMPTY
    status = ConsumerGroupStatus(
        state=state,
        generation=generation,
        group_epoch=generation,
        members=members,
        assignment=assignment,
    )
    return ConsumerGroup.new(name, status=status)


LEADERS = {"orders-0": 1, "orders-1": 2, "orders-2": None, "other-0": 1}


@pytest.mark.parametrize(
    ("rule", "groups", "expected"),
    [
        (
            "a grant admits its member at its grant epoch on the partition's leader;"
            " the topic's other partitions get closed gates",
            [group("g", 3, [("orders", 0, A, 2, False)])],
            {
                1: {("g", "orders", 0): GateEntry("g", "orders", 0, A, 2, 3)},
                2: {("g", "orders", 1): GateEntry("g", "orders", 1, None, 0, 3)},
            },
        ),
        (
            "a revoking grant still admits its current owner",
            [group("g", 4, [("orders", 1, B, 1, True)])],
            {
                1: {("g", "orders", 0): GateEntry("g", "orders", 0, None, 0, 4)},
                2: {("g", "orders", 1): GateEntry("g", "orders", 1, B, 1, 4)},
            },
        ),
        (
            "a subscribed topic without any grant gets closed gates; a leaderless"
            " partition none; a topic the group does not read none",
            [group("g", 2, [], subscribed=("orders",))],
            {
                1: {("g", "orders", 0): GateEntry("g", "orders", 0, None, 0, 2)},
                2: {("g", "orders", 1): GateEntry("g", "orders", 1, None, 0, 2)},
            },
        ),
        (
            "groups are independent",
            [
                group("g", 1, [("orders", 0, A, 1, False), ("orders", 1, A, 1, False)]),
                group("h", 5, [("orders", 0, B, 5, False), ("orders", 1, B, 4, False)]),
            ],
            {
                1: {
                    ("g", "orders", 0): GateEntry("g", "orders", 0, A, 1, 1),
                    ("h", "orders", 0): GateEntry("h", "orders", 0, B, 5, 5),
                },
                2: {
                    ("g", "orders", 1): GateEntry("g", "orders", 1, A, 1, 1),
                    ("h", "orders", 1): GateEntry("h", "orders", 1, B, 4, 5),
                },
            },
        ),
        ("no groups, no gates", [], {}),
    ],
)
def test_desired_gates(
    rule: str, groups: list[ConsumerGroup], expected: dict[int, GateView]
) -> None:
    assert desired_gates(groups, LEADERS) == expected, rule


G0 = ("g", "orders", 0)
G1 = ("g", "orders", 1)


@pytest.mark.parametrize(
    ("rule", "sent", "desired", "generations", "led", "expected"),
    [
        (
            "nothing sent yet: every desired gate",
            {},
            {G0: GateEntry("g", "orders", 0, A, 1, 1)},
            {"g": 1},
            [("orders", 0)],
            [GateEntry("g", "orders", 0, A, 1, 1)],
        ),
        (
            "unchanged gates are not sent again",
            {G0: GateEntry("g", "orders", 0, A, 1, 1)},
            {G0: GateEntry("g", "orders", 0, A, 1, 1)},
            {"g": 1},
            [("orders", 0)],
            [],
        ),
        (
            "a new generation is sent even when the member stays",
            {G0: GateEntry("g", "orders", 0, A, 1, 1)},
            {G0: GateEntry("g", "orders", 0, A, 1, 2)},
            {"g": 2},
            [("orders", 0)],
            [GateEntry("g", "orders", 0, A, 1, 2)],
        ),
        (
            "a gate that left the plan on a partition still led here is closed",
            {G1: GateEntry("g", "orders", 1, B, 1, 1)},
            {},
            {"g": 2},
            [("orders", 1)],
            [GateEntry("g", "orders", 1, None, 0, 2)],
        ),
        (
            "a partition no longer led here needs no message (the SPU drops its gates)",
            {G1: GateEntry("g", "orders", 1, B, 1, 1)},
            {},
            {"g": 2},
            [],
            [],
        ),
        (
            "a deleted group's gates are not closed one by one (deleted_groups drops them)",
            {G1: GateEntry("g", "orders", 1, B, 1, 1)},
            {},
            {},
            [("orders", 1)],
            [],
        ),
    ],
)
def test_gate_changes(
    rule: str,
    sent: GateView,
    desired: GateView,
    generations: dict[str, int],
    led: list[tuple[str, int]],
    expected: list[GateEntry],
) -> None:
    assert gate_changes(sent, desired, generations, led) == expected, rule
