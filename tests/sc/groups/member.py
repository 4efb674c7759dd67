"""A raw-protocol group member for tests: join, heartbeat, release, commit, leave.

Not the client's group consumer: it speaks the member apis directly on its own
connection, so a test decides exactly when each step happens (and when not).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from spark_stream.net.connection import Connection
from spark_stream.net.stream import Stream
from spark_stream.protocol import control as c

__all__ = ["RawMember", "settle", "settled"]

_TIMEOUT = 10.0


class RawMember:
    """One member on its own connection to the SC public port."""

    def __init__(self, port: int, group: str, topics: list[str], **join: Any) -> None:
        self.port = port
        self.group = group
        self.topics = topics
        self.member_id = join.pop("member_id", str(uuid.uuid4()))
        self.join_args = join
        self.conn: Connection | None = None
        self.stream: Stream | None = None
        self.last: c.GroupAssignment | None = None

    async def connect(self) -> Connection:
        if self.conn is None or self.conn.closed:
            self.conn = await Connection.open("127.0.0.1", self.port)
        return self.conn

    async def join(self, member_epoch: int = 0, **extra: Any) -> c.GroupAssignment:
        """Open the ``GROUP_JOIN`` stream; return the first push."""
        conn = await self.connect()
        msg = c.GroupJoinRequest(
            self.group,
            self.member_id,
            self.topics,
            member_epoch=member_epoch,
            **{**self.join_args, **extra},
        )
        self.stream = await conn.stream(msg)
        return await self.next()

    async def next(self) -> c.GroupAssignment:
        """The next assignment push (raises the stream's error, e.g. fenced)."""
        assert self.stream is not None
        push = await self.stream.__anext__()
        self.last = c.GroupAssignment.from_meta(push.meta, b"")
        return self.last

    async def until(self, cond: Any) -> c.GroupAssignment:
        """Read pushes until ``cond(push)`` holds."""
        while True:
            push = await self.next()
            if cond(push):
                return push

    @property
    def epoch(self) -> int:
        assert self.last is not None
        return self.last.member_epoch

    def assigned(self) -> set[tuple[str, int]]:
        assert self.last is not None
        return {(g["topic"], g["partition"]) for g in self.last.assigned}

    def revoked(self) -> set[tuple[str, int]]:
        assert self.last is not None
        return {(g["topic"], g["partition"]) for g in self.last.revoke}

    async def heartbeat(self) -> c.GroupHeartbeatResponse:
        assert self.conn is not None
        owned = [{"topic": t, "partition": p} for t, p in sorted(self.assigned())]
        msg = c.GroupHeartbeatRequest(self.group, self.member_id, self.epoch, owned)
        reply = await self.conn.call(msg, timeout=_TIMEOUT)
        assert isinstance(reply, c.GroupHeartbeatResponse)
        return reply

    async def release(self, partitions: set[tuple[str, int]] | None = None) -> int:
        assert self.conn is not None
        tps = sorted(self.revoked() if partitions is None else partitions)
        msg = c.GroupReleaseRequest(
            self.group, self.member_id, self.epoch, [{"topic": t, "partition": p} for t, p in tps]
        )
        reply = await self.conn.call(msg, timeout=_TIMEOUT)
        assert isinstance(reply, c.GroupReleaseResponse)
        return reply.generation

    async def commit(self, offsets: dict[tuple[str, int], tuple[int, int]]) -> list[dict[str, Any]]:
        """Commit ``{(topic, p): (offset, grant_epoch)}``; the per-partition results."""
        assert self.conn is not None
        commits = [
            {"topic": t, "partition": p, "offset": o, "grantEpoch": e}
            for (t, p), (o, e) in offsets.items()
        ]
        reply = await self.conn.call(
            c.OffsetCommitRequest(self.group, self.member_id, commits), timeout=_TIMEOUT
        )
        assert isinstance(reply, c.OffsetCommitResponse)
        return reply.results

    def grant_epoch(self, tp: tuple[str, int]) -> int:
        assert self.last is not None
        for g in [*self.last.assigned, *self.last.revoke]:
            if (g["topic"], g["partition"]) == tp:
                return int(g["grantEpoch"])
        raise KeyError(tp)

    async def leave(self, member_epoch: int = -1) -> int:
        assert self.conn is not None
        msg = c.GroupLeaveRequest(self.group, self.member_id, member_epoch)
        reply = await self.conn.call(msg, timeout=_TIMEOUT)
        assert isinstance(reply, c.GroupLeaveResponse)
        return reply.generation

    async def close(self) -> None:
        """Drop the connection (a dead process, as the SC sees it)."""
        if self.conn is not None:
            await self.conn.close()


def settled(members: list[RawMember], total: int) -> bool:
    """No revoke held; the grants are disjoint, cover every partition, balanced."""
    owned = [m.assigned() for m in members]
    return (
        all(m.last is not None and not m.last.revoke for m in members)
        and sum(len(o) for o in owned) == total
        and len(set().union(*owned)) == total
        and max(map(len, owned)) - min(map(len, owned)) <= 1
    )


async def settle(members: list[RawMember], total: int = 6) -> None:
    """Read pushes, releasing every revoke, until the group is settled (bounded)."""
    members = [m for m in members if m.stream is not None]
    for _ in range(100):
        if settled(members, total):
            return
        for m in members:
            if m.last is not None and m.last.revoke:
                await m.release()
        for m in members:  # take whatever was pushed meanwhile
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    while True:
                        await m.next()
    raise AssertionError("the group did not settle")
