"""Asyncio consumers: one partition, or many merged, as records or Arrow batches.

Theory of operation. A partition consumer resolves its ``Offset`` against the leader's
offsets (and time index), then opens a ``STREAM_FETCH`` stream at that position: the
leader pushes frames as they become visible under the chosen isolation. The consumer
decodes each frame zero-copy, drops rows before its position (a frame may start
earlier), cuts at the end offset, and advances its position past every frame it
yielded. When the stream fails with a retriable error (leader moved, SPU died) it
looks the leader up again and reopens the stream at that position, so records are
neither repeated nor skipped across failover. A group stream carries the partition's
leader epoch from the metadata; a leader that fences it (its metadata was stale) makes
the consumer wait briefly for newer metadata before it reopens. ``stop_at_end`` fixes the end at the
offset visible when the stream starts (``fluvio consume -d``). A tiered topic's records
below the leader's log start come from the tier first (``tiered``), then the stream
opens where the tier left off.

The multi-partition consumer runs one such stream per partition into a bounded queue;
batches of one partition keep their order, partitions interleave as data arrives. One
made for all of a topic's partitions (``follow_new``) also streams the partitions added
to the topic while it runs, each from its beginning (as a Kafka subscriber does), unless
it stops at the end fixed when it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator

import numpy as np
import pyarrow as pa

from spark_stream.client.config import ConsumerConfig, parse_isolation
from spark_stream.client.consumer._rows import rows_json
from spark_stream.client.consumer.corrupt import read_frame
from spark_stream.client.consumer.fetch import (
    GroupFetch,
    group_fields,
    offset_for_timestamp,
    slice_to_range,
    typed_read_schema,
)
from spark_stream.client.consumer.fetch import visible_end as _visible_end
from spark_stream.client.consumer.offset import Offset
from spark_stream.client.consumer.tiered import readable_offsets, tier_prefix
from spark_stream.client.leader import (
    LeaderClient,
    RetryPolicy,
    from_leader,
    lookup_hints,
    retry_backoff,
)
from spark_stream.client.metadata import Leader
from spark_stream.client.types import Record
from spark_stream.errors import ConnectionClosedError, FluvioError, NotLeaderError
from spark_stream.net.connection import Connection
from spark_stream.protocol import received_tail
from spark_stream.protocol.data import Isolation, StreamFetchPush, StreamFetchRequest
from spark_stream.records import OFFSET_FIELD, RECORD_SCHEMA, iter_frames

__all__ = [
    "AsyncPartitionConsumer",
    "AsyncConsumer",
    "CONSUMER_SCHEMA",
    "batch_records",
]

PARTITION_FIELD = pa.field("partition", pa.int32(), nullable=False)
#: Schema of consumer batches: partition, offset, then the record columns.
CONSUMER_SCHEMA = pa.schema([PARTITION_FIELD, OFFSET_FIELD, *RECORD_SCHEMA])
_UNTYPED_READ = pa.schema([OFFSET_FIELD, *RECORD_SCHEMA])


def _with_partition(batch: pa.RecordBatch, partition: int) -> pa.RecordBatch:
    column = pa.array(np.full(batch.num_rows, partition, dtype=np.int32), pa.int32())
    if batch.schema.equals(_UNTYPED_READ, check_metadata=True):
        # Untyped (most batches): add_column skips wrapping every column and a
        # schema-keyed cache lookup (hashing a schema costs ~3 µs): a third of a
        # one-record batch's way through here.
        return batch.add_column(0, PARTITION_FIELD, column)
    return pa.RecordBatch.from_arrays(
        [column, *batch.columns], schema=_consumer_schema(batch.schema)
    )


@functools.lru_cache(maxsize=64)
def _consumer_schema(read: pa.Schema) -> pa.Schema:
    """``CONSUMER_SCHEMA`` for untyped records; partition first, then ``read``'s columns
    (offset, a typed topic's user columns, key, timestamp, headers) otherwise."""
    return pa.schema([PARTITION_FIELD, *read])


def batch_records(batch: pa.RecordBatch) -> list[Record]:
    """The rows of a consumer batch as ``Record`` objects (columns converted once each);
    a group consumer's batch (``GROUP_SCHEMA``) also gives each its ``topic``. A typed
    topic's record has its user columns as a JSON object in ``value``."""
    parts = batch.column("partition").to_pylist()
    offsets = batch.column("offset").to_pylist()
    keys = batch.column("key").to_pylist()
    names = batch.schema.names
    values = batch.column("value").to_pylist() if "value" in names else rows_json(batch)
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
    headers = batch.column("headers")
    if headers.null_count == len(headers):
        hdrs: list[tuple[tuple[str, bytes | None], ...]] = [()] * batch.num_rows
    else:
        hdrs = [
            () if row is None else tuple((h["key"], h["value"]) for h in row)
            for row in headers.to_pylist()
        ]
    topics: list[str | None] = (
        batch.column("topic").to_pylist() if "topic" in names else [None] * len(parts)
    )
    return [
        Record(p, o, k, v, t, h, topic)
        for p, o, k, v, t, h, topic in zip(
            parts, offsets, keys, values, stamps, hdrs, topics, strict=True
        )
    ]


class AsyncPartitionConsumer:
    """Reads one partition. Get one from ``FluvioAsync.partition_consumer``.

    Attributes:
        topic: topic name.
        partition: partition index.
        config: the validated options.
        position: the next offset this consumer's latest stream would read (-1 before).
    """

    def __init__(
        self, topic: str, partition: int, config: ConsumerConfig, leaders: LeaderClient
    ) -> None:
        leaders.watcher.check_partition(topic, partition)
        self.topic = topic
        self.partition = partition
        self.config = config
        self.position = -1
        self._leaders = leaders

    def _policy(self) -> RetryPolicy:
        cfg = self.config
        return RetryPolicy(
            retries=cfg.retries,
            backoff=retry_backoff(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms),
            timeout_s=cfg.request_timeout_ms / 1000.0 * 2,
            request_timeout_s=cfg.request_timeout_ms / 1000.0,
        )

    async def resolve(self, offset: Offset, isolation: Isolation) -> tuple[int, int]:
        """The absolute start for ``offset`` and the end visible now, under ``isolation``."""
        policy = self._policy()
        offsets = await readable_offsets(self._leaders, self.topic, self.partition, policy)
        end = _visible_end(offsets, isolation)
        found = None
        if offset.needs_timestamp_lookup:
            found = await offset_for_timestamp(
                self._leaders, self.topic, self.partition, offset.value, policy
            )
        return offset.resolve(offsets.log_start, end, found, leo=offsets.leo), end

    async def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
        group: GroupFetch | None = None,
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        """Arrow batches (``CONSUMER_SCHEMA``) from ``offset`` on, as they become visible.

        Args:
            offset: where to start.
            isolation: overrides the consumer's ``isolation``.
            end_offset: stop before this offset.
            stop_at_end: stop at the end visible when the stream starts (``-d``).
            group: a consumer-group member's grant: the stream is gated by the leader
                and ends with ``FencedMemberError`` when the grant is revoked.

        Raises:
            FluvioError: a non-retriable error, or retries ran out during failover.
        """
        iso = parse_isolation(isolation if isolation is not None else self.config.isolation)
        start, visible = await self.resolve(offset, iso)
        end = end_offset
        if stop_at_end:
            end = visible if end is None else min(end, visible)
        async for batch in self._stream(start, end, iso, group):
            yield _with_partition(batch, self.partition)

    async def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
        group: GroupFetch | None = None,
    ) -> AsyncGenerator[Record, None]:
        """Records from ``offset`` on (arguments as ``stream_batches``)."""
        async with contextlib.aclosing(
            self.stream_batches(
                offset,
                isolation=isolation,
                end_offset=end_offset,
                stop_at_end=stop_at_end,
                group=group,
            )
        ) as batches:
            async for batch in batches:
                for record in batch_records(batch):
                    yield record

    async def _stream(
        self, position: int, end: int | None, isolation: Isolation, group: GroupFetch | None
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        self.position = position
        if end is not None and position >= end:
            return
        cfg = self.config
        policy = self._policy()
        schema = typed_read_schema(self._leaders.watcher, self.topic)
        async with contextlib.aclosing(
            tier_prefix(self._leaders, self.topic, self.partition, position, end, schema, policy)
        ) as older:
            async for rows in older:
                position = rows.column(0)[-1].as_py() + 1
                self.position = position
                yield rows
        if end is not None and position >= end:
            return
        failures = 0
        where = f"{self.topic}-{self.partition}"
        not_spu: int | None = None
        stale_epoch: int | None = None
        timeout = cfg.request_timeout_ms / 1000.0
        while True:
            conn: Connection | None = None
            leader: Leader | None = None
            try:
                leader, conn = await self._leaders.connection(
                    self.topic, self.partition, timeout, not_spu=not_spu, stale_epoch=stale_epoch
                )
                request = StreamFetchRequest(
                    self.topic,
                    self.partition,
                    position,
                    max_bytes=cfg.max_bytes,
                    isolation=isolation,
                    **group_fields(group, leader),
                )
                async with await conn.stream(request, window=cfg.window) as stream:
                    # a hung leader's stream ends as soon as the metadata replaces it
                    with self._leaders.failing_over(stream, self.topic, self.partition, leader):
                        async for push in stream:
                            message = push.message()
                            if not isinstance(message, StreamFetchPush):
                                continue
                            failures = 0
                            tail = received_tail(message.tail)
                            for header, frame in iter_frames(tail, check_crc=False):
                                if header.next_offset <= position:
                                    continue
                                schema = typed_read_schema(
                                    self._leaders.watcher, self.topic, header.schema_version
                                )
                                batch = read_frame(
                                    frame, header, schema=schema, with_offsets=True,
                                    where=where, skip=cfg.skip_corrupt_frames, check_crc=True,
                                )  # fmt: skip
                                stop = end if end is not None else header.next_offset
                                start, position = position, min(header.next_offset, stop)
                                self.position = position
                                if batch is not None:  # None: damaged, skipped with a WARNING
                                    rows = slice_to_range(batch, header.base_offset, start, stop)
                                    if rows.num_rows:
                                        yield rows
                                if end is not None and position >= end:
                                    return
                # The leader ended the stream (e.g. it stepped down): reopen where we are.
                raise NotLeaderError(f"{self.topic}-{self.partition}: the leader ended the stream")
            except FluvioError as raised:
                exc = from_leader(raised, self._leaders.watcher.view, self.topic, self.partition)
                if not exc.retriable or failures >= policy.retries:
                    if exc is raised:
                        raise
                    raise exc from raised
                if isinstance(exc, ConnectionClosedError) and conn is not None:
                    self._leaders.pool.discard(conn)
                not_spu, stale_epoch = lookup_hints(exc, leader)
                await asyncio.sleep(policy.delay(failures, exc))  # failover backoff
                failures += 1


class AsyncConsumer:
    """Reads several partitions of a topic, merged. From ``FluvioAsync.consumer``.

    Attributes:
        topic: topic name.
        partitions: the partition indexes read.
    """

    def __init__(
        self, topic: str, consumers: list[AsyncPartitionConsumer], *, follow_new: bool = False
    ) -> None:
        self.topic = topic
        self._consumers = consumers
        self.partitions = [c.partition for c in consumers]
        self._follow_new = follow_new and bool(consumers)

    def _added(self) -> list[AsyncPartitionConsumer]:
        """Consumers of the partitions the topic gained since these were made."""
        first = self._consumers[0]
        count = first._leaders.watcher.view.partition_count(self.topic) or 0
        known = set(self.partitions)
        added = [
            AsyncPartitionConsumer(self.topic, p, first.config, first._leaders)
            for p in range(count)
            if p not in known
        ]
        self._consumers.extend(added)
        self.partitions.extend(c.partition for c in added)
        return added

    async def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        """Arrow batches of every partition (each batch from one partition).

        ``end_offset`` stops each partition before that offset (the stream ends when
        every partition reached it); ``stop_at_end`` as ``AsyncPartitionConsumer``'s.
        """
        queue: asyncio.Queue[pa.RecordBatch | BaseException | None] = asyncio.Queue(
            maxsize=2 * len(self._consumers)
        )

        async def pump(consumer: AsyncPartitionConsumer, start: Offset = offset) -> None:
            try:
                async with contextlib.aclosing(
                    consumer.stream_batches(
                        start, isolation=isolation, end_offset=end_offset, stop_at_end=stop_at_end
                    )
                ) as batches:
                    async for batch in batches:
                        await queue.put(batch)
                await queue.put(None)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # handed to the iterating task
                await queue.put(exc)

        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(pump(c)) for c in self._consumers]
        running = len(tasks)

        async def follow() -> None:
            # New partitions hold only records written after this consumer began.
            nonlocal running
            watcher = self._consumers[0]._leaders.watcher
            try:
                while True:
                    for consumer in self._added():
                        running += 1
                        tasks.append(loop.create_task(pump(consumer, Offset.beginning())))
                    await watcher.wait_changed(60.0)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # handed to the iterating task
                await queue.put(exc)

        if self._follow_new and not stop_at_end:
            tasks.append(loop.create_task(follow()))
        try:
            while running:
                item = await queue.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> AsyncGenerator[Record, None]:
        """Records of every partition from ``offset`` (per partition), ordered per partition
        (arguments as ``stream_batches``)."""
        async with contextlib.aclosing(
            self.stream_batches(
                offset, isolation=isolation, end_offset=end_offset, stop_at_end=stop_at_end
            )
        ) as batches:
            async for batch in batches:
                for record in batch_records(batch):
                    yield record
