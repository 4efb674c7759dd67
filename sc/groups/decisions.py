"""The group coordinator's pure decisions, apart from its I/O loop (``sc.groups.coordinator``).

Which groups a topic change concerns, the spec of a group a join creates, the gates to
wait for before pushing grants, and what a push or a heartbeat reply tells a member:
functions of their arguments only (no clock, no KV, no sessions), so each is checked by
a table (``tests/sc/groups/test_decisions.py``). The reducer (``sc.controllers.group``)
decides what a group event does; these decide what the coordinator around it does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sc.controllers.group import (
    GroupAction,
    GroupEvent,
    PushAssignment,
    TopicDeleted,
    TopicPartitionsChanged,
    view_of,
)
from sc.local_store import Change
from spark_stream.models import ConsumerGroup, ConsumerGroupSpec, Topic
from spark_stream.protocol import control as c

__all__ = [
    "assignment_of",
    "gate_needs",
    "groups_touched",
    "heartbeat_reply",
    "join_spec",
    "owned_partitions",
    "topic_events",
    "view_push",
]

#: The shortest heartbeat interval a join's own session timeout brings the group to.
MIN_HEARTBEAT_MS = 500


def topic_events(changes: Iterable[Change]) -> list[GroupEvent]:
    """The group events in a batch of mirror changes: a topic created or resized
    (``TopicPartitionsChanged``), or deleted (``TopicDeleted``); anything else, none."""
    events: list[GroupEvent] = []
    for change in changes:
        if change.kind != Topic.kind:
            continue
        if isinstance(change.new, Topic):
            old = change.old
            if not isinstance(old, Topic) or old.spec.partitions != change.new.spec.partitions:
                events.append(TopicPartitionsChanged(change.name, change.new.spec.partitions))
        elif change.new is None:
            events.append(TopicDeleted(change.name))
    return events


def groups_touched(
    groups: Mapping[str, ConsumerGroup], events: Sequence[GroupEvent]
) -> list[tuple[str, GroupEvent]]:
    """The ``(group, event)`` pairs to reduce: a topic event goes to each group that
    holds grants on the topic or has a member subscribed to it (by name or pattern)."""
    named = {getattr(event, "topic", "") for event in events}
    touched: list[tuple[str, GroupEvent]] = []
    for name, obj in groups.items():
        topics = {g.topic for g in obj.status.assignment}
        topics.update(t for m in obj.status.members for t in m.subscribed(named))
        touched += [(name, e) for e in events if getattr(e, "topic", None) in topics]
    return touched


def join_spec(defaults: ConsumerGroupSpec, msg: c.GroupJoinRequest) -> ConsumerGroupSpec:
    """The spec of the group a join creates: the defaults, with the joiner's timeouts.

    A joiner's session timeout also shortens the heartbeat interval to a third of it
    (at least ``MIN_HEARTBEAT_MS``), so three heartbeats fit in one session.
    """
    spec: dict[str, Any] = defaults.model_dump()
    if msg.session_timeout_ms is not None:
        spec["session_timeout_ms"] = msg.session_timeout_ms
        spec["heartbeat_interval_ms"] = min(
            spec["heartbeat_interval_ms"], max(MIN_HEARTBEAT_MS, msg.session_timeout_ms // 3)
        )
    if msg.rebalance_timeout_ms is not None:
        spec["rebalance_timeout_ms"] = msg.rebalance_timeout_ms
    return ConsumerGroupSpec(**spec)


def gate_needs(actions: Iterable[GroupAction]) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> grant epoch`` of every grant the actions push: the gates
    the partitions' leaders should hold before the members hear of them."""
    needs: dict[tuple[str, int], int] = {}
    for action in actions:
        if isinstance(action, PushAssignment):
            needs.update((g.tp, g.grant_epoch) for g in action.assigned)
    return needs


def view_push(group: ConsumerGroup, member_id: str, connection: int) -> PushAssignment | None:
    """The push that tells a member where it stands in ``group`` as published (a join
    that changed nothing); ``None`` when it is not a member."""
    member = group.status.member(member_id)
    if member is None:
        return None
    assigned, revoke = view_of(group.status, member_id)
    return PushAssignment(
        group.name,
        member_id,
        connection,
        group.status.generation,
        member.member_epoch,
        assigned,
        revoke,
        group.spec.heartbeat_interval_ms,
        group.spec.session_timeout_ms,
    )


def assignment_of(action: PushAssignment) -> c.GroupAssignment:
    """The ``GROUP_ASSIGNMENT`` message a push sends."""
    return c.GroupAssignment(
        action.generation,
        action.member_epoch,
        action.heartbeat_interval_ms,
        action.session_timeout_ms,
        c.grant_list(action.assigned),
        c.grant_list(action.revoke),
    )


def heartbeat_reply(group: ConsumerGroup, member_id: str) -> c.GroupHeartbeatResponse:
    """A member's heartbeat answer: the generation, its epoch and its grants.

    Raises:
        ValueError: ``member_id`` is not a member (the caller checks the epoch first).
    """
    member = group.status.member(member_id)
    if member is None:
        raise ValueError(f"member_id: {member_id} is not a member of {group.name!r}")
    assigned, revoke = view_of(group.status, member_id)
    return c.GroupHeartbeatResponse(
        group.status.generation,
        member.member_epoch,
        c.grant_list(assigned),
        c.grant_list(revoke),
    )


def owned_partitions(value: list[dict[str, Any]]) -> tuple[tuple[str, int], ...]:
    """The partitions a heartbeat says the member holds (its ``owned`` field)."""
    return c.tp_list(value, "owned")
