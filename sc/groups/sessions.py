"""The group coordinator's member sessions in memory: who is bound where, until when.

A session is ``member_id -> connection`` within a group; a member's ``GROUP_JOIN``
stream (``MemberStream``) is keyed by ``(group, connection)`` and carries its pushes.
Two timers per member: its session deadline (moved by heartbeats; past it the member
expires) and, while it holds a revoke, its rebalance deadline. Nothing here reads a
clock or the KV: the coordinator (``sc.groups.coordinator``) passes ``now`` and the
group's timeouts in, and turns what falls due into group events. The table only
follows what the reducer decided; it never decides membership itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field

from sc.controllers.group import PushAssignment
from sc.groups.decisions import assignment_of
from spark_stream.protocol import control as c

__all__ = ["MemberStream", "Sessions"]

Member = tuple[str, str]  # (group, member_id)


@dataclass
class MemberStream:
    """One member's ``GROUP_JOIN`` stream: the pushes waiting to be sent."""

    group: str
    member_id: str
    connection: int
    queue: asyncio.Queue[c.GroupAssignment | BaseException | None] = field(
        default_factory=asyncio.Queue
    )
    last: c.GroupAssignment | None = None

    async def pushes(self) -> AsyncIterator[c.GroupAssignment]:
        """The pushes, in order; ends when the member leaves, raises when fenced."""
        while True:
            item = await self.queue.get()
            if item is None:  # the member left
                return
            if isinstance(item, BaseException):
                raise item
            yield item


class Sessions:
    """Every group's live sessions, their streams and their deadlines."""

    def __init__(self) -> None:
        self._bound: dict[str, dict[str, int]] = {}  # group -> member -> connection
        self._streams: dict[tuple[str, int], MemberStream] = {}  # (group, connection)
        # connection -> groups joined on it (a superset of where its sessions are), so a
        # closed connection looks at its own groups, not at every session
        self._conn_groups: dict[int, set[str]] = {}
        self._deadlines: dict[Member, float] = {}  # session deadlines
        self._rebalance: dict[Member, tuple[int, float]] = {}  # (epoch, deadline)

    # -- reads -------------------------------------------------------------------------

    def live(self, group: str) -> dict[str, int]:
        """``member_id -> connection`` of the group's members with a session now."""
        return dict(self._bound.get(group, {}))

    def connection(self, group: str, member_id: str) -> int | None:
        """The connection the member's session is on (``None``: no session)."""
        return self._bound.get(group, {}).get(member_id)

    def due_sessions(self, now: float) -> list[Member]:
        """The members whose session deadline is ``now`` or earlier."""
        return [key for key, deadline in self._deadlines.items() if deadline <= now]

    def due_rebalances(self, now: float) -> list[tuple[str, str, int]]:
        """``(group, member_id, epoch)`` of the revokes held past their deadline."""
        return [(g, m, epoch) for (g, m), (epoch, d) in self._rebalance.items() if d <= now]

    # -- deadlines ---------------------------------------------------------------------

    def set_deadline(self, group: str, member_id: str, deadline: float) -> None:
        """The member's session lasts until ``deadline`` (a heartbeat, a pause)."""
        self._deadlines[(group, member_id)] = deadline

    def clear_deadline(self, group: str, member_id: str) -> None:
        """Drop the member's session deadline (it is being expired)."""
        self._deadlines.pop((group, member_id), None)

    def clear_rebalance(self, group: str, member_id: str) -> None:
        """Drop the member's rebalance deadline (it is being timed out)."""
        self._rebalance.pop((group, member_id), None)

    # -- streams -----------------------------------------------------------------------

    def attach(self, stream: MemberStream) -> MemberStream | None:
        """Make ``stream`` its connection's stream in its group; returns the one before."""
        key = (stream.group, stream.connection)
        previous = self._streams.get(key)
        self._streams[key] = stream
        self._conn_groups.setdefault(stream.connection, set()).add(stream.group)
        return previous

    def restore(self, stream: MemberStream, previous: MemberStream | None) -> None:
        """Undo ``attach`` (the join was refused): ``previous`` is the stream again."""
        key = (stream.group, stream.connection)
        if previous is None:
            self._streams.pop(key, None)
        else:
            self._streams[key] = previous

    def end_stream(self, group: str, connection: int) -> None:
        """The member left: its stream ends (the client sees the end of ``pushes``)."""
        stream = self._streams.pop((group, connection), None)
        if stream is not None:
            stream.queue.put_nowait(None)

    def drop_stream(self, group: str, connection: int) -> None:
        """Forget the stream of a closed connection (nobody reads it any more)."""
        self._streams.pop((group, connection), None)

    def closed(self, connection: int) -> list[str]:
        """The groups joined on a connection that closed, by name (forgotten here)."""
        return sorted(self._conn_groups.pop(connection, set()))

    def members_on(self, group: str, connection: int) -> list[str]:
        """The group's members whose session is on ``connection``."""
        return [m for m, conn in self._bound.get(group, {}).items() if conn == connection]

    # -- following the reducer -----------------------------------------------------------

    def sync(self, group: str, members: Collection[str]) -> None:
        """Sessions follow the published member list: who left it loses its session and
        timers (joins bind on their first push)."""
        bound = self._bound.setdefault(group, {})
        for member_id in list(bound):
            if member_id not in members:
                bound.pop(member_id)
        for timers in (self._deadlines, self._rebalance):
            for key in [k for k in timers if k[0] == group and k[1] not in members]:
                del timers[key]

    def unbind(self, group: str, member_id: str, connection: int | None) -> None:
        """End a session (if still on ``connection``): the member is away, not gone."""
        bound = self._bound.get(group, {})
        if connection is not None and bound.get(member_id) == connection:
            bound.pop(member_id)

    def fence(self, group: str, member_id: str, connection: int, error: BaseException) -> None:
        """End the member's session on ``connection`` and its stream with ``error``."""
        self.unbind(group, member_id, connection)
        stream = self._streams.pop((group, connection), None)
        if stream is not None:
            stream.queue.put_nowait(error)

    def stream_for(self, action: PushAssignment) -> MemberStream | None:
        """The stream a push goes to (``None``: the member is not reading there)."""
        stream = self._streams.get((action.group, action.connection))
        if stream is None or stream.member_id != action.member_id:
            return None
        return stream

    def push(
        self,
        stream: MemberStream,
        action: PushAssignment,
        now: float,
        session_s: float,
        rebalance_s: float,
    ) -> None:
        """Queue a push on ``stream`` (from ``stream_for``).

        The reducer pushes to a connection only once it accepted the member there, so a
        push also binds the session (a new binding's deadline: ``now + session_s``). A
        push with a revoke starts the rebalance deadline (``now + rebalance_s``); one
        without ends it.
        """
        bound = self._bound.setdefault(action.group, {})
        if bound.get(action.member_id) != action.connection:
            bound[action.member_id] = action.connection
            self._deadlines[(action.group, action.member_id)] = now + session_s
        push = assignment_of(action)
        stream.last = push
        stream.queue.put_nowait(push)
        key = (action.group, action.member_id)
        if action.revoke:
            self._rebalance[key] = (action.member_epoch, now + rebalance_s)
        else:
            self._rebalance.pop(key, None)
