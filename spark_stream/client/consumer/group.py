"""``AsyncGroupConsumer``: a consumer-group member that reads what the coordinator grants.

Theory of operation (the member state machine of ``docs/consumer-groups.md``). The member
opens a ``GROUP_JOIN`` stream on its own SC connection; every push is the member's whole
assignment (``assigned``) plus the grants it must give back (``revoke``). A push of an
older generation than one already applied is ignored. For each assigned partition a pump
task resolves the start (the group's committed offset, else ``auto_offset_reset``) and
streams the partition from its leader with the grant (fetch v1, gated by the leader) into
one bounded queue. ``stream_batches`` hands batches out and advances each partition's
position only when a batch is handed out, so a batch still queued when its partition is
revoked is dropped, not counted. A revoke stops the pump, commits the position and sends
``GROUP_RELEASE``: the next owner starts exactly there (no duplicate, no gap). A pump
ending with ``FencedMemberError`` drops its partition (its new owner has it). A member
that may have outlived its session (stopped past it) confirms it with a heartbeat before
handing out anything more (``_group_session``). Heartbeats and auto-commit run as tasks
on the client's loop; ``close`` commits (auto-commit only), leaves and closes the
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from spark_stream.client.config import ConsumerConfig, parse_isolation
from spark_stream.client.consumer._group_session import SessionClock
from spark_stream.client.consumer.consumer import AsyncPartitionConsumer, batch_records
from spark_stream.client.consumer.fetch import GroupFetch
from spark_stream.client.consumer.offset import Offset
from spark_stream.client.leader import LeaderClient
from spark_stream.client.types import Record
from spark_stream.errors import (
    ConnectionClosedError,
    FencedMemberError,
    FluvioError,
    InvalidConfigError,
)
from spark_stream.net.connection import Connection, Stream
from spark_stream.protocol import control as c

__all__ = ["AsyncGroupConsumer", "TopicPartition"]

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
_RESETS = ("earliest", "latest")
_TIMEOUT = 10.0


@dataclass(eq=False)
class _Pump:
    """One partition's fetch task under one grant (identity = this object)."""

    tp: TopicPartition
    grant_epoch: int
    task: asyncio.Task[None] | None = None
    done: bool = False
    end: int | None = None  # the end visible when the grant's start was resolved


@dataclass
class _Item:
    pump: _Pump | None  # None: the membership failed (``error``)
    batch: pa.RecordBatch | None = None
    error: BaseException | None = None


