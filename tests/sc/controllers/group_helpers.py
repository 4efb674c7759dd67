"""Builders for group reducer tests, and ``GroupSim``: the reducer with a toy coordinator.

``GroupSim`` keeps what the coordinator and the SPUs would: the group object (each
``PublishPlan`` becomes the next revision), the live sessions (the coordinator's rules:
an accepted join binds the connection, an accepted leave or expiry and a fence unbind
it), each partition's delivery gate, and the last assignment each member was pushed.
After every event it checks that the gates and the live members' views agree with the
published plan, so a workflow test only has to drive events.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sc.controllers.group import (
    FenceMember,
    GateEntry,
    Granted,
    GroupAction,
    GroupEvent,
    GroupSnapshot,
    MemberExpired,
    MemberJoined,
    MemberLeft,
    PublishPlan,
    PushAssignment,
    Reject,
    TopicDeleted,
    TopicPartitionsChanged,
    UpdateGates,
    reduce,
    view_of,
)
from spark_stream.models import (
    ConsumerGroup,
    ConsumerGroupSpec,
    ConsumerGroupStatus,
    GroupGrant,
    GroupMember,
    GroupState,
)

GROUP = "billing"
A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"
C = "cccccccc-0000-4000-8000-000000000003"
D = "dddddddd-0000-4000-8000-000000000004"
SPEC = ConsumerGroupSpec()

#: (member_id, member_epoch, topics, instance_id)
MemberRow = tuple[str, int, tuple[str, ...], str | None]
#: (topic, partition, member_id, grant_epoch, revoking)
GrantRow = tuple[str, int, str, int, bool]


def member(
    mid: str, epoch: int = 1, topics: Sequence[str] = ("t",), instance: str | None = None
) -> MemberRow:
    return (mid, epoch, tuple(topics), instance)


def grants(
    mid: str, epoch: int, parts: Iterable[int], topic: str = "t", revoking: bool = False
) -> list[GrantRow]:
    return [(topic, p, mid, epoch, revoking) for p in parts]


def status(
    generation: int,
    group_epoch: int,
    members: Sequence[MemberRow],
    rows: Iterable[GrantRow] = (),
    state: GroupState | None = None,
) -> ConsumerGroupStatus:
    rows = list(rows)
    if state is None:
        if not members:
            state = GroupState.EMPTY
        elif any(r[4] for r in rows):
            state = GroupState.RECONCILING
        else:
            state = GroupState.STABLE
    return ConsumerGroupStatus(
        state=state,
        generation=generation,
        group_epoch=group_epoch,
        members=tuple(
            GroupMember(member_id=m, member_epoch=e, topics=t, instance_id=i)
            for m, e, t, i in members
        ),
        assignment=tuple(
            GroupGrant(topic=t, partition=p, member_id=m, grant_epoch=e, revoking=r)
            for t, p, m, e, r in rows
        ),
    )


def group(st: ConsumerGroupStatus, rev: int = 5, spec: ConsumerGroupSpec = SPEC) -> ConsumerGroup:
    return ConsumerGroup.new(GROUP, spec, st).with_revision(rev)


def snap(
    st: ConsumerGroupStatus,
    sessions: dict[str, int] | None = None,
    topics: dict[str, int] | None = None,
    spec: ConsumerGroupSpec = SPEC,
) -> GroupSnapshot:
    return GroupSnapshot(
        group(st, spec=spec), {"t": 6} if topics is None else topics, sessions or {}
    )


def publish(st: ConsumerGroupStatus, rev: int = 5) -> PublishPlan:
    return PublishPlan(GROUP, st, rev)


def push(
    mid: str,
    conn: int,
    generation: int,
    epoch: int,
    assigned: Iterable[tuple[int, int]] = (),
    revoke: Iterable[tuple[int, int]] = (),
    topic: str = "t",
) -> PushAssignment:
    """A push; ``assigned`` and ``revoke`` are ``(partition, grant_epoch)`` pairs."""
    return PushAssignment(
        group=GROUP,
        member_id=mid,
        connection=conn,
        generation=generation,
        member_epoch=epoch,
        assigned=tuple(Granted(topic, p, e) for p, e in assigned),
        revoke=tuple(Granted(topic, p, e) for p, e in revoke),
        heartbeat_interval_ms=SPEC.heartbeat_interval_ms,
        session_timeout_ms=SPEC.session_timeout_ms,
    )


def gates(generation: int, *entries: tuple[int, str | None, int], topic: str = "t") -> UpdateGates:
    """``entries``: ``(partition, member or None, grant_epoch)``."""
    return UpdateGates(tuple(GateEntry(GROUP, topic, p, m, e, generation) for p, m, e in entries))


def fence(mid: str, conn: int, reason: str) -> FenceMember:
    return FenceMember(GROUP, mid, conn, reason)


def rejected(actions: list[GroupAction]) -> tuple[type[Exception], str] | None:
    """``(error type, message)`` when ``actions`` is a lone ``Reject``."""
    if len(actions) == 1 and isinstance(actions[0], Reject):
        return actions[0].error, actions[0].message
    return None


class GroupSim:
    """The reducer, a toy coordinator around it, and the SPUs' gates; checks as it goes."""

    def __init__(
        self,
        topics: dict[str, int],
        st: ConsumerGroupStatus | None = None,
        spec: ConsumerGroupSpec = SPEC,
    ) -> None:
        self.group = group(st or ConsumerGroupStatus(), rev=1, spec=spec)
        self.topics = dict(topics)
        self.sessions: dict[str, int] = {}
        self.gates: dict[tuple[str, int], tuple[str, int]] = {
            tp: owner for tp, owner in self.group.status.owners().items()
        }
        self.gate_generation: dict[tuple[str, int], int] = {}
        self.views: dict[str, PushAssignment] = {}
        self.log: list[GroupAction] = []
        self.gate_log: list[GateEntry] = []

    @property
    def status(self) -> ConsumerGroupStatus:
        return self.group.status

    @property
    def snapshot(self) -> GroupSnapshot:
        return GroupSnapshot(self.group, dict(self.topics), dict(self.sessions))

    def run(self, *events: GroupEvent) -> list[GroupAction]:
        out: list[GroupAction] = []
        for event in events:
            out += self._one(event)
        return out

    def _one(self, event: GroupEvent) -> list[GroupAction]:
        before = self.status
        actions = reduce(self.snapshot, event)
        self.log += actions
        refused = any(isinstance(a, Reject) for a in actions)
        assert not refused or len(actions) == 1, actions
        for action in actions:
            self._apply(action)
        if not refused:
            self._bookkeep(event)
        self._check(before)
        return actions

    def _apply(self, action: GroupAction) -> None:
        match action:
            case PublishPlan(status=st, revision=rev):
                assert rev == self.group.revision
                self.group = self.group.with_status(st).with_revision(rev + 1)
            case FenceMember(member_id=mid, connection=conn):
                if self.sessions.get(mid) == conn:
                    del self.sessions[mid]
                    self.views.pop(mid, None)
            case UpdateGates(entries=entries):
                for e in entries:
                    tp = (e.topic, e.partition)
                    if e.generation < self.gate_generation.get(tp, 0):
                        continue
                    self.gate_generation[tp] = e.generation
                    self.gate_log.append(e)
                    if e.member_id is None:
                        self.gates.pop(tp, None)
                    else:
                        self.gates[tp] = (e.member_id, e.grant_epoch)
            case PushAssignment(member_id=mid):
                self.views[mid] = action

    def _bookkeep(self, event: GroupEvent) -> None:
        match event:
            case MemberJoined(member_id=mid, connection=conn):
                self.sessions[mid] = conn
            case MemberLeft(member_id=mid):
                self.sessions.pop(mid, None)
                self.views.pop(mid, None)
            case MemberExpired(member_id=mid, connection=conn):
                if self.sessions.get(mid) == conn:
                    self.sessions.pop(mid, None)
                    self.views.pop(mid, None)
            case TopicPartitionsChanged(topic=t, partitions=n):
                self.topics[t] = n
            case TopicDeleted(topic=t):
                self.topics.pop(t, None)
                # The SPUs delete the partitions, and their gates with them.
                self.gates = {tp: g for tp, g in self.gates.items() if tp[0] != t}

    def _check(self, before: ConsumerGroupStatus) -> None:
        st = self.status
        # One grant per partition, each to a member (the model checks it), and the
        # gates on the "SPUs" are exactly the published grants of existing partitions.
        live_grants = {
            tp: owner for tp, owner in st.owners().items() if tp[1] < self.topics.get(tp[0], 0)
        }
        live_gates = {
            tp: owner for tp, owner in self.gates.items() if tp[1] < self.topics.get(tp[0], 0)
        }
        assert live_gates == live_grants
        # The generation moves by one exactly when the grants change.
        if st.assignment != before.assignment:
            assert st.generation == before.generation + 1
        else:
            assert st.generation == before.generation
        for m in st.members:
            old = before.member(m.member_id)
            assert old is None or m.member_epoch >= old.member_epoch
        # Every live member was told exactly what the plan grants it.
        for mid in self.sessions:
            if st.member(mid) is None:
                continue
            pushed = self.views[mid]
            assert (pushed.assigned, pushed.revoke) == view_of(st, mid), mid
            assert pushed.member_epoch == st.member(mid).member_epoch  # type: ignore[union-attr]

    def holders(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for g in self.status.assignment:
            out.setdefault(g.member_id, []).append(g.partition)
        return out


def join(
    mid: str, conn: int, epoch: int = 0, topics: Sequence[str] = ("t",), **kw: Any
) -> MemberJoined:
    return MemberJoined(
        member_id=mid, connection=conn, member_epoch=epoch, topics=tuple(topics), **kw
    )
