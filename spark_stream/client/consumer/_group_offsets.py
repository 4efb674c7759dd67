"""Assignment, seek, pause and offsets of ``AsyncGroupConsumer`` (the application's
side of the member's state; the membership itself is ``_group_member.py``, the pumps
``group.py``).

``GroupPartitions`` holds what the member has per partition: its pump (the grant and
where reading restarts), its position (the next offset handed out) and the offset the
group committed. Seek, pause and resume replace or halt pumps under the member's lock;
commits go to the SC in one ``OFFSET_COMMIT`` per call, fenced by each grant's epoch.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from spark_stream.client.consumer._group_parts import (
    CommitCallback,
    Item,
    Pump,
    TopicPartition,
    call_back,
)
from spark_stream.client.consumer.offset import Offset, OffsetKind
from spark_stream.errors import (
    ConnectionClosedError,
    FencedMemberError,
    FluvioError,
    InvalidRequestError,
    error_for_code,
)
from spark_stream.net.connection import Connection
from spark_stream.protocol import control as c

__all__ = ["GroupPartitions"]

TIMEOUT = 10.0  # seconds a request to the SC may take
RETRY_S = 0.05  # first reconnect backoff; a failed commit's retry interval


class GroupPartitions:
    """The per-partition state and API of a group member (a base of
    ``AsyncGroupConsumer``, which sets these attributes and runs the pumps)."""

    group: str
    topics: list[str]
    member_id: str
    _conn: Connection | None
    _connected: asyncio.Event
    _pumps: dict[TopicPartition, Pump]
    _queue: asyncio.Queue[Item]
    _positions: dict[TopicPartition, int]
    _committed: dict[TopicPartition, int]
    _lock: asyncio.Lock
    _tasks: list[asyncio.Task[None]]
    _async_error: BaseException | None
    _left: bool

    def _launch(self, pump: Pump) -> None:
        """Make ``pump`` the partition's and start its task (the member's pumps)."""
        raise NotImplementedError

    async def _halt(self, pump: Pump, *, paused: bool = False, revoking: bool = False) -> None:
        """Stop ``pump``'s task; it keeps its grant and hands out nothing more."""
        pump.paused = pump.paused or paused
        pump.revoking = pump.revoking or revoking
        if pump.task is not None:
            pump.task.cancel()
            await asyncio.gather(pump.task, return_exceptions=True)
            pump.task = None

    async def _stop(self, tp: TopicPartition) -> None:
        pump = self._pumps.pop(tp, None)
        if pump is not None:
            await self._halt(pump)
            self._wake_reader()

    def _wake_reader(self) -> None:
        """Make a reader waiting on the queue look at its end condition again: a pump
        went away or starts at its end, so no batch of it will come to wake it. (A full
        queue wakes it anyway.)"""
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(Item(None))

    def _restarted(self, pump: Pump, *, paused: bool) -> Pump:
        """A new pump for ``pump``'s grant, starting at its position (if known)."""
        position = self._positions.get(pump.tp)
        start = pump.start if position is None else Offset.absolute(position)
        return Pump(pump.tp, pump.grant_epoch, start=start, paused=paused)

    async def _stop_all(self, tps: list[TopicPartition]) -> None:
        """Stop these partitions' pumps. Every one is unlisted before any is waited for:
        a batch queued by a pump still listed would be handed out meanwhile."""
        pumps = [pump for tp in tps if (pump := self._pumps.pop(tp, None)) is not None]
        await asyncio.gather(*(self._halt(pump) for pump in pumps))
        if pumps:
            self._wake_reader()

    async def _drop_all(self) -> None:
        await self._stop_all(list(self._pumps))

    # -- assignment, seek, pause ---------------------------------------------------------

    def assignment(self) -> list[TopicPartition]:
        """The partitions this member holds now (paused ones too), sorted."""
        return sorted(self._pumps)

    def _tp(self, partition: int | TopicPartition) -> TopicPartition:
        """``(topic, partition)``; a bare index only for a member of one topic.

        Raises:
            InvalidRequestError: a bare index on a member of several topics.
        """
        if not isinstance(partition, int):
            return partition
        if len(self.topics) > 1:
            raise InvalidRequestError(
                f"partition: {partition} is ambiguous for a member of topics {self.topics}; "
                "pass (topic, partition)"
            )
        return (self.topics[0], partition)

    def _held(self, partition: int | TopicPartition) -> Pump:
        tp = self._tp(partition)
        pump = self._pumps.get(tp)
        if pump is None:
            raise InvalidRequestError(f"partition: {tp[0]}-{tp[1]} is not assigned to this member")
        return pump

    def position(self, partition: int | TopicPartition) -> int | None:
        """The next offset ``stream_batches`` hands out for the partition (None: unknown)."""
        return self._positions.get(self._tp(partition))

    async def seek(self, partition: int | TopicPartition, offset: int | Offset) -> None:
        """Hand out the partition from ``offset`` on (an absolute offset, or an ``Offset``
        such as ``Offset.beginning()``). Batches already queued for it are dropped. The
        offset is resolved at the leader when the partition next reads (at once unless
        paused); one outside the log ends ``stream_batches`` with
        ``OffsetOutOfRangeError``. Commit as usual: the group's offset may not go back.

        Raises:
            InvalidRequestError: the partition is not assigned to this member.
        """
        start = Offset.absolute(offset) if isinstance(offset, int) else offset
        async with self._lock:
            old = self._held(partition)
            await self._halt(old)
            if start.kind is OffsetKind.ABSOLUTE:
                self._positions[old.tp] = start.value
            else:
                self._positions.pop(old.tp, None)  # known once resolved
            self._launch(Pump(old.tp, old.grant_epoch, start=start, paused=old.paused))

    async def pause(self, partitions: list[int | TopicPartition]) -> None:
        """Stop handing out these partitions; they stay assigned (grant, heartbeats,
        commits) until ``resume``. Batches already queued are dropped, not counted.

        Raises:
            InvalidRequestError: a partition is not assigned to this member.
        """
        async with self._lock:
            pumps = [self._held(p) for p in partitions]
            for pump in pumps:
                await self._halt(pump, paused=True)

    async def resume(self, partitions: list[int | TopicPartition]) -> None:
        """Hand out these paused partitions again, from their positions.

        Raises:
            InvalidRequestError: a partition is not assigned to this member.
        """
        async with self._lock:
            pumps = [self._held(p) for p in partitions]
            for old in pumps:
                if old.paused:
                    self._launch(self._restarted(old, paused=False))

    def paused(self) -> list[TopicPartition]:
        """The paused partitions, sorted."""
        return sorted(tp for tp, pump in self._pumps.items() if pump.paused)

    # -- offsets -----------------------------------------------------------------------

    async def committed(self, partition: int | TopicPartition) -> int | None:
        """The group's committed offset of the partition (None: none)."""
        topic, p = self._tp(partition)
        conn = await self._connection()
        request = c.OffsetFetchRequest(self.group, [{"topic": topic, "partition": p}])
        reply = await conn.call(request, timeout=TIMEOUT)
        assert isinstance(reply, c.OffsetFetchResponse)
        for item in reply.offsets:
            if (item["topic"], item["partition"]) == (topic, p):
                return int(item["offset"])
        return None

    async def _connection(self) -> Connection:
        """The SC connection, waiting (bounded) while the member reconnects."""
        try:
            async with asyncio.timeout(TIMEOUT):
                await self._connected.wait()
        except TimeoutError:
            raise ConnectionClosedError(f"group {self.group}: no SC connection") from None
        assert self._conn is not None
        return self._conn

    async def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        """Commit the positions of every held partition, or the offsets given (the next
        offset to read, as Kafka). While the SC is away it waits for the reconnect and
        retries (bounded by the request timeout). Raises a failed ``commit_async``'s
        error first (when it had no callback).

        Raises:
            FencedMemberError: one of ``offsets`` is not this member's grant any more
                (a partition fenced while committing positions is dropped instead).
            OffsetOutOfRangeError: an offset below the group's committed one.
            ConnectionClosedError: the SC stayed away (retriable).
        """
        if self._async_error is not None:
            error, self._async_error = self._async_error, None
            raise error
        if self._left:
            raise FencedMemberError(
                f"group {self.group}: this member left (max_poll_interval_ms); pull to rejoin"
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while True:
            await self._connection()
            try:
                async with self._lock:
                    await self._commit_locked(self._commit_plan(offsets))
                return
            except FluvioError as exc:
                if not exc.retriable or loop.time() > deadline:
                    raise
                await asyncio.sleep(RETRY_S)

    def commit_async(
        self,
        offsets: dict[TopicPartition, int] | None = None,
        callback: CommitCallback | None = None,
    ) -> asyncio.Task[None]:
        """Start a ``commit`` and return at once (the task, if the caller wants to wait).

        Its error goes to ``callback(offsets, error)`` (``error`` None: committed), or,
        without a callback, is raised by the next ``commit``/``commit_async``.
        """
        if self._async_error is not None:
            error, self._async_error = self._async_error, None
            raise error
        sent = dict(offsets) if offsets is not None else self._held_positions()

        async def run() -> None:
            error: BaseException | None = None
            try:
                await self.commit(offsets)
            except FluvioError as exc:
                error = exc
            if callback is not None:
                await call_back(callback, sent, error)
            elif error is not None:
                self._async_error = error

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.append(task)
        task.add_done_callback(self._forget_task)
        return task

    def _held_positions(self) -> dict[TopicPartition, int]:
        return {tp: self._positions[tp] for tp in self._pumps if tp in self._positions}

    def _forget_task(self, task: asyncio.Task[None]) -> None:
        with contextlib.suppress(ValueError):
            self._tasks.remove(task)

    def _commit_plan(
        self, offsets: dict[TopicPartition, int] | None = None
    ) -> dict[TopicPartition, tuple[int, int]]:
        """``(offset, grant_epoch)`` to commit per partition: the given ``offsets`` (the
        positions do not move), else the held partitions' positions past the committed
        offset (a seek back is not committed until the application commits it itself).

        Raises:
            FencedMemberError: one of ``offsets`` is not held by this member.
        """
        plan = {}
        if offsets is not None:
            for tp, offset in offsets.items():
                pump = self._pumps.get(tp)
                if pump is None:
                    raise FencedMemberError(f"{tp[0]}-{tp[1]} is not assigned to this member")
                plan[tp] = (offset, pump.grant_epoch)
            return plan
        for tp, pump in self._pumps.items():
            position, committed = self._positions.get(tp), self._committed.get(tp)
            if position is not None and (committed is None or position > committed):
                plan[tp] = (position, pump.grant_epoch)
        return plan

    async def _commit_locked(self, plan: dict[TopicPartition, tuple[int, int]]) -> None:
        """Send ``plan`` (``_commit_plan``) in one ``OFFSET_COMMIT``, skipping what is
        committed already; a fenced partition's pump is marked done."""
        commits: list[dict[str, Any]] = [
            {"topic": t, "partition": p, "offset": offset, "grantEpoch": epoch}
            for (t, p), (offset, epoch) in sorted(plan.items())
            if self._committed.get((t, p)) != offset
        ]
        if not commits:
            return
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionClosedError(f"group {self.group}: no SC connection")
        request = c.OffsetCommitRequest(self.group, self.member_id, commits)
        reply = await conn.call(request, timeout=TIMEOUT)
        assert isinstance(reply, c.OffsetCommitResponse)
        for sent, result in zip(commits, reply.results, strict=True):
            tp = (sent["topic"], sent["partition"])
            code = result.get("errorCode", 0)
            if code == 0:
                self._committed[tp] = int(sent["offset"])
            elif code == FencedMemberError.code:
                pump = self._pumps.get(tp)
                if pump is not None and pump.grant_epoch == sent["grantEpoch"]:
                    pump.done = True
            else:
                message = f"commit of {tp[0]}-{tp[1]}: {result.get('message')}"
                raise error_for_code(code, message)
