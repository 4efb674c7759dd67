"""The SC control plane under many members: heartbeat round trips and commit throughput.

Raw-protocol members in this process (no data path: they never fetch), each on its own
SC connection, as ``tests/sc/groups/member.py`` speaks it: ``GROUP_JOIN`` and a task that
follows the pushes (releasing every revoke at once), then heartbeats from a random
phase, each a jittered ``heartbeat_ms`` after the last reply as the group consumer sends
them (``heartbeat_pause``), so 1,000 members make about 1,000 heartbeats/s.
The members are spread over ``groups`` groups of one topic. Commits come from members
holding grants, each committing its own partition, one offset higher every time, many
at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from spark_stream.client.consumer._group_session import heartbeat_pause
from spark_stream.errors import FluvioError
from spark_stream.net.connection import Connection
from spark_stream.net.stream import Stream
from spark_stream.protocol import control as c

__all__ = ["ControlPlane"]

_TIMEOUT = 10.0


class _Member:
    """One raw member: joins, follows pushes, heartbeats, commits."""

    def __init__(self, port: int, group: str, topic: str) -> None:
        self.port, self.group, self.topic = port, group, topic
        self.member_id = str(uuid.uuid4())
        self.conn: Connection | None = None
        self.last: c.GroupAssignment | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.next_offset = 1

    async def join(self, record: Callable[[float], None]) -> None:
        self.conn = await Connection.open("127.0.0.1", self.port, timeout=_TIMEOUT)
        stream = await self.conn.stream(
            c.GroupJoinRequest(self.group, self.member_id, [self.topic])
        )
        self.last = c.GroupAssignment.from_meta((await stream.__anext__()).meta, b"")
        loop = asyncio.get_running_loop()
        self.tasks = [loop.create_task(self._follow(stream)), loop.create_task(self._beat(record))]

    def owned(self) -> list[dict[str, Any]]:
        assert self.last is not None
        return [{"topic": g["topic"], "partition": g["partition"]} for g in self.last.assigned]

    def settled(self) -> bool:
        return self.last is not None and not self.last.revoke

    async def _follow(self, stream: Stream) -> None:
        assert self.conn is not None
        async for push in stream:
            self.last = c.GroupAssignment.from_meta(push.meta, b"")
            if self.last.revoke:
                parts = [
                    {"topic": g["topic"], "partition": g["partition"]} for g in self.last.revoke
                ]
                msg = c.GroupReleaseRequest(
                    self.group, self.member_id, self.last.member_epoch, parts
                )
                with contextlib.suppress(FluvioError):
                    await self.conn.call(msg, timeout=_TIMEOUT)

    async def _beat(self, record: Callable[[float], None]) -> None:
        """Heartbeats as the group consumer sends them: the next one a (jittered)
        interval after the reply."""
        assert self.conn is not None and self.last is not None
        await asyncio.sleep(random.random() * self.last.heartbeat_ms / 1000)
        while True:
            assert self.last is not None
            msg = c.GroupHeartbeatRequest(
                self.group, self.member_id, self.last.member_epoch, self.owned()
            )
            start = time.perf_counter()
            try:
                await self.conn.call(msg, timeout=_TIMEOUT)
            except FluvioError:
                record(-1.0)  # counted as an error, not a sample
            else:
                record((time.perf_counter() - start) * 1000)
            await asyncio.sleep(heartbeat_pause(self.last.heartbeat_ms / 1000, random.random()))

    async def commit(self) -> None:
        """Commit this member's first partition one offset further (must be accepted)."""
        assert self.conn is not None and self.last is not None
        grant = self.last.assigned[0]
        commit = {
            "topic": grant["topic"],
            "partition": grant["partition"],
            "offset": self.next_offset,
            "grantEpoch": grant["grantEpoch"],
        }
        reply = await self.conn.call(
            c.OffsetCommitRequest(self.group, self.member_id, [commit]), timeout=_TIMEOUT
        )
        assert isinstance(reply, c.OffsetCommitResponse)
        if reply.results[0].get("errorCode", 0) != 0:
            raise RuntimeError(f"commit refused: {reply.results[0]}")
        self.next_offset += 1

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.conn is not None:
            await self.conn.close()


class ControlPlane:
    """``members`` raw members in ``groups`` groups of ``topic`` (``partitions`` each)."""

    def __init__(self, port: int, topic: str, partitions: int, members: int, groups: int) -> None:
        self.partitions = partitions
        self.groups = [
            [_Member(port, f"ctl-{g}", topic) for _ in range(members // groups)]
            for g in range(groups)
        ]
        self.samples: list[float] | None = None  # heartbeat RTTs (ms) while recording
        self.errors = 0

    def _record(self, rtt_ms: float) -> None:
        if self.samples is None:
            return
        if rtt_ms < 0:
            self.errors += 1
        else:
            self.samples.append(rtt_ms)

    async def join(self, limit_s: float) -> None:
        """Join every member (groups in parallel, members of a group one by one) and wait
        until every group's partitions are granted with no revoke pending."""

        async def fill(group: list[_Member]) -> None:
            for member in group:
                await member.join(self._record)

        async with asyncio.timeout(limit_s):
            await asyncio.gather(*(fill(g) for g in self.groups))
            while not all(self._settled(g) for g in self.groups):  # noqa: ASYNC110
                await asyncio.sleep(0.1)  # members release revokes as pushes arrive

    def _settled(self, group: list[_Member]) -> bool:
        if not all(m.settled() for m in group):
            return False
        owned = [(g["partition"]) for m in group for g in m.owned()]
        return len(owned) == self.partitions and len(set(owned)) == self.partitions

    async def heartbeats(self, seconds: float) -> tuple[list[float], int, list[float]]:
        """Heartbeat RTTs (ms) of every member for ``seconds``, the failed ones, and this
        process's own loop lag meanwhile (ms; a late wakeup here delays a reply's reading
        as much as a slow SC does)."""
        lags: list[float] = []

        async def sample() -> None:
            while True:
                start = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append((time.perf_counter() - start - 0.001) * 1000)

        self.samples, self.errors = [], 0
        sampler = asyncio.get_running_loop().create_task(sample())
        await asyncio.sleep(seconds)
        sampler.cancel()
        samples, errors = self.samples, self.errors
        self.samples = None
        return samples, errors, lags

    async def commits(self, committers: int, seconds: float) -> tuple[float, list[float]]:
        """(commits/s, heartbeat RTTs meanwhile) with ``committers`` members committing."""
        holders = [m for g in self.groups for m in g if m.last is not None and m.last.assigned]
        chosen = holders[:committers]
        deadline = time.perf_counter() + seconds
        done = [0]

        async def loop(member: _Member) -> None:
            while time.perf_counter() < deadline:
                await member.commit()
                done[0] += 1

        self.samples, self.errors = [], 0
        start = time.perf_counter()
        await asyncio.gather(*(loop(m) for m in chosen))
        elapsed = time.perf_counter() - start
        samples, self.samples = self.samples, None
        return done[0] / elapsed, samples

    async def close(self) -> None:
        await asyncio.gather(*(m.close() for g in self.groups for m in g))


def p99(samples: list[float]) -> float:
    return round(float(np.percentile(samples, 99)), 3) if samples else float("nan")