class AsyncGroupConsumer:
    """A member of consumer group ``group`` reading ``topics``. From
    ``FluvioAsync.group_consumer``; call ``start`` (done there) then ``stream_batches``.

    Attributes:
        group: the consumer group.
        topics: the topics subscribed.
        member_id: this member's id (uuid4).
        generation: the generation of the last assignment applied (-1 before).
    """

    def __init__(
        self,
        host: str,
        port: int,
        leaders: LeaderClient,
        topics: list[str],
        *,
        group: str,
        config: ConsumerConfig,
        instance_id: str | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 1000,
    ) -> None:
        if auto_offset_reset not in _RESETS:
            raise InvalidConfigError(
                f"auto_offset_reset must be one of {_RESETS}, got {auto_offset_reset!r}"
            )
        if not topics:
            raise InvalidConfigError("group_consumer: no topic given")
        if auto_commit_interval_ms <= 0:
            raise InvalidConfigError("auto_commit_interval_ms must be > 0")
        self.group = group
        self.topics = topics
        self.member_id = str(uuid.uuid4())
        self.generation = -1
        self._host, self._port = host, port
        self._leaders = leaders
        self._config = config
        self._isolation = parse_isolation(config.isolation)
        self._instance_id = instance_id
        self._reset = auto_offset_reset
        self._auto_commit = enable_auto_commit
        self._commit_interval = auto_commit_interval_ms / 1000.0
        self._conn: Connection | None = None
        self._stream: Stream | None = None
        self._epoch = 0
        self._heartbeat_s = 1.0
        self._session = SessionClock(session_s=10.0, margin_s=1.0, confirmed_at=0.0)
        self._pumps: dict[TopicPartition, _Pump] = {}
        self._positions: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._queue: asyncio.Queue[_Item] = asyncio.Queue(maxsize=64)
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()  # one push / commit at a time
        self._error: BaseException | None = None
        self._closed = False

    # -- membership --------------------------------------------------------------------

    async def start(self) -> None:
        """Join the group, apply the first assignment, start heartbeats (and auto-commit)."""
        self._conn = await Connection.open(self._host, self._port, timeout=_TIMEOUT)
        await self._join()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._follow()))
        self._tasks.append(loop.create_task(self._heartbeats()))
        if self._auto_commit:
            self._tasks.append(loop.create_task(self._auto_commits()))

    async def _join(self) -> None:
        assert self._conn is not None
        request = c.GroupJoinRequest(
            self.group, self.member_id, self.topics, member_epoch=0, instance_id=self._instance_id
        )
        sent = time.monotonic()
        self._stream = await self._conn.stream(request)
        push = await self._stream.__anext__()
        self._session.confirm(sent)
        await self._apply(c.GroupAssignment.from_meta(push.meta, b""))

    async def _follow(self) -> None:
        """Apply every assignment push; a fenced or unknown member rejoins with epoch 0.

        Any other end of the membership (the SC connection lost) ends ``stream_batches``
        with its error: this member's grants are no longer followed.
        """
        try:
            await self._follow_pushes()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not self._closed:
                await self._queue.put(_Item(None, error=exc))

    async def _follow_pushes(self) -> None:
        while not self._closed:
            assert self._stream is not None
            try:
                push = await self._stream.__anext__()
            except StopAsyncIteration:
                raise ConnectionClosedError(
                    f"group {self.group}: the SC ended the membership"
                ) from None
            except FluvioError as exc:
                if self._closed or exc.retriable:
                    raise
                log.info("group %s: member %s rejoins (%r)", self.group, self.member_id, exc)
                await self._drop_all()
                self.generation = -1
                await self._join()
                continue
            await self._apply(c.GroupAssignment.from_meta(push.meta, b""))

    async def _heartbeats(self) -> None:
        while not self._closed:
            await asyncio.sleep(self._heartbeat_s)
            assert self._conn is not None
            owned = [{"topic": t, "partition": p} for t, p in sorted(self._pumps)]
            request = c.GroupHeartbeatRequest(self.group, self.member_id, self._epoch, owned)
            sent = time.monotonic()
            with contextlib.suppress(FluvioError):  # the push stream reports fencing
                await self._conn.call(request, timeout=_TIMEOUT)
                self._session.confirm(sent)

    async def _confirm_session(self) -> None:
        """Hold hand-outs while the session may have expired at the SC (this process was
        stopped or starved past it, see ``_group_session``): a heartbeat the SC answers
        confirms it; a refused one means the push stream is ending with the fence, and
        ``_follow`` drops everything and joins again (which confirms the new session).
        """
        while self._session.may_have_expired(time.monotonic()) and not self._closed:
            if self._conn is None or self._conn.closed:
                raise ConnectionClosedError(f"group {self.group}: the SC connection is closed")
            owned = [{"topic": t, "partition": p} for t, p in sorted(self._pumps)]
            request = c.GroupHeartbeatRequest(self.group, self.member_id, self._epoch, owned)
            sent = time.monotonic()
            try:
                await self._conn.call(request, timeout=_TIMEOUT)
                self._session.confirm(sent)
            except FluvioError:
                await asyncio.sleep(0.05)  # let ``_follow`` take the fence and rejoin

    async def _auto_commits(self) -> None:
        while not self._closed:
            await asyncio.sleep(self._commit_interval)
            try:
                await self.commit()
            except FluvioError as exc:
                log.warning("group %s: auto-commit failed: %s", self.group, exc)

    async def _apply(self, push: c.GroupAssignment) -> None:
        async with self._lock:
            if push.generation < self.generation:
                return  # an older plan than one applied
            self.generation = push.generation
            self._epoch = push.member_epoch
            self._heartbeat_s = max(0.05, push.heartbeat_ms / 1000.0)
            self._session.session_s = push.session_ms / 1000.0
            self._session.margin_s = self._heartbeat_s
            assigned = {(g["topic"], g["partition"]): int(g["grantEpoch"]) for g in push.assigned}
            revoke = [(g["topic"], g["partition"]) for g in push.revoke]
            for tp in [tp for tp in self._pumps if tp not in assigned and tp not in revoke]:
                await self._stop(tp)
            if revoke:
                held = [tp for tp in revoke if tp in self._pumps]
                await self._commit_locked({tp: self._pumps[tp].grant_epoch for tp in held})
                for tp in held:
                    await self._stop(tp)
                assert self._conn is not None
                partitions = [{"topic": t, "partition": p} for t, p in revoke]
                release = c.GroupReleaseRequest(self.group, self.member_id, self._epoch, partitions)
                with contextlib.suppress(FencedMemberError):
                    await self._conn.call(release, timeout=_TIMEOUT)
            for tp, epoch in assigned.items():
                pump = self._pumps.get(tp)
                if pump is None or pump.grant_epoch != epoch or pump.done:
                    if pump is not None:
                        await self._stop(tp)
                    await self._launch(tp, epoch)

    async def _launch(self, tp: TopicPartition, grant_epoch: int) -> None:
        pump = _Pump(tp, grant_epoch)
        self._pumps[tp] = pump
        self._positions.pop(tp, None)  # known again once this grant's start is resolved
        self._committed.pop(tp, None)
        pump.task = asyncio.get_running_loop().create_task(self._run_pump(pump))

    async def _stop(self, tp: TopicPartition) -> None:
        pump = self._pumps.pop(tp, None)
        if pump is not None and pump.task is not None:
            pump.task.cancel()
            await asyncio.gather(pump.task, return_exceptions=True)

    async def _drop_all(self) -> None:
        # Unlist every pump before waiting for any: a batch queued by one still listed
        # would be handed out meanwhile.
        pumps, self._pumps = list(self._pumps.values()), {}
        for pump in pumps:
            if pump.task is not None:
                pump.task.cancel()
        await asyncio.gather(*(p.task for p in pumps if p.task is not None), return_exceptions=True)

    async def _start_offset(self, tp: TopicPartition) -> Offset:
        committed = await self.committed(tp)
        if committed is not None:
            return Offset.absolute(committed)
        return Offset.beginning() if self._reset == "earliest" else Offset.end()

    async def _run_pump(self, pump: _Pump) -> None:
        topic, partition = pump.tp
        grant = GroupFetch(self.group, self.member_id, pump.grant_epoch)
        try:
            consumer = AsyncPartitionConsumer(topic, partition, self._config, self._leaders)
            start, end = await consumer.resolve(await self._start_offset(pump.tp), self._isolation)
            self._positions[pump.tp] = start  # nothing of this grant handed out yet
            pump.end = max(start, end)
            async with contextlib.aclosing(
                consumer.stream_batches(Offset.absolute(start), group=grant)
            ) as batches:
                async for batch in batches:
                    await self._queue.put(_Item(pump, batch))
        except asyncio.CancelledError:
            raise
        except FencedMemberError as exc:
            pump.done = True  # the grant moved on: its new owner reads it
            log.info("group %s: %s-%d fenced at the leader: %s", self.group, topic, partition, exc)
        except BaseException as exc:
            pump.done = True
            await self._queue.put(_Item(pump, error=exc))

    # -- reading -----------------------------------------------------------------------

    async def stream_batches(
        self, stop_at_end: bool = False
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        """Arrow batches (``CONSUMER_SCHEMA``) of the assigned partitions, merged.

        Each batch is from one partition; a partition's batches come in order. Runs until
        the caller stops iterating or ``close``.

        Args:
            stop_at_end: end once every assigned partition was read up to the end visible
                when it was granted (``fluvio consume -g -d``).

        Raises:
            FluvioError: a partition failed for good (not a fencing: that one is dropped).
        """
        while not self._closed:
            if stop_at_end and self._at_end():
                return
            try:
                async with asyncio.timeout(0.05 if stop_at_end else None):
                    item = await self._queue.get()
            except TimeoutError:
                continue  # look at the ends again
            if item.pump is None:
                assert item.error is not None
                raise item.error
            if self._pumps.get(item.pump.tp) is not item.pump:
                continue  # revoked or superseded while queued: the next owner reads it
            await self._confirm_session()
            if self._pumps.get(item.pump.tp) is not item.pump:
                continue  # the session had expired: the partition moved on
            if item.error is not None:
                raise item.error
            batch = item.batch
            assert batch is not None
            offsets = batch.column("offset")
            self._positions[item.pump.tp] = int(offsets[len(offsets) - 1].as_py()) + 1
            yield batch

    def _at_end(self) -> bool:
        """Every assigned partition read up to the end visible when it was granted."""
        return all(
            pump.end is not None and self._positions.get(tp, -1) >= pump.end
            for tp, pump in self._pumps.items()
        )

    async def stream(self, stop_at_end: bool = False) -> AsyncGenerator[Record, None]:
        """The rows of ``stream_batches`` as ``Record`` objects."""
        async with contextlib.aclosing(self.stream_batches(stop_at_end)) as batches:
            async for batch in batches:
                for record in batch_records(batch):
                    yield record

    # -- offsets -----------------------------------------------------------------------

    def assignment(self) -> list[TopicPartition]:
        """The partitions this member reads now, sorted."""
        return sorted(self._pumps)

    def _tp(self, partition: int | TopicPartition) -> TopicPartition:
        return (self.topics[0], partition) if isinstance(partition, int) else partition

    def position(self, partition: int | TopicPartition) -> int | None:
        """The next offset ``stream_batches`` hands out for the partition (None: unknown)."""
        return self._positions.get(self._tp(partition))

    async def committed(self, partition: int | TopicPartition) -> int | None:
        """The group's committed offset of the partition (None: none)."""
        topic, p = self._tp(partition)
        assert self._conn is not None
        request = c.OffsetFetchRequest(self.group, [{"topic": topic, "partition": p}])
        reply = await self._conn.call(request, timeout=_TIMEOUT)
        assert isinstance(reply, c.OffsetFetchResponse)
        for item in reply.offsets:
            if (item["topic"], item["partition"]) == (topic, p):
                return int(item["offset"])
        return None

    async def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        """Commit the positions of every assigned partition, or the offsets given.

        Raises:
            FencedMemberError: one of ``offsets`` is not this member's grant any more
                (a partition fenced while committing positions is dropped instead).
        """
        async with self._lock:
            if offsets is None:
                await self._commit_locked({tp: p.grant_epoch for tp, p in self._pumps.items()})
                return
            epochs = {}
            for tp, offset in offsets.items():
                pump = self._pumps.get(tp)
                if pump is None:
                    raise FencedMemberError(f"{tp[0]}-{tp[1]} is not assigned to this member")
                epochs[tp] = pump.grant_epoch
                self._positions[tp] = offset
            await self._commit_locked(epochs)

    async def _commit_locked(self, epochs: dict[TopicPartition, int]) -> None:
        commits: list[dict[str, Any]] = [
            {"topic": t, "partition": p, "offset": self._positions[(t, p)], "grantEpoch": e}
            for (t, p), e in sorted(epochs.items())
            if (t, p) in self._positions and self._committed.get((t, p)) != self._positions[(t, p)]
        ]
        if not commits or self._conn is None:
            return
        request = c.OffsetCommitRequest(self.group, self.member_id, commits)
        reply = await self._conn.call(request, timeout=_TIMEOUT)
        assert isinstance(reply, c.OffsetCommitResponse)
        for sent, result in zip(commits, reply.results, strict=True):
            tp = (sent["topic"], sent["partition"])
            if result.get("errorCode", 0) == 0:
                self._committed[tp] = int(sent["offset"])
            elif result.get("errorCode") == FencedMemberError.code:
                pump = self._pumps.get(tp)
                if pump is not None and pump.grant_epoch == sent["grantEpoch"]:
                    pump.done = True
            else:
                raise FluvioError(f"commit of {tp[0]}-{tp[1]} failed: {result.get('message')}")

    # -- lifecycle ---------------------------------------------------------------------

    async def close(self) -> None:
        """Commit (with auto-commit), leave the group, close the connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            if self._auto_commit:
                async with self._lock:
                    await self._commit_locked({tp: p.grant_epoch for tp, p in self._pumps.items()})
            await self._drop_all()
            if self._conn is not None and not self._conn.closed:
                leave = c.GroupLeaveRequest(self.group, self.member_id, -1)
                with contextlib.suppress(FluvioError):
                    await self._conn.call(leave, timeout=_TIMEOUT)
        finally:
            await self._drop_all()
            if self._conn is not None:
                await self._conn.close()

    async def __aenter__(self) -> AsyncGroupConsumer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
