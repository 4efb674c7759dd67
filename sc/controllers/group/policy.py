"""Group policy: member identity rules (brief 4.4), epoch checks, derived views. Pure.

Identity, in the order ``decide_join`` applies it:

- every field is checked first (``InvalidRequestError`` naming it; unknown topics are
  ``UnknownTopicError``, except a resuming member's topics deleted since it subscribed);
  a progress-only (``external``) group takes no members;
- one member identity per connection per group (``MemberIdConflictError``);
- epoch 0 (a new member): an id live on another connection is a conflict
  (``MemberIdConflictError``); an instance id held by another live member is refused
  (``UnreleasedInstanceIdError``). A known id that is not live, or an instance id whose
  member is away, is an old incarnation: the joiner replaces it and inherits its
  partitions (under new grant epochs, so the old incarnation is fenced);
- epoch > 0 (a known member resuming): an unknown id must join again
  (``UnknownMemberError``); the epoch must be the member's current one, or the one
  before when everything it claims to own is still granted to it (the push that
  bumped it may have been lost; Kafka's rule), else ``FencedMemberError``. If the id is
  live on another connection, the new connection takes over and the old one is fenced.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sc.controllers.group.actions import GateEntry, Granted
from sc.controllers.group.assignor import TopicPartition
from sc.controllers.group.events import GroupSnapshot, MemberJoined
from spark_stream.errors import (
    FencedMemberError,
    InvalidRequestError,
    MemberIdConflictError,
    UnknownMemberError,
    UnknownTopicError,
    UnreleasedInstanceIdError,
)
from spark_stream.models import (
    MAX_CLIENT_FIELD,
    ConsumerGroupStatus,
    GroupKind,
    check_instance_id,
    check_member_epoch,
    check_member_id,
    check_pattern,
)

__all__ = [
    "JoinKind",
    "JoinDecision",
    "decide_join",
    "check_epoch",
    "view_of",
    "gates_of",
]


class JoinKind(StrEnum):
    """How a join is taken."""

    #: A new member (epoch 0), possibly replacing old incarnations.
    NEW = "new"
    #: A known member resumes on this connection; nothing moves.
    RESUME = "resume"
    #: A known member resumes while live on another connection: that one is fenced and
    #: the member's grants are re-stamped, so the old connection's fetches are refused.
    TAKEOVER = "takeover"


@dataclass(frozen=True, slots=True)
class JoinDecision:
    """The outcome of ``decide_join``.

    Attributes:
        kind: how the join is taken.
        replaces: member ids of old incarnations the joiner replaces (``NEW``).
        fenced_connection: the connection a ``TAKEOVER`` closes.
    """

    kind: JoinKind
    replaces: tuple[str, ...] = ()
    fenced_connection: int | None = None


def _check_fields(snap: GroupSnapshot, join: MemberJoined) -> None:
    check_member_id(join.member_id)
    check_member_epoch(join.member_epoch)
    if join.instance_id is not None:
        check_instance_id(join.instance_id)
    for name, value in (("client_id", join.client_id), ("host", join.host)):
        if len(value) > MAX_CLIENT_FIELD:
            raise InvalidRequestError(f"{name}: longer than {MAX_CLIENT_FIELD} characters")
    if join.pattern is not None:
        check_pattern(join.pattern)
    elif not join.topics:
        raise InvalidRequestError("topics: a member subscribes to at least one topic")
    # A resuming member may keep a topic deleted since it subscribed (it gets nothing
    # from it until a topic of that name exists again); a new subscription may not.
    known = snap.group.status.member(join.member_id) if join.member_epoch else None
    kept = set(known.topics) if known is not None else set()
    for topic in join.topics:
        if topic not in snap.topics and topic not in kept:
            raise UnknownTopicError(f"topics: no topic {topic!r}")
    if snap.group.spec.kind is GroupKind.EXTERNAL:
        raise InvalidRequestError(
            f"group: {snap.group.name!r} is a progress-only (external) group: "
            "members cannot join it"
        )


def decide_join(snap: GroupSnapshot, join: MemberJoined) -> JoinDecision:
    """Decide how a ``GROUP_JOIN`` is taken, or refuse it.

    Raises:
        InvalidRequestError: a malformed field (the message names it).
        UnknownTopicError: a subscribed topic does not exist.
        MemberIdConflictError: a second identity on this connection, or a new member
            whose id is live elsewhere.
        UnreleasedInstanceIdError: the instance id is held by another live member.
        UnknownMemberError: a resuming member the group does not know.
        FencedMemberError: a resuming member with a stale epoch or another instance id.
    """
    _check_fields(snap, join)
    group, status, sessions = snap.group.name, snap.group.status, snap.sessions
    for other, conn in sessions.items():
        if conn == join.connection and other != join.member_id:
            raise MemberIdConflictError(
                f"member_id: this connection is already member {other} of group {group!r}"
            )
    live = sessions.get(join.member_id)
    known = status.member(join.member_id)
    if join.member_epoch == 0:
        if live is not None and live != join.connection:
            raise MemberIdConflictError(
                f"member_id: {join.member_id} is live on another connection of group {group!r}"
            )
        replaces = [join.member_id] if known is not None else []
        if join.instance_id is not None:
            for member in status.members:
                if member.instance_id != join.instance_id or member.member_id == join.member_id:
                    continue
                if member.member_id in sessions:
                    raise UnreleasedInstanceIdError(
                        f"instance_id: {join.instance_id!r} is held by live member "
                        f"{member.member_id} of group {group!r}"
                    )
                replaces.append(member.member_id)
        return JoinDecision(JoinKind.NEW, tuple(sorted(replaces)))
    if known is None:
        raise UnknownMemberError(
            f"member_id: {join.member_id} is not a member of group {group!r}; "
            "join with member_epoch 0"
        )
    if join.instance_id != known.instance_id:
        raise FencedMemberError(
            f"instance_id: {join.instance_id!r} is not member {join.member_id}'s "
            f"({known.instance_id!r}); join with member_epoch 0"
        )
    check_epoch(status, join.member_id, join.member_epoch, join.owned)
    if live is not None and live != join.connection:
        return JoinDecision(JoinKind.TAKEOVER, fenced_connection=live)
    return JoinDecision(JoinKind.RESUME)


def check_epoch(
    status: ConsumerGroupStatus, member_id: str, epoch: int, owned: tuple[TopicPartition, ...]
) -> None:
    """Check a known member's epoch (a resume, and later every heartbeat).

    Accepted: the member's current epoch, or the previous one when every partition in
    ``owned`` is still granted to the member.

    Raises:
        UnknownMemberError: no such member.
        FencedMemberError: any other epoch.
    """
    member = status.member(member_id)
    if member is None:
        raise UnknownMemberError(f"member_id: {member_id} is not a member; join again")
    current = member.member_epoch
    if epoch == current:
        return
    held = {g.tp for g in status.grants_of(member_id)}
    if epoch == current - 1 and set(owned) <= held:
        return
    raise FencedMemberError(
        f"member_epoch: {epoch} is stale, member {member_id} is at {current}; "
        "join with member_epoch 0"
    )


def view_of(
    status: ConsumerGroupStatus, member_id: str
) -> tuple[tuple[Granted, ...], tuple[Granted, ...]]:
    """What a member is told: ``(assigned, revoke)``, each sorted."""
    assigned: list[Granted] = []
    revoke: list[Granted] = []
    for grant in status.grants_of(member_id):
        out = revoke if grant.revoking else assigned
        out.append(Granted(grant.topic, grant.partition, grant.grant_epoch))
    return tuple(assigned), tuple(revoke)


def gates_of(group: str, status: ConsumerGroupStatus) -> tuple[GateEntry, ...]:
    """Every gate of the group's plan (what a leader needs after a restart or a move).

    Partitions without a grant have no entry: a leader with no gate fails closed.
    """
    return tuple(
        GateEntry(group, g.topic, g.partition, g.member_id, g.grant_epoch, status.generation)
        for g in status.assignment
    )
