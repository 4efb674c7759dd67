"""Group controller: one row per seed-004 bullet and brief 4.4-4.6 rule, then workflows.

Topic ``t`` has 6 partitions. A and B are dynamic members on connections 1 and 2 unless
a row says otherwise; "web-1" is a static member's instance id.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sc.controllers.group import (
    ExpiryCause,
    GroupAction,
    GroupEvent,
    GroupSnapshot,
    MemberExpired,
    MemberLeft,
    PartitionsReleased,
    PublishPlan,
    RebalanceTimedOut,
    Seed,
    TopicDeleted,
    TopicPartitionsChanged,
    assign,
    reduce,
)
from spark_stream.errors import (
    FencedMemberError,
    InvalidRequestError,
    MemberIdConflictError,
    UnknownMemberError,
    UnknownTopicError,
    UnreleasedInstanceIdError,
)
from spark_stream.models import ConsumerGroupSpec, GroupKind, GroupState
from tests.sc.controllers.group_helpers import (
    A,
    B,
    C,
    D,
    GroupSim,
    fence,
    gates,
    grants,
    join,
    member,
    publish,
    push,
    rejected,
    snap,
    status,
)

CLOSED = ExpiryCause.CONNECTION_CLOSED
TIMEOUT = ExpiryCause.SESSION_TIMEOUT
EXTERNAL = ConsumerGroupSpec(kind=GroupKind.EXTERNAL)
ALL = range(6)
REVOKE_TIMEOUT = "did not release revoked partitions within the rebalance timeout"
TAKEN_OVER = "taken over by a new connection of the same member"

EMPTY = status(0, 0, [])
# A alone holds everything.
ONE = status(1, 1, [member(A)], grants(A, 1, ALL))
# B joined: A keeps 0-2 and was asked to give up 3-5.
HANDOFF = status(
    2,
    2,
    [member(A, 2), member(B)],
    grants(A, 1, [0, 1, 2]) + grants(A, 1, [3, 4, 5], revoking=True),
)
# A released 3-5: B holds them since generation 3.
SPLIT = status(
    3, 2, [member(A, 3), member(B, 2)], grants(A, 1, [0, 1, 2]) + grants(B, 3, [3, 4, 5])
)
# The same with A a static member.
STATIC = status(
    3,
    2,
    [member(A, 3, instance="web-1"), member(B, 2)],
    grants(A, 1, [0, 1, 2]) + grants(B, 3, [3, 4, 5]),
)
LIVE = {A: 1, B: 2}
A_ONLY = grants(A, 1, [0, 1, 2])
B_ONLY = grants(B, 3, [3, 4, 5])
A_VIEW = [(0, 1), (1, 1), (2, 1)]
B_VIEW = [(3, 3), (4, 3), (5, 3)]

# B alone after A left SPLIT: 0-2 granted to it at generation 4.
B_ALONE = status(4, 3, [member(B, 3)], grants(B, 4, [0, 1, 2]) + B_ONLY)
B_ALONE_ACTIONS: list[GroupAction] = [
    publish(B_ALONE),
    gates(4, (0, B, 4), (1, B, 4), (2, B, 4)),
    push(B, 2, 4, 3, [(0, 4), (1, 4), (2, 4), *B_VIEW]),
]


def _released(*parts: int) -> PartitionsReleased:
    return PartitionsReleased(A, 1, tuple(("t", p) for p in parts))


ROWS: list[tuple[str, GroupSnapshot, GroupEvent, list[GroupAction]]] = [
    # -- plans: first assignment, cooperative handoff (brief 4.6) ---------------------------
    ("first member gets every partition at generation 1", snap(EMPTY), join(A, 1), [
        publish(status(1, 1, [member(A)], grants(A, 1, ALL))),
        gates(1, *[(p, A, 1) for p in ALL]),
        push(A, 1, 1, 1, [(p, 1) for p in ALL]),
    ]),
    ("a join marks the holder's grants revoking; the newcomer waits", snap(ONE, {A: 1}),
     join(B, 2), [
        publish(HANDOFF),
        push(A, 1, 2, 2, A_VIEW, [(3, 1), (4, 1), (5, 1)]),
        push(B, 2, 2, 1),
    ]),
    ("the holder releases: granted to the target at the new generation", snap(HANDOFF, LIVE),
     _released(3, 4, 5), [
        publish(SPLIT),
        gates(3, (3, B, 3), (4, B, 3), (5, B, 3)),
        push(A, 1, 3, 3, A_VIEW),
        push(B, 2, 3, 2, [(3, 3), (4, 3), (5, 3)]),
    ]),
    ("a partial release moves only what was released", snap(HANDOFF, LIVE), _released(3), [
        publish(status(3, 2, [member(A, 3), member(B, 2)], A_ONLY + grants(B, 3, [3])
                       + grants(A, 1, [4, 5], revoking=True))),
        gates(3, (3, B, 3)),
        push(A, 1, 3, 3, A_VIEW, [(4, 1), (5, 1)]),
        push(B, 2, 3, 2, [(3, 3)]),
    ]),
    ("releasing what was not revoked changes nothing", snap(HANDOFF, LIVE), _released(0), []),
    ("the holder ignores the revoke past its rebalance timeout: fenced, grants move at once",
     snap(HANDOFF, LIVE), RebalanceTimedOut(A, 2), [
        publish(status(3, 3, [member(B, 2)], grants(B, 3, ALL))),
        fence(A, 1, REVOKE_TIMEOUT),
        gates(3, *[(p, B, 3) for p in ALL]),
        push(B, 2, 3, 2, [(p, 3) for p in ALL]),
    ]),
    ("a rebalance timer of an older push is stale", snap(HANDOFF, LIVE), RebalanceTimedOut(A, 1),
     []),
    ("a rebalance timer with nothing revoking is stale", snap(SPLIT, LIVE),
     RebalanceTimedOut(A, 3), []),
    ("the target leaves before the release: the revoke is cancelled, nothing moves",
     snap(HANDOFF, LIVE), MemberLeft(B, 2), [
        publish(status(3, 3, [member(A, 3)], grants(A, 1, ALL))),
        push(A, 1, 3, 3, [(p, 1) for p in ALL]),
    ]),
    ("a join splits a stable group one partition from each", snap(SPLIT, LIVE), join(C, 3), [
        publish(status(4, 3, [member(A, 4), member(B, 3), member(C)],
                       grants(A, 1, [0, 1]) + grants(A, 1, [2], revoking=True)
                       + grants(B, 3, [3, 4]) + grants(B, 3, [5], revoking=True))),
        push(A, 1, 4, 4, [(0, 1), (1, 1)], [(2, 1)]),
        push(B, 2, 4, 3, [(3, 3), (4, 3)], [(5, 3)]),
        push(C, 3, 4, 1),
    ]),
    # -- leaving and dying (brief 4.4) --------------------------------------------------------
    ("a graceful leave: the leaver's partitions go straight to the others", snap(SPLIT, LIVE),
     MemberLeft(A, 1), B_ALONE_ACTIONS),
    ("a dynamic member's connection closes: it leaves at once", snap(SPLIT, LIVE),
     MemberExpired(A, 1, CLOSED), B_ALONE_ACTIONS),
    ("a session timeout with the connection still open: the member is also fenced",
     snap(SPLIT, LIVE), MemberExpired(A, 1, TIMEOUT),
     [B_ALONE_ACTIONS[0], fence(A, 1, "session timeout"), *B_ALONE_ACTIONS[1:]]),
    ("an expiry of a connection the member no longer uses is stale", snap(SPLIT, LIVE),
     MemberExpired(A, 7, CLOSED), []),
    ("an expiry of a non-member changes nothing", snap(SPLIT, LIVE), MemberExpired(C, 3, CLOSED),
     []),
    ("the last member leaves: Empty, and its gates close", snap(ONE, {A: 1}), MemberLeft(A, 1), [
        publish(status(2, 2, [])),
        gates(2, *[(p, None, 0) for p in ALL]),
    ]),
    ("a static member's temporary leave (-2) keeps its grants", snap(STATIC, LIVE),
     MemberLeft(A, 1, -2), []),
    ("a static member's connection closes: it keeps its grants", snap(STATIC, LIVE),
     MemberExpired(A, 1, CLOSED), []),
    ("a static member away past its session timeout leaves", snap(STATIC, {B: 2}),
     MemberExpired(A, None, TIMEOUT), B_ALONE_ACTIONS),
    ("a static member back with a new member id inherits its partitions, re-granted",
     snap(STATIC, {B: 2}), join(D, 4, instance_id="web-1"), [
        publish(status(4, 3, [member(B, 2), member(D, 1, instance="web-1")],
                       B_ONLY + grants(D, 4, [0, 1, 2]))),
        gates(4, (0, D, 4), (1, D, 4), (2, D, 4)),
        push(D, 4, 4, 1, [(0, 4), (1, 4), (2, 4)]),
    ]),
    # -- member identity (brief 4.4) ----------------------------------------------------------
    ("a known member resumes on its own connection: nothing moves, it is told again",
     snap(SPLIT, LIVE), join(A, 1, epoch=3), [push(A, 1, 3, 3, A_VIEW)]),
    ("after an SC restart a member resumes with its epoch: nothing moves", snap(SPLIT),
     join(A, 7, epoch=3, owned=(("t", 0), ("t", 1), ("t", 2))), [push(A, 7, 3, 3, A_VIEW)]),
    ("the previous epoch owning a subset is accepted (a lost push)", snap(SPLIT),
     join(A, 7, epoch=2, owned=(("t", 0),)), [push(A, 7, 3, 3, A_VIEW)]),
    ("the same id with the current epoch on a second connection takes over", snap(SPLIT, LIVE),
     join(A, 7, epoch=3), [
        publish(status(4, 2, [member(A, 4), member(B, 2)], grants(A, 4, [0, 1, 2]) + B_ONLY)),
        fence(A, 1, TAKEN_OVER),
        gates(4, (0, A, 4), (1, A, 4), (2, A, 4)),
        push(A, 7, 4, 4, [(0, 4), (1, 4), (2, 4)]),
    ]),
    ("a known member starting over at epoch 0 gets its partitions re-granted",
     snap(SPLIT, LIVE), join(A, 1), [
        publish(status(4, 2, [member(A, 4), member(B, 2)], grants(A, 4, [0, 1, 2]) + B_ONLY)),
        gates(4, (0, A, 4), (1, A, 4), (2, A, 4)),
        push(A, 1, 4, 4, [(0, 4), (1, 4), (2, 4)]),
    ]),
    ("topics grow: the new partitions are dealt, nothing else moves", snap(SPLIT, LIVE),
     TopicPartitionsChanged("t", 8), [
        publish(status(4, 2, [member(A, 4), member(B, 3)],
                       A_ONLY + grants(A, 4, [6]) + B_ONLY + grants(B, 4, [7]))),
        gates(4, (6, A, 4), (7, B, 4)),
        push(A, 1, 4, 4, [*A_VIEW, (6, 4)]),
        push(B, 2, 4, 3, [*B_VIEW, (7, 4)]),
    ]),
    ("a topic is deleted: its grants go (no gates), members stay", snap(SPLIT, LIVE),
     TopicDeleted("t"), [
        publish(status(4, 2, [member(A, 4), member(B, 3)])),
        push(A, 1, 4, 4),
        push(B, 2, 4, 3),
    ]),
    ("a member resumes subscribed to a topic deleted while it was away",
     snap(status(4, 2, [member(A, 4), member(B, 3)]), topics={}), join(A, 7, epoch=4),
     [push(A, 7, 4, 4)]),
    ("a topic nobody subscribes to changes nothing", snap(SPLIT, LIVE),
     TopicPartitionsChanged("u", 3), []),
    # -- SC start: sticky state seeded from the published plan (seed 004) --------------------
    ("seeding from the published plan writes nothing and re-sends the gates", snap(SPLIT),
     Seed(), [gates(3, *[(p, A, 1) for p in (0, 1, 2)], *[(p, B, 3) for p in (3, 4, 5)])]),
    ("seeding during a handoff keeps it", snap(HANDOFF), Seed(),
     [gates(2, *[(p, A, 1) for p in ALL])]),
    ("seeding after a topic was deleted while the SC was down writes the plan",
     snap(SPLIT, topics={}), Seed(), [publish(status(4, 2, [member(A, 4), member(B, 3)]))]),
    ("seeding an empty group does nothing", snap(EMPTY), Seed(), []),
    ("seeding a progress-only group marks it External", snap(EMPTY, spec=EXTERNAL), Seed(),
     [PublishPlan("billing", status(0, 0, [], state=GroupState.EXTERNAL), 5)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("snapshot", "event", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_group_reducer(
    snapshot: GroupSnapshot, event: GroupEvent, expected: list[GroupAction]
) -> None:
    assert reduce(snapshot, event) == expected


NIL = "00000000-0000-0000-0000-000000000000"

REFUSALS: list[tuple[str, GroupSnapshot, GroupEvent, type[Exception], str]] = [
    ("a new member whose id is live elsewhere", snap(SPLIT, LIVE), join(A, 5),
     MemberIdConflictError, "member_id: .* live on another connection"),
    ("a second identity on one connection", snap(SPLIT, LIVE), join(C, 1),
     MemberIdConflictError, "member_id: this connection is already member"),
    ("an instance id held by a live member", snap(STATIC, LIVE),
     join(D, 4, instance_id="web-1"), UnreleasedInstanceIdError, "instance_id: 'web-1' is held"),
    ("a stale epoch", snap(SPLIT), join(A, 7, epoch=1), FencedMemberError,
     "member_epoch: 1 is stale"),
    ("an epoch from the future", snap(SPLIT), join(A, 7, epoch=9), FencedMemberError,
     "member_epoch: 9"),
    ("the previous epoch claiming a partition not its own", snap(SPLIT),
     join(A, 7, epoch=2, owned=(("t", 3),)), FencedMemberError, "member_epoch: 2"),
    ("an unknown member resuming", snap(SPLIT, LIVE), join(C, 3, epoch=1), UnknownMemberError,
     "member_id: .* join with member_epoch 0"),
    ("resuming under another instance id", snap(STATIC, {B: 2}),
     join(A, 7, epoch=3, instance_id="web-9"), FencedMemberError, "instance_id: 'web-9'"),
    ("a nil member id", snap(SPLIT), join(NIL, 3), InvalidRequestError, "member_id: .*nil"),
    ("an upper-case member id", snap(SPLIT), join(C.upper(), 3), InvalidRequestError,
     "member_id: "),
    ("an empty member id", snap(SPLIT), join("", 3), InvalidRequestError, "member_id: "),
    ("an over-long member id", snap(SPLIT), join(C + "0" * 300, 3), InvalidRequestError,
     "member_id: "),
    ("a bad instance id", snap(SPLIT), join(C, 3, instance_id="Web_1"), InvalidRequestError,
     "instance_id: "),
    ("a negative join epoch", snap(SPLIT), join(C, 3, epoch=-1), InvalidRequestError,
     "member_epoch: "),
    ("an unknown topic", snap(SPLIT), join(C, 3, topics=("nope",)), UnknownTopicError,
     "topics: no topic 'nope'"),
    ("no topics", snap(SPLIT), join(C, 3, topics=()), InvalidRequestError, "topics: "),
    ("a resuming member adding an unknown topic", snap(SPLIT), join(A, 7, epoch=3,
     topics=("t", "nope")), UnknownTopicError, "topics: no topic 'nope'"),
    ("an over-long client id", snap(SPLIT), join(C, 3, client_id="x" * 256),
     InvalidRequestError, "client_id: "),
    ("joining a progress-only group", snap(EMPTY, spec=EXTERNAL), join(C, 3),
     InvalidRequestError, "group: 'billing' is a progress-only"),
    ("a leave with epoch -3", snap(SPLIT, LIVE), MemberLeft(A, 1, -3), InvalidRequestError,
     "member_epoch: a leave carries -1 or -2"),
    ("a temporary leave (-2) of a dynamic member", snap(SPLIT, LIVE), MemberLeft(A, 1, -2),
     InvalidRequestError, "member_epoch: -2 is a static member's leave"),
    ("a leave from a connection the member no longer uses", snap(SPLIT, LIVE),
     MemberLeft(A, 9), FencedMemberError, "connection: "),
    ("a leave of a non-member", snap(SPLIT, LIVE), MemberLeft(C, 3), UnknownMemberError,
     "member_id: "),
    ("a release from a connection the member no longer uses", snap(HANDOFF, LIVE),
     PartitionsReleased(A, 9, (("t", 3),)), FencedMemberError, "connection: "),
    ("a release by a non-member", snap(HANDOFF, LIVE), PartitionsReleased(C, 3, (("t", 3),)),
     UnknownMemberError, "member_id: "),
]  # fmt: skip


@pytest.mark.parametrize(
    ("snapshot", "event", "error", "message"),
    [r[1:] for r in REFUSALS],
    ids=[r[0] for r in REFUSALS],
)
def test_refusals_are_typed_and_change_nothing(
    snapshot: GroupSnapshot, event: GroupEvent, error: type[Exception], message: str
) -> None:
    actions = reduce(snapshot, event)
    refusal = rejected(actions)
    assert refusal is not None, actions  # a lone Reject: no write, no push, no gate
    assert refusal[0] is error
    assert re.search(message, refusal[1]), refusal[1]
    connection = getattr(event, "connection", None)
    assert actions[0].connection == connection  # type: ignore[union-attr]
    assert isinstance(actions[0].exception(), error)  # type: ignore[union-attr]


# -- workflows through the toy coordinator ----------------------------------------------------


def _settle(sim: GroupSim) -> None:
    """Every live holder releases what it is asked to, until no grant is revoking."""
    for _ in range(10):
        revoking = [g for g in sim.status.assignment if g.revoking]
        if not revoking:
            return
        for mid in sorted({g.member_id for g in revoking}):
            conn = sim.sessions.get(mid)
            if conn is None:  # away: its session times out
                sim.run(MemberExpired(mid, None, TIMEOUT))
            else:
                tps = tuple(g.tp for g in sim.status.grants_of(mid) if g.revoking)
                sim.run(PartitionsReleased(mid, conn, tps))
    raise AssertionError("revokes do not settle")


def test_three_members_split_six_partitions_two_each() -> None:
    sim = GroupSim({"t": 6})
    for conn, mid in enumerate((A, B, C), start=1):
        sim.run(join(mid, conn))
        _settle(sim)
    held = sim.holders()
    assert sorted(held) == [A, B, C] and all(len(parts) == 2 for parts in held.values())
    assert sorted(p for parts in held.values() for p in parts) == list(range(6))
    assert sim.status.state is GroupState.STABLE and sim.status.group_epoch == 3
    # A's join: 1. B's: mark A's revokes, grant on A's release (2). C's: mark the revokes
    # of A and B, grant on each one's release (3).
    assert sim.status.generation == 6
    assert [a for a in sim.run(Seed()) if isinstance(a, PublishPlan)] == []


def test_graceful_leave_hands_over_without_a_gap() -> None:
    sim = GroupSim({"t": 6})
    sim.run(join(A, 1), join(B, 2))
    _settle(sim)
    sim.run(MemberLeft(A, 1))
    assert sim.holders() == {B: list(range(6))}
    # Each partition's gate went from A straight to B: never closed, never two holders.
    moved = [e for e in sim.gate_log if e.partition in (0, 1, 2)]
    assert [(e.partition, e.member_id) for e in moved[-3:]] == [(0, B), (1, B), (2, B)]


def test_static_member_restart_within_the_session_keeps_its_partitions() -> None:
    sim = GroupSim({"t": 4})
    sim.run(join(A, 1, instance_id="web-1"), join(B, 2))
    _settle(sim)
    before = sim.holders()
    generation = sim.status.generation
    sim.run(MemberExpired(A, 1, CLOSED))  # the process restarts
    assert sim.status.generation == generation and A not in sim.sessions
    epoch = sim.status.member(A).member_epoch  # type: ignore[union-attr]
    sim.run(join(A, 5, epoch=epoch, instance_id="web-1"))
    assert sim.holders() == before and sim.status.generation == generation


# A random walk: members A and B are dynamic, C and D share the static instance "web-1".
_MEMBERS = (A, B, C, D)
_INSTANCE: dict[str, Any] = {C: "web-1", D: "web-1"}
ops = st.lists(
    st.tuples(
        st.sampled_from(
            ["join", "resume", "leave", "pause", "close", "expire", "release", "stall", "grow",
             "delete", "seed", "takeover"]
        ),
        st.sampled_from(_MEMBERS),
        st.integers(1, 3),
    ),
    max_size=25,
)  # fmt: skip


def _step(sim: GroupSim, op: str, mid: str, n: int) -> None:
    conn = sim.sessions.get(mid)
    known = sim.status.member(mid)
    instance = _INSTANCE.get(mid)
    if op == "join":
        sim.run(join(mid, 10 * _MEMBERS.index(mid) + n, instance_id=instance))
    elif op in ("resume", "takeover") and known is not None:
        new_conn = conn if op == "resume" and conn is not None else 100 + n
        sim.run(join(mid, new_conn, epoch=known.member_epoch, instance_id=instance))
    elif op == "leave" and conn is not None:
        sim.run(MemberLeft(mid, conn))
    elif op == "pause" and conn is not None and instance is not None:
        sim.run(MemberLeft(mid, conn, -2))
    elif op == "close" and conn is not None:
        sim.run(MemberExpired(mid, conn, CLOSED))
    elif op == "expire" and known is not None:
        sim.run(MemberExpired(mid, conn, TIMEOUT))
    elif op == "release" and conn is not None:
        tps = tuple(g.tp for g in sim.status.grants_of(mid) if g.revoking)[:n]
        sim.run(PartitionsReleased(mid, conn, tps))
    elif op == "stall" and known is not None:
        sim.run(RebalanceTimedOut(mid, known.member_epoch))
    elif op == "grow":
        sim.run(TopicPartitionsChanged("t", sim.topics.get("t", 0) + n))
    elif op == "delete" and n == 1:
        sim.run(TopicDeleted("t"))
    elif op == "seed":
        sim.sessions.clear()  # an SC restart: every session is gone
        sim.views.clear()
        assert [a for a in sim.run(Seed()) if isinstance(a, PublishPlan)] == []


@settings(max_examples=200, deadline=None)
@given(steps=ops)
def test_any_sequence_keeps_gates_views_and_plan_consistent(
    steps: list[tuple[str, str, int]],
) -> None:
    # GroupSim checks after every event: gates == grants, live views == the plan, the
    # generation moves by one exactly when grants change, member epochs never go back.
    sim = GroupSim({"t": 5})
    for step in steps:
        _step(sim, *step)
    _settle(sim)
    st_ = sim.status
    assert st_.state in (GroupState.STABLE, GroupState.EMPTY)
    # Settled, the plan is balanced and is the assignor's own plan for its members (a
    # fixed point), and a restarted SC seeded from it reproduces it.
    plan = {g.tp: g.member_id for g in st_.assignment}
    subs = {m.member_id: m.topics for m in st_.members}
    assert assign(sim.topics, subs, plan) == plan
    loads = [len(st_.grants_of(m.member_id)) for m in st_.members]
    assert not loads or max(loads) - min(loads) <= 1
    assert [a for a in reduce(sim.snapshot, Seed()) if isinstance(a, PublishPlan)] == []
