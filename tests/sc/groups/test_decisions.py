"""The coordinator's pure decisions (``sc.groups.decisions``), one table each."""

from __future__ import annotations

import pytest

from sc.controllers.group import (
    GroupEvent,
    MemberLeft,
    PublishPlan,
    TopicDeleted,
    TopicPartitionsChanged,
)
from sc.groups.decisions import (
    assignment_of,
    gate_needs,
    groups_touched,
    heartbeat_reply,
    join_spec,
    owned_partitions,
    topic_events,
    view_push,
)
from sc.kv import ChangeType
from sc.local_store import Change
from spark_stream.errors import InvalidRequestError
from spark_stream.models import ConsumerGroupSpec, GroupMember, Topic, TopicSpec
from spark_stream.protocol import control as c
from tests.sc.controllers.group_helpers import GROUP, A, B, grants, group, member, push, status


def _topic(name: str, partitions: int) -> Topic:
    return Topic.new(name, TopicSpec(partitions=partitions))


def _change(name: str, old: int | None, new: int | None, kind: str = "Topic") -> Change:
    before = None if old is None else _topic(name, old)
    after = None if new is None else _topic(name, new)
    kind_of = ChangeType.ADDED if old is None else ChangeType.MODIFIED
    return Change(kind, name, ChangeType.DELETED if new is None else kind_of, before, after, 1)


@pytest.mark.parametrize(
    ("changes", "events"),
    [
        ([_change("t", None, 3)], [TopicPartitionsChanged("t", 3)]),  # created
        ([_change("t", 3, 5)], [TopicPartitionsChanged("t", 5)]),  # grown
        ([_change("t", 3, 3)], []),  # its partitions did not change
        ([_change("t", 3, None)], [TopicDeleted("t")]),
        ([_change("t", 3, 3, kind="Spu")], []),  # not a topic
        (
            [_change("a", None, 1), _change("b", 2, None)],
            [TopicPartitionsChanged("a", 1), TopicDeleted("b")],
        ),
    ],
)
def test_topic_events(changes: list[Change], events: list[GroupEvent]) -> None:
    assert topic_events(changes) == events


def test_a_topic_event_goes_to_the_groups_holding_or_subscribing_to_the_topic() -> None:
    holds = group(status(1, 1, [member(A, topics=("t",))], grants(A, 1, [0, 1])))
    subscribes = group(status(1, 1, [member(B, topics=("u",))]))
    patterned = group(
        status(1, 1, ()).model_copy(
            update={"members": (GroupMember(member_id=A, member_epoch=1, pattern="u.*"),)}
        )
    )
    other = group(status(1, 1, [member(B, topics=("x",))]))
    groups = {"holds": holds, "subscribes": subscribes, "patterned": patterned, "other": other}
    events: list[GroupEvent] = [TopicPartitionsChanged("t", 4), TopicDeleted("u")]
    assert groups_touched(groups, events) == [
        ("holds", events[0]),
        ("subscribes", events[1]),
        ("patterned", events[1]),
    ]
    assert groups_touched(groups, []) == []


def _join(session_ms: int | None = None, rebalance_ms: int | None = None) -> c.GroupJoinRequest:
    return c.GroupJoinRequest(
        GROUP, A, ["t"], session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms
    )


DEFAULTS = ConsumerGroupSpec(
    session_timeout_ms=45_000, heartbeat_interval_ms=3_000, rebalance_timeout_ms=60_000
)


@pytest.mark.parametrize(
    ("msg", "session", "heartbeat", "rebalance"),
    [
        (_join(), 45_000, 3_000, 60_000),  # the defaults
        (_join(session_ms=30_000), 30_000, 3_000, 60_000),  # a third is longer: kept
        (_join(session_ms=6_000), 6_000, 2_000, 60_000),  # a third of the session
        (_join(session_ms=3_000), 3_000, 1_000, 60_000),
        (_join(rebalance_ms=5_000), 45_000, 3_000, 5_000),
    ],
)
def test_join_spec(msg: c.GroupJoinRequest, session: int, heartbeat: int, rebalance: int) -> None:
    spec = join_spec(DEFAULTS, msg)
    assert (spec.session_timeout_ms, spec.heartbeat_interval_ms) == (session, heartbeat)
    assert spec.rebalance_timeout_ms == rebalance
    assert spec.kind == DEFAULTS.kind


def test_join_spec_only_shortens_the_heartbeat() -> None:
    short = ConsumerGroupSpec(session_timeout_ms=45_000, heartbeat_interval_ms=600)
    assert join_spec(short, _join(session_ms=3_000)).heartbeat_interval_ms == 600
    long = ConsumerGroupSpec(session_timeout_ms=45_000, heartbeat_interval_ms=5_000)
    assert join_spec(long, _join(session_ms=3_000)).heartbeat_interval_ms == 1_000


def test_gate_needs_are_the_pushed_grants() -> None:
    st = status(1, 1, [member(A)])
    actions = [
        PublishPlan(GROUP, st, 5),
        push(A, 1, 2, 1, assigned=[(0, 3), (1, 4)], revoke=[(2, 1)]),
        push(B, 2, 2, 1, assigned=[(5, 7)]),
    ]
    assert gate_needs(actions) == {("t", 0): 3, ("t", 1): 4, ("t", 5): 7}
    assert gate_needs([PublishPlan(GROUP, st, 5)]) == {}


def test_view_push_tells_a_member_where_it_stands() -> None:
    st = status(
        4, 2, [member(A, epoch=3), member(B)], grants(A, 2, [0]) + grants(B, 1, [1], revoking=True)
    )
    g = group(st)
    assert view_push(g, A, 7) == push(A, 7, 4, 3, assigned=[(0, 2)])
    assert view_push(g, B, 8) == push(B, 8, 4, 1, revoke=[(1, 1)])
    assert view_push(g, "cccccccc-0000-4000-8000-000000000003", 9) is None


def test_assignment_of_a_push() -> None:
    msg = assignment_of(push(A, 1, 6, 2, assigned=[(0, 3)], revoke=[(1, 2)]))
    assert msg == c.GroupAssignment(
        6,
        2,
        ConsumerGroupSpec().heartbeat_interval_ms,
        ConsumerGroupSpec().session_timeout_ms,
        [{"topic": "t", "partition": 0, "grantEpoch": 3}],
        [{"topic": "t", "partition": 1, "grantEpoch": 2}],
    )


def test_heartbeat_reply() -> None:
    g = group(status(3, 2, [member(A, epoch=2)], grants(A, 2, [0, 1])))
    assert heartbeat_reply(g, A) == c.GroupHeartbeatResponse(
        3,
        2,
        [
            {"topic": "t", "partition": 0, "grantEpoch": 2},
            {"topic": "t", "partition": 1, "grantEpoch": 2},
        ],
        [],
    )
    with pytest.raises(ValueError, match="not a member"):
        heartbeat_reply(g, B)


def test_owned_partitions_checks_the_field() -> None:
    assert owned_partitions([{"topic": "t", "partition": 2}]) == (("t", 2),)
    with pytest.raises(InvalidRequestError, match="owned"):
        owned_partitions([{"topic": "t"}])


def test_a_left_member_is_not_a_topic_event() -> None:
    assert groups_touched({"g": group(status(1, 1, [member(A)]))}, [MemberLeft(A, 1, -1)]) == []
