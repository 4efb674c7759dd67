"""Group controller: ``(GroupSnapshot, event) -> actions``. Pure.

Theory of operation (seed ``004``; brief 4.4-4.6):

- **The plan is the status.** The published status (members, grants) is the sticky
  state: every event edits the member list, then ``_replan`` runs the assignor with the
  current grants as ``current`` and derives the new grants. An SC that starts from the
  published status therefore reproduces it (``Seed``): nothing moves, nothing bumps.
- **Grants move cooperatively.** A partition whose target is another member while its
  holder is still a member is marked ``revoking``: the holder keeps the grant (it may
  commit) and is pushed a revoke. Only when the holder releases it, leaves, dies or is
  fenced at its rebalance timeout does the partition get a new grant, to the target,
  with ``grant_epoch`` = the new generation. A partition has at most one grant at a
  time, so two members never hold it together. A revoke the target no longer asks for
  is cancelled (the holder is pushed the partition back with its grant unchanged).
- **Counters.** ``generation`` bumps only when the grants change (holder, grant epoch or
  revoking flag); ``group_epoch`` when the members or their subscriptions change; a
  member's ``member_epoch`` each time what it is told (assigned, revoke) changes. A
  status equal to the published one is never written.
- **Liveness is the coordinator's** (``GroupSnapshot.sessions``): a member in the status
  without a session (a static member away, anyone before reconnecting after an SC
  start) keeps its grants until ``MemberExpired``. A closed connection ends a dynamic
  member at once and a static one only at its session timeout.
- Events from a connection that is no longer the member's (after a takeover) are
  refused or dropped, so a stale connection never ends a member that moved on.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from sc.controllers.group.actions import (
    FenceMember,
    GateEntry,
    Granted,
    GroupAction,
    PublishPlan,
    PushAssignment,
    Reject,
    UpdateGates,
)
from sc.controllers.group.assignor import TopicPartition, assign
from sc.controllers.group.events import (
    ExpiryCause,
    GroupEvent,
    GroupSnapshot,
    MemberExpired,
    MemberJoined,
    MemberLeft,
    PartitionsReleased,
    RebalanceTimedOut,
    Seed,
    TopicDeleted,
    TopicPartitionsChanged,
)
from sc.controllers.group.policy import JoinKind, decide_join, gates_of
from spark_stream.errors import (
    FencedMemberError,
    FluvioError,
    InvalidRequestError,
    UnknownMemberError,
)
from spark_stream.models import (
    STATIC_LEAVE_EPOCH,
    ConsumerGroupStatus,
    GroupGrant,
    GroupKind,
    GroupMember,
    GroupState,
    check_member_epoch,
)

__all__ = ["reduce"]

# (topic, partition, member_id, grant_epoch, revoking): a grant as a plain row.
_Row = tuple[str, int, str, int, bool]


def reduce(snap: GroupSnapshot, event: GroupEvent) -> list[GroupAction]:
    """Actions for one event about the group in ``snap``."""
    match event:
        case MemberJoined():
            return _on_join(snap, event)
        case MemberLeft():
            return _on_leave(snap, event)
        case MemberExpired():
            return _on_expired(snap, event)
        case PartitionsReleased():
            return _on_released(snap, event)
        case RebalanceTimedOut():
            return _on_rebalance_timeout(snap, event)
        case TopicPartitionsChanged(topic=topic, partitions=count):
            return _replan(snap, snap.group.status.members, topics={**snap.topics, topic: count})
        case TopicDeleted(topic=topic):
            topics = {t: n for t, n in snap.topics.items() if t != topic}
            return _replan(snap, snap.group.status.members, topics=topics)
        case Seed():
            return _on_seed(snap)
    return []


def _on_join(snap: GroupSnapshot, join: MemberJoined) -> list[GroupAction]:
    try:
        decision = decide_join(snap, join)
    except FluvioError as exc:
        return [Reject(join.connection, type(exc), str(exc))]
    status = snap.group.status
    old = status.member(join.member_id)
    gone = set(decision.replaces)
    hints: dict[TopicPartition, str] = {}
    restamp: set[TopicPartition] = set()
    fences: list[FenceMember] = []
    if decision.kind is JoinKind.NEW:
        epoch = old.member_epoch + 1 if old is not None else 1
        joined_at = join.now_ms
        hints = {g.tp: join.member_id for g in status.assignment if g.member_id in gone}
    else:
        assert old is not None  # a resume names a known member (decide_join)
        epoch, joined_at = old.member_epoch, old.joined_at
        if decision.kind is JoinKind.TAKEOVER:
            assert decision.fenced_connection is not None
            restamp = {g.tp for g in status.grants_of(join.member_id)}
            reason = "taken over by a new connection of the same member"
            fences.append(
                FenceMember(snap.group.name, join.member_id, decision.fenced_connection, reason)
            )
    joiner = GroupMember(
        member_id=join.member_id,
        instance_id=join.instance_id,
        client_id=join.client_id,
        host=join.host,
        member_epoch=epoch,
        topics=join.topics,
        pattern=join.pattern,
        joined_at=joined_at,
    )
    members = [m for m in status.members if m.member_id not in gone | {join.member_id}]
    fresh = {join.member_id} if decision.kind is JoinKind.NEW else set()
    return _replan(
        snap,
        [*members, joiner],
        drop_members=gone,
        hints=hints,
        restamp=restamp,
        fresh=fresh,
        fences=fences,
        sessions={**snap.sessions, join.member_id: join.connection},
        push_to={join.member_id},
    )


def _session_mismatch(snap: GroupSnapshot, member_id: str, connection: int) -> Reject | None:
    if snap.group.status.member(member_id) is None:
        msg = f"member_id: {member_id} is not a member of group {snap.group.name!r}"
        return Reject(connection, UnknownMemberError, msg)
    if snap.sessions.get(member_id) != connection:
        msg = f"connection: not member {member_id}'s current connection"
        return Reject(connection, FencedMemberError, msg)
    return None


def _without(snap: GroupSnapshot, member_id: str) -> list[GroupMember]:
    return [m for m in snap.group.status.members if m.member_id != member_id]


def _on_leave(snap: GroupSnapshot, leave: MemberLeft) -> list[GroupAction]:
    try:
        check_member_epoch(leave.member_epoch, leave=True)
    except InvalidRequestError as exc:
        return [Reject(leave.connection, InvalidRequestError, str(exc))]
    refused = _session_mismatch(snap, leave.member_id, leave.connection)
    if refused is not None:
        return [refused]
    if leave.member_epoch == STATIC_LEAVE_EPOCH:
        member = snap.group.status.member(leave.member_id)
        if member is None or member.instance_id is None:
            msg = (
                f"member_epoch: -2 is a static member's leave; {leave.member_id} has no instance_id"
            )
            return [Reject(leave.connection, InvalidRequestError, msg)]
        return []  # it keeps its grants; the coordinator times its absence
    return _replan(snap, _without(snap, leave.member_id), drop_members={leave.member_id})


def _on_expired(snap: GroupSnapshot, expired: MemberExpired) -> list[GroupAction]:
    member = snap.group.status.member(expired.member_id)
    if member is None or snap.sessions.get(expired.member_id) != expired.connection:
        return []  # unknown, or stale: the member has another session now
    closed = expired.cause is ExpiryCause.CONNECTION_CLOSED
    if closed and member.instance_id is not None:
        return []  # a static member keeps its grants for its session timeout
    fences = []
    if expired.connection is not None and not closed:
        reason = expired.cause.value
        fences.append(FenceMember(snap.group.name, member.member_id, expired.connection, reason))
    return _replan(
        snap, _without(snap, member.member_id), drop_members={member.member_id}, fences=fences
    )


def _on_released(snap: GroupSnapshot, release: PartitionsReleased) -> list[GroupAction]:
    refused = _session_mismatch(snap, release.member_id, release.connection)
    if refused is not None:
        return [refused]
    asked = set(release.partitions)
    released = {
        g.tp for g in snap.group.status.grants_of(release.member_id) if g.revoking and g.tp in asked
    }
    if not released:
        return []  # nothing it was asked to give up: a late or repeated release
    return _replan(snap, snap.group.status.members, drop=released)


def _on_rebalance_timeout(snap: GroupSnapshot, timeout: RebalanceTimedOut) -> list[GroupAction]:
    status = snap.group.status
    member = status.member(timeout.member_id)
    if member is None or member.member_epoch != timeout.member_epoch:
        return []  # gone, or pushed again since: that push's timer decides
    if not any(g.revoking for g in status.grants_of(member.member_id)):
        return []
    fences = []
    connection = snap.sessions.get(member.member_id)
    if connection is not None:
        reason = "did not release revoked partitions within the rebalance timeout"
        fences.append(FenceMember(snap.group.name, member.member_id, connection, reason))
    return _replan(
        snap, _without(snap, member.member_id), drop_members={member.member_id}, fences=fences
    )


def _on_seed(snap: GroupSnapshot) -> list[GroupAction]:
    actions = _replan(snap, snap.group.status.members)
    status = snap.group.status
    for action in actions:
        if isinstance(action, PublishPlan):
            status = action.status
    gates = gates_of(snap.group.name, status)
    rest: list[GroupAction] = [a for a in actions if not isinstance(a, UpdateGates)]
    return [*rest, UpdateGates(gates)] if gates else rest


# -- the one planning path -------------------------------------------------------------


def _replan(
    snap: GroupSnapshot,
    members: Iterable[GroupMember],
    *,
    topics: Mapping[str, int] | None = None,
    drop_members: Collection[str] = (),
    drop: Collection[TopicPartition] = (),
    hints: Mapping[TopicPartition, str] | None = None,
    restamp: Collection[TopicPartition] = (),
    fresh: Collection[str] = (),
    fences: Iterable[FenceMember] = (),
    sessions: Mapping[str, int] | None = None,
    push_to: Collection[str] = (),
) -> list[GroupAction]:
    """Plan the group with ``members`` and turn the result into actions.

    Args:
        snap: the snapshot the event arrived on.
        members: the group's members after the event.
        topics: partition counts after the event (default: the snapshot's).
        drop_members: members whose grants end (gone, or an incarnation a joiner with
            the same id replaces).
        drop: grants released: they end now, whoever the target is.
        hints: who a partition without a grant should go to if balance allows (the
            partitions of an incarnation a joiner replaces).
        restamp: grants that keep their holder but get the new generation as epoch.
        fresh: members just created: their epoch is already set.
        fences: sessions to close (after the plan is written).
        sessions: live sessions after the event (default: the snapshot's).
        push_to: members told their assignment even if it did not change.
    """
    group, old = snap.group, snap.group.status
    topics = snap.topics if topics is None else topics
    sessions = snap.sessions if sessions is None else sessions
    roster = sorted(members, key=lambda m: m.member_id)
    ids = {m.member_id for m in roster} - set(drop_members)
    kept = {
        g.tp: g
        for g in old.assignment
        if g.member_id in ids and g.partition < topics.get(g.topic, 0) and g.tp not in drop
    }
    current = {tp: g.member_id for tp, g in kept.items()}
    for tp, member_id in (hints or {}).items():
        current.setdefault(tp, member_id)
    target = assign(topics, {m.member_id: m.subscribed(topics) for m in roster}, current)

    bumped = old.generation + 1
    rows: list[_Row] = []
    for tp, g in kept.items():
        epoch = bumped if tp in restamp else g.grant_epoch
        rows.append((g.topic, g.partition, g.member_id, epoch, target.get(tp) != g.member_id))
    rows += [(t, p, m, bumped, False) for (t, p), m in target.items() if (t, p) not in kept]
    rows.sort()
    old_rows = _rows(old)
    generation = bumped if rows != old_rows else old.generation

    views = _views(rows)
    new = _status(snap, roster, rows, views, generation, fresh)
    actions: list[GroupAction] = []
    if new != old:
        actions.append(PublishPlan(group.name, new, group.revision))
    actions += fences
    gates = _gate_changes(group.name, old_rows, rows, topics, generation)
    if gates:
        actions.append(UpdateGates(gates))
    old_epochs = {m.member_id: m.member_epoch for m in old.members}
    for member in new.members:
        mid = member.member_id
        connection = sessions.get(mid)
        if connection is None:
            continue
        if old_epochs.get(mid) != member.member_epoch or mid in push_to:
            mine = views.get(mid, [])
            actions.append(
                PushAssignment(
                    group=group.name,
                    member_id=mid,
                    connection=connection,
                    generation=new.generation,
                    member_epoch=member.member_epoch,
                    assigned=tuple(Granted(t, p, e) for t, p, _, e, r in mine if not r),
                    revoke=tuple(Granted(t, p, e) for t, p, _, e, r in mine if r),
                    heartbeat_interval_ms=group.spec.heartbeat_interval_ms,
                    session_timeout_ms=group.spec.session_timeout_ms,
                )
            )
    return actions


def _status(
    snap: GroupSnapshot,
    members: list[GroupMember],
    rows: list[_Row],
    views: dict[str, list[_Row]],
    generation: int,
    fresh: Collection[str],
) -> ConsumerGroupStatus:
    """The status after a plan: grants, member epochs, group epoch, state."""
    old = snap.group.status
    old_grants = dict(zip(_rows(old), old.assignment, strict=True))
    old_views = _views(old_grants)
    epochs: list[GroupMember] = []
    for member in members:
        mid = member.member_id
        if mid not in fresh and views.get(mid) != old_views.get(mid):
            member = member.model_copy(update={"member_epoch": member.member_epoch + 1})
        epochs.append(member)
    group_epoch = old.group_epoch
    if _roster(epochs) != _roster(old.members):
        group_epoch += 1
    if snap.group.spec.kind is GroupKind.EXTERNAL:
        state = GroupState.EXTERNAL
    elif not epochs:
        state = GroupState.EMPTY
    elif any(row[4] for row in rows):
        state = GroupState.RECONCILING
    else:
        state = GroupState.STABLE
    # Unchanged grants keep their (validated) objects: a plan of 10,000 grants that moves
    # a few builds a few.
    assignment = tuple(
        old_grants.get(row)
        or GroupGrant(
            topic=row[0], partition=row[1], member_id=row[2], grant_epoch=row[3], revoking=row[4]
        )
        for row in rows
    )
    return ConsumerGroupStatus(
        state=state,
        generation=generation,
        group_epoch=group_epoch,
        members=tuple(epochs),
        assignment=assignment,
    )


def _rows(status: ConsumerGroupStatus) -> list[_Row]:
    """The status' grants as rows (sorted, as the status keeps them)."""
    return [
        (g.topic, g.partition, g.member_id, g.grant_epoch, g.revoking) for g in status.assignment
    ]


def _views(rows: Iterable[_Row]) -> dict[str, list[_Row]]:
    """Each member's grants, in row order: what it is told (assigned and revoke)."""
    views: dict[str, list[_Row]] = {}
    for row in rows:
        views.setdefault(row[2], []).append(row)
    return views


def _roster(
    members: Iterable[GroupMember],
) -> set[tuple[str, str | None, tuple[str, ...], str | None]]:
    """Membership and subscriptions: what bumps the group epoch."""
    return {(m.member_id, m.instance_id, m.topics, m.pattern) for m in members}


def _gate_changes(
    group: str,
    old_rows: list[_Row],
    rows: list[_Row],
    topics: Mapping[str, int],
    generation: int,
) -> tuple[GateEntry, ...]:
    """Gates whose holder or grant epoch changed; a grant that ended closes its gate."""
    before = {(t, p): (m, e) for t, p, m, e, _ in old_rows}
    after = {(t, p): (m, e) for t, p, m, e, _ in rows}
    entries: list[GateEntry] = []
    for (topic, partition), holder in after.items():
        if before.get((topic, partition)) != holder:
            entries.append(GateEntry(group, topic, partition, holder[0], holder[1], generation))
    for topic, partition in before.keys() - after.keys():
        if partition < topics.get(topic, 0):  # a deleted partition needs no gate
            entries.append(GateEntry(group, topic, partition, None, 0, generation))
    return tuple(sorted(entries, key=lambda e: (e.topic, e.partition)))
