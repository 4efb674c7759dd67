"""``AsyncGroupConsumer``: a consumer-group member that reads what the coordinator grants.

Theory of operation (the member state machine of ``docs/consumer-groups.md``). The member
opens a ``GROUP_JOIN`` stream on its own SC connection; every push is the member's whole
assignment (``assigned``) plus the grants it must give back (``revoke``). A push of an
older generation than one already applied is ignored. For each assigned partition a pump
(``_group_parts.Pump``) resolves its start (a seek's offset, else the group's committed
offset, else ``auto_offset_reset``) and streams the partition from its leader with the
grant (fetch v1, gated by the leader) into one bounded queue. ``stream_batches`` hands
batches out and advances a partition's position only when one is handed out; a batch of
a pump that was replaced (seek, resume, regrant), paused or revoked is dropped, not
counted. So positions stay exact and a revoked partition's next owner starts after what
this member handed out.

Rebalance: a partition the SC takes back cooperatively (``revoke``) stops handing out,
``on_revoke`` runs (it may commit), the member commits its position and sends
``GROUP_RELEASE``; new grants start their pumps, then ``on_assign`` runs. A partition lost
without a revoke (fenced at the gate, dropped by the SC) goes to ``on_lost`` (default:
``on_revoke``, as Kafka's ``onPartitionsLost``) and is not committed. Callbacks run on the
client's loop with no lock held.

The SC connection lost (SC restart): pumps keep delivering from the SPUs while the member
reconnects with capped backoff and resumes with its last ``member_epoch`` and the
partitions it holds; the coordinator hands them back unchanged. Commits wait for the
reconnect (bounded); auto-commit retries at its next tick. A refused resume (fenced,
unknown member) drops everything and joins again with epoch 0.

``max_poll_interval_ms``: when the application has not pulled from the stream for that
long (it is not waiting inside the stream), the member leaves like ``close`` does
(``on_revoke``, commit with auto-commit, ``GROUP_LEAVE``) so the partitions move on; the
next pull joins again as a new member.

A member that may have outlived its session (stopped or starved past it) confirms it
with a heartbeat before handing out anything more (``_group_session``): batches fetched
before the stop must not reach the application after their partition moved on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
import uuid
from collections.abc import AsyncGenerator

import pyarrow as pa

from spark_stream.client.config import ConsumerConfig, parse_isolation
from spark_stream.client.consumer._group_member import GroupMembership
from spark_stream.client.consumer._group_parts import (
    GROUP_SCHEMA,
    CommitCallback,
    Item,
    Pump,
    RebalanceCallback,
    TopicColumn,
    TopicPartition,
)
from spark_stream.client.consumer._group_session import SessionClock
from spark_stream.client.consumer.consumer import AsyncPartitionConsumer, batch_records
from spark_stream.client.consumer.fetch import GroupFetch
from spark_stream.client.consumer.offset import Offset
from spark_stream.client.leader import LeaderClient
from spark_stream.client.types import Record
from spark_stream.errors import FencedMemberError, InvalidConfigError, RequestTimeoutError
from spark_stream.net.connection import Connection
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import ScEndpoints
from spark_stream.net.stream import Stream

__all__ = [
    "GROUP_SCHEMA",
    "AsyncGroupConsumer",
    "CommitCallback",
    "RebalanceCallback",
    "TopicPartition",
]

log = logging.getLogger(__name__)

_RESETS = ("earliest", "latest")
_MAX_POLL_MS = (1_000, 1_800_000)  # bounds of max_poll_interval_ms (the brief's)


class AsyncGroupConsumer(GroupMembership):
    """A member of consumer group ``group`` reading ``topics``. From
    ``FluvioAsync.group_consumer``; call ``start`` (done there) then ``stream_batches``.

    Attributes:
        group: the consumer group.
        topics: the topics subscribed.
        member_id: this member's id (uuid4; a new one after a ``max_poll_interval`` leave).
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
        max_poll_interval_ms: int = 60_000,
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
        pattern: str | None = None,
        endpoints: ScEndpoints | None = None,
        tls: ssl.SSLContext | None = None,
        token: str | None = None,
    ) -> None:
        if auto_offset_reset not in _RESETS:
            raise InvalidConfigError(
                f"auto_offset_reset must be one of {_RESETS}, got {auto_offset_reset!r}"
            )
        if not topics and pattern is None:
            raise InvalidConfigError("group_consumer: no topic (or pattern) given")
        if auto_commit_interval_ms <= 0:
            raise InvalidConfigError("auto_commit_interval_ms must be > 0")
        low, high = _MAX_POLL_MS
        if not low <= max_poll_interval_ms <= high:
            raise InvalidConfigError(
                f"max_poll_interval_ms must be in [{low}, {high}], got {max_poll_interval_ms}"
            )
        self.group = group
        self.topics = topics
        self.pattern = pattern  # topics it matches are subscribed too (resolved by the SC)
        self.member_id = str(uuid.uuid4())
        self.generation = -1
        # Every SC's address (standbys too): a reconnect follows the active one.
        self._sc = endpoints or ScEndpoints((Endpoint(host, port),))
        self._tls = tls  # the SC connection's TLS context (None: plaintext)
        self._token = token  # presented on every (re)connect to the SC
        self._leaders = leaders
        self._config = config
        self._isolation = parse_isolation(config.isolation)
        self._instance_id = instance_id
        self._reset = auto_offset_reset
        self._auto_commit = enable_auto_commit
        self._commit_interval = auto_commit_interval_ms / 1000.0
        self._max_poll_s = max_poll_interval_ms / 1000.0
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._on_lost = on_lost or on_revoke
        self._conn: Connection | None = None
        self._stream: Stream | None = None
        self._connected = asyncio.Event()
        self._epoch = 0
        self._heartbeat_s = 1.0
        self._session = SessionClock(session_s=10.0, margin_s=1.0, confirmed_at=0.0)
        self._pumps: dict[TopicPartition, Pump] = {}
        self._positions: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._queue: asyncio.Queue[Item] = asyncio.Queue(maxsize=64)
        self._member_tasks: list[asyncio.Task[None]] = []  # end with the membership
        self._tasks: list[asyncio.Task[None]] = []  # end with the consumer
        self._lock = asyncio.Lock()  # one push / commit at a time
        self._async_error: BaseException | None = None  # a failed commit_async
        self._pulling = False  # the application waits inside stream_batches
        self._last_pull = time.monotonic()
        self._left = False  # left on max_poll_interval: the next pull rejoins
        self._closed = False

    # -- membership --------------------------------------------------------------------

    @property
    def member_epoch(self) -> int:
        """This member's epoch, as last pushed by the coordinator (0 before joining)."""
        return self._epoch

    async def start(self) -> None:
        """Join the group, apply the first assignment, start heartbeats (and auto-commit)."""
        await self._begin_membership()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._poll_watchdog()))
        if self._auto_commit:
            self._tasks.append(loop.create_task(self._auto_commits()))

    # -- pumps -------------------------------------------------------------------------

    def _launch(self, pump: Pump) -> None:
        """Make ``pump`` the partition's and start its task (unless paused)."""
        self._pumps[pump.tp] = pump
        if not pump.paused:
            pump.task = asyncio.get_running_loop().create_task(self._run_pump(pump))

    async def _start_offset(self, pump: Pump) -> Offset:
        if pump.start is not None:
            return pump.start
        committed = await self.committed(pump.tp)
        if committed is not None:
            self._committed[pump.tp] = committed
            return Offset.absolute(committed)
        return Offset.beginning() if self._reset == "earliest" else Offset.end()

    async def _known(self, topic: str, partition: int) -> None:
        """Wait (bounded) until the metadata knows a granted partition.

        The SC plans from the topic spec, so the grant of a partition just added to a
        topic may arrive before this client's metadata watch brings the partition.
        After the wait, a partition still unknown fails typed where the consumer is made.
        """
        watcher = self._leaders.watcher
        timeout = self._config.request_timeout_ms / 1000.0
        with contextlib.suppress(RequestTimeoutError):
            await watcher.wait_for(lambda v: (v.partition_count(topic) or 0) > partition, timeout)

    async def _run_pump(self, pump: Pump) -> None:
        topic, partition = pump.tp
        grant = GroupFetch(self.group, self.member_id, pump.grant_epoch)
        try:
            await self._known(topic, partition)
            consumer = AsyncPartitionConsumer(topic, partition, self._config, self._leaders)
            start, end = await consumer.resolve(await self._start_offset(pump), self._isolation)
            self._positions[pump.tp] = start  # nothing of this pump handed out yet
            pump.end = max(start, end)
            if start >= end:
                self._wake_reader()  # no batch of it will come to end the wait
            async with contextlib.aclosing(
                consumer.stream_batches(Offset.absolute(start), group=grant)
            ) as batches:
                column = TopicColumn(topic)
                async for batch in batches:
                    await self._queue.put(
                        Item(pump, column.add(batch), next_offset=consumer.position)
                    )
        except asyncio.CancelledError:
            raise
        except FencedMemberError as exc:
            pump.done = True  # the grant moved on: its new owner reads it
            log.info("group %s: %s-%d fenced at the leader: %s", self.group, *pump.tp, exc)
            if self._pumps.get(pump.tp) is pump and self._on_lost is not None:
                await self._callback(self._on_lost, [pump.tp])
        except BaseException as exc:
            pump.done = True
            await self._queue.put(Item(pump, error=exc))

    # -- reading -----------------------------------------------------------------------

    async def stream_batches(
        self, stop_at_end: bool = False
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        """Arrow batches (``GROUP_SCHEMA``: topic, partition, offset, record columns) of
        the assigned partitions, merged.

        Each batch is from one partition of one topic; a partition's batches come in
        order. Runs until the caller stops iterating or ``close``. A pull after the member
        left on ``max_poll_interval_ms`` joins the group again first.

        Args:
            stop_at_end: end once every assigned partition was read up to the end visible
                when it was granted (``fluvio consume -g -d``).

        Raises:
            FluvioError: a partition failed for good (not a fencing: that one is dropped),
                or a rebalance callback raised (the membership goes on).
        """
        try:
            while not self._closed:
                self._pulling = True
                if self._left:
                    await self._rejoin_after_leave()
                if stop_at_end and self._at_end():
                    return
                item = await self._queue.get()  # pumps leaving or ending empty wake it
                if item.pump is None:
                    if item.error is None:
                        continue  # a wake-up: look at the ends again
                    raise item.error
                pump = item.pump
                if self._pumps.get(pump.tp) is not pump or not pump.handing_out:
                    continue  # revoked, paused or superseded while queued
                if self._session.may_have_expired(time.monotonic()):
                    await self._confirm_session()
                    if self._pumps.get(pump.tp) is not pump or not pump.handing_out:
                        continue  # the session had expired: the partition moved on
                if item.error is not None:
                    raise item.error
                batch = item.batch
                assert batch is not None
                self._positions[pump.tp] = item.next_offset
                self._pulling = False
                self._last_pull = time.monotonic()
                yield batch
        finally:
            self._pulling = False
            self._last_pull = time.monotonic()

    def _at_end(self) -> bool:
        """Every assigned partition read up to the end visible when it was granted."""
        return all(
            pump.end is not None and self._positions.get(tp, -1) >= pump.end
            for tp, pump in self._pumps.items()
        )

    async def stream(self, stop_at_end: bool = False) -> AsyncGenerator[Record, None]:
        """The rows of ``stream_batches`` as ``Record`` objects (with their ``topic``)."""
        async with contextlib.aclosing(self.stream_batches(stop_at_end)) as batches:
            async for batch in batches:
                for record in batch_records(batch):
                    yield record

    # -- lifecycle ---------------------------------------------------------------------

    async def close(self) -> None:
        """``on_revoke``, commit (with auto-commit), leave the group, close the connection.
        Idempotent."""
        if self._closed:
            return
        tasks = self._tasks
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            if not self._left:
                await self._leave()
        finally:
            self._closed = True
            self._wake_reader()  # a reader waiting for a batch ends

    async def __aenter__(self) -> AsyncGroupConsumer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
