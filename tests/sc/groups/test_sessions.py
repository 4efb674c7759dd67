"""The coordinator's session table (``sc.groups.sessions``): binds, deadlines, streams.

No clock and no KV: each test passes ``now`` and reads back what the coordinator would.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from sc.groups.sessions import MemberStream, Sessions
from spark_stream.errors import FencedMemberError
from spark_stream.protocol import control as c
from tests.sc.controllers.group_helpers import GROUP, A, B, push


def _attached(sessions: Sessions, member_id: str = A, connection: int = 1) -> MemberStream:
    stream = MemberStream(GROUP, member_id, connection)
    sessions.attach(stream)
    return stream


def _queued(stream: MemberStream) -> list[c.GroupAssignment | BaseException | None]:
    items = []
    while not stream.queue.empty():
        items.append(stream.queue.get_nowait())
    return items


def test_a_push_binds_the_session_and_starts_its_deadline_once() -> None:
    sessions = Sessions()
    stream = _attached(sessions)
    action = push(A, 1, 2, 1, assigned=[(0, 1)])
    assert sessions.stream_for(action) is stream
    sessions.push(stream, action, now=10.0, session_s=5.0, rebalance_s=30.0)
    assert sessions.live(GROUP) == {A: 1}
    assert sessions.connection(GROUP, A) == 1
    assert sessions.due_sessions(14.9) == []
    assert sessions.due_sessions(15.0) == [(GROUP, A)]
    # A second push on the same binding leaves the deadline alone.
    sessions.push(stream, push(A, 1, 3, 1), now=20.0, session_s=5.0, rebalance_s=30.0)
    assert sessions.due_sessions(15.0) == [(GROUP, A)]
    assert [getattr(m, "generation", None) for m in _queued(stream)] == [2, 3]
    assert stream.last is not None and stream.last.generation == 3


@pytest.mark.parametrize(
    ("member_id", "connection", "found"),
    [(A, 1, True), (B, 1, False), (A, 2, False)],  # the stream's member, on its connection
)
def test_stream_for(member_id: str, connection: int, found: bool) -> None:
    sessions = Sessions()
    stream = _attached(sessions)
    assert (sessions.stream_for(push(member_id, connection, 1, 1)) is stream) is found


def test_a_revoke_starts_the_rebalance_deadline_and_a_push_without_one_ends_it() -> None:
    sessions = Sessions()
    stream = _attached(sessions)
    sessions.push(stream, push(A, 1, 2, 4, revoke=[(0, 1)]), 0.0, 5.0, 30.0)
    assert sessions.due_rebalances(29.0) == []
    assert sessions.due_rebalances(30.0) == [(GROUP, A, 4)]
    sessions.push(stream, push(A, 1, 3, 4), 1.0, 5.0, 30.0)
    assert sessions.due_rebalances(100.0) == []


def test_sync_drops_who_left_the_plan_with_its_timers() -> None:
    sessions = Sessions()
    for member_id, conn in ((A, 1), (B, 2)):
        stream = _attached(sessions, member_id, conn)
        sessions.push(stream, push(member_id, conn, 1, 1, revoke=[(0, 1)]), 0.0, 5.0, 5.0)
    sessions.sync(GROUP, {A})
    assert sessions.live(GROUP) == {A: 1}
    assert sessions.due_sessions(100.0) == [(GROUP, A)]
    assert sessions.due_rebalances(100.0) == [(GROUP, A, 1)]


@pytest.mark.parametrize(
    ("connection", "bound"),
    [(1, {}), (2, {A: 1}), (None, {A: 1})],  # only the session's own connection ends it
)
def test_unbind(connection: int | None, bound: dict[str, int]) -> None:
    sessions = Sessions()
    stream = _attached(sessions)
    sessions.push(stream, push(A, 1, 1, 1), 0.0, 5.0, 5.0)
    sessions.unbind(GROUP, A, connection)
    assert sessions.live(GROUP) == bound


def test_fence_ends_the_session_and_the_stream_with_the_error() -> None:
    sessions = Sessions()
    stream = _attached(sessions)
    sessions.push(stream, push(A, 1, 1, 1), 0.0, 5.0, 5.0)
    _queued(stream)
    error = FencedMemberError("member: stale")
    sessions.fence(GROUP, A, 1, error)
    assert sessions.live(GROUP) == {}
    assert _queued(stream) == [error]
    assert sessions.stream_for(push(A, 1, 1, 1)) is None


def test_attach_restore_and_end_stream() -> None:
    sessions = Sessions()
    first = _attached(sessions)
    second = MemberStream(GROUP, A, 1)
    assert sessions.attach(second) is first
    sessions.restore(second, first)  # the join was refused
    assert sessions.stream_for(push(A, 1, 1, 1)) is first
    sessions.restore(first, None)
    assert sessions.stream_for(push(A, 1, 1, 1)) is None
    third = _attached(sessions)
    sessions.end_stream(GROUP, 1)
    assert _queued(third) == [None]


def test_a_closed_connection_names_its_groups_and_members_once() -> None:
    sessions = Sessions()
    for group in ("b", "a"):
        stream = MemberStream(group, A, 7)
        sessions.attach(stream)
        sessions.push(stream, replace(push(A, 7, 1, 1), group=group), 0.0, 5.0, 5.0)
    assert sessions.closed(7) == ["a", "b"]
    assert sessions.closed(7) == []
    assert sessions.members_on("a", 7) == [A]
    assert sessions.members_on("a", 8) == []


def test_pushes_end_on_leave_and_raise_when_fenced() -> None:
    async def body() -> None:
        stream = MemberStream(GROUP, A, 1)
        msg = c.GroupAssignment(1, 1, 1000, 3000)
        stream.queue.put_nowait(msg)
        stream.queue.put_nowait(None)
        assert [m async for m in stream.pushes()] == [msg]
        fenced = MemberStream(GROUP, A, 1)
        fenced.queue.put_nowait(FencedMemberError("gone"))
        with pytest.raises(FencedMemberError, match="gone"):
            _ = [m async for m in fenced.pushes()]

    asyncio.run(body())
