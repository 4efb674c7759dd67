"""The asyncio topic producer: records and Arrow data into the accumulator, one sender.

``send`` appends one record to the accumulator (``accumulator.py``) and returns its
delivery future; ``send_batch`` routes a whole Arrow table with the vectorised
partitioner, cuts each partition's rows into frames of about ``batch_size`` bytes,
reserves their places (and idempotent sequences) in the partition queues, and encodes
them. The sender (``sender.py``) delivers, retries and settles futures. The methods
that do not await (``append_record``, ``plan_batch``, ``encode_planned``) are
thread-safe, which is how the blocking ``TopicProducer`` produces without crossing to
the event loop thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from spark_stream.client.config import ProducerConfig, random_producer_id
from spark_stream.client.leader import LeaderClient
from spark_stream.client.metadata import MetadataWatcher
from spark_stream.client.producer.accumulator import Accumulator, ProducerBatch
from spark_stream.client.producer.bulk import chunk_rows, normalize, split_by_partition
from spark_stream.client.producer.futures import BatchFuture, DeliveryFuture
from spark_stream.client.producer.partitioner import make_partitioner
from spark_stream.client.producer.sender import Sender
from spark_stream.client.timestamps import to_timestamp_us
from spark_stream.client.types import BatchMetadata
from spark_stream.errors import (
    FluvioError,
    InvalidConfigError,
    SchemaMismatchError,
    UnknownPartitionError,
    UnknownTopicError,
)
from spark_stream.models.topic_schema import TopicSchema
from spark_stream.records import encode_batch

__all__ = ["AsyncTopicProducer", "PlannedFrame", "to_bytes"]


def to_bytes(data: bytes | bytearray | memoryview | str, what: str) -> bytes:
    """A key or value as bytes (``str`` as UTF-8).

    Raises:
        InvalidConfigError: any other type.
    """
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise InvalidConfigError(f"{what} must be bytes or str, got {type(data).__name__}")


@dataclass(frozen=True, slots=True)
class PlannedFrame:
    """A reserved batch and the rows to encode into it."""

    batch: ProducerBatch
    rows: pa.RecordBatch
    schema_version: int = 0


class AsyncTopicProducer:
    """Produces to one topic. Get one from ``FluvioAsync.topic_producer``.

    Attributes:
        topic: the topic produced to.
        config: the validated options.
        producer_id: the idempotent producer id, or None without idempotence.
    """

    def __init__(
        self,
        topic: str,
        config: ProducerConfig,
        watcher: MetadataWatcher,
        leaders: LeaderClient,
    ) -> None:
        self.topic = topic
        known = watcher.view.topics.get(topic)
        if known is not None:
            config = config.for_topic(topic, known.spec.compression.value)
        self.config = config
        self.producer_id: int | None = (
            (config.producer_id or random_producer_id()) if config.idempotence else None
        )
        self._watcher = watcher
        self._partitioner = make_partitioner(config.partitioner)
        self._sender = Sender(topic, config, leaders)
        self.accumulator = Accumulator(topic, config, self.producer_id, self._sender.wake)
        self._sender.start(self.accumulator)
        self._closed = False
        # ``append_record``'s view of the topic: its partition count, valid while the
        # view's topic table is this object (every metadata update swaps in a new one).
        self._seen_topics: object = None
        self._count = 0

    # -- thread-safe core (no awaits) ------------------------------------------------

    def num_partitions(self) -> int:
        """The topic's partition count from the cached metadata.

        Raises:
            UnknownTopicError: the topic is gone.
            InsufficientResourcesError: the topic waits for more SPUs (so does ``send``,
                at once, rather than after the delivery timeout).
            InvalidConfigError: the topic's assignment names unregistered SPUs.
        """
        view = self._watcher.view
        count = view.partition_count(self.topic)
        if count is None:
            raise UnknownTopicError(f"topic {self.topic!r} not found")
        problem = view.topic_problem(self.topic)
        if problem is not None:
            raise problem
        return count

    def topic_schema(self) -> TopicSchema | None:
        """The typed topic's schema from the cached metadata (None: untyped)."""
        known = self._watcher.view.topics.get(self.topic)
        return None if known is None else known.spec.topic_schema

    def append_record(
        self,
        key: bytes | str | None,
        value: bytes | str,
        timestamp_us: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        partition: int | None = None,
    ) -> DeliveryFuture:
        """Partition and append one record without waiting (the arguments of ``send``).

        Positional after ``value`` so that both faces' ``send`` pass them without
        keyword handling (a per-record cost).
        """
        topics = self._watcher.view.topics
        count = self._count if topics is self._seen_topics else self._refresh_count(topics)
        key_b = key if key is None or type(key) is bytes else to_bytes(key, "key")
        value_b = value if type(value) is bytes else to_bytes(value, "value")
        if partition is None:
            partition = self._partitioner.partition(key_b, count)
        elif not 0 <= partition < count:
            raise UnknownPartitionError(
                f"topic {self.topic!r} has partitions 0..{count - 1}, not {partition}"
            )
        if timestamp_us is None:
            ts = time.time_ns() // 1000
        else:
            ts = to_timestamp_us(int(timestamp_us), "us", "send: timestamp_us")
        return self.accumulator.append(partition, key_b, value_b, ts, headers)

    def _refresh_count(self, topics: object) -> int:
        """The partition count for ``append_record`` after a metadata update, cached.

        Errors are not cached: a typed or unusable topic raises on every ``send``.

        Raises:
            SchemaMismatchError: the topic is typed (send Arrow rows with send_batch).
            UnknownTopicError, InsufficientResourcesError, InvalidConfigError: as for
                ``num_partitions``.
        """
        schema = self.topic_schema()
        if schema is not None:
            raise SchemaMismatchError(
                f"topic {self.topic!r} is typed (columns "
                f"{', '.join(c.name for c in schema.columns)}): send its rows as an Arrow "
                "table with send_batch, not key/value records"
            )
        count = self.num_partitions()
        self._count, self._seen_topics = count, topics
        return count

    def plan_batch(
        self,
        data: pa.Table | pa.RecordBatch,
        *,
        key_column: str | None = "key",
        value_column: str = "value",
        timestamp_column: str | None = "timestamp",
        headers_column: str | None = "headers",
        partition: int | None = None,
        partition_column: str | None = None,
    ) -> list[PlannedFrame]:
        """Route and cut Arrow data into reserved frames, in order (arguments of ``send_batch``)."""
        count = self.num_partitions()
        now = time.time_ns() // 1000
        cfg = self.config
        # Route and cut everything first: a bad column fails before anything is queued.
        routed: list[tuple[int, list[pa.RecordBatch]]] = []
        schema = self.topic_schema()
        for source, ids in _with_partition_ids(data, partition_column):
            for records in normalize(
                source,
                key_column=key_column,
                value_column=value_column,
                timestamp_column=timestamp_column,
                headers_column=headers_column,
                now_us=now,
                schema=schema,
                ignore=(partition_column,),
            ):
                for part, rows in split_by_partition(
                    records, count, self._partitioner, partition=partition, partition_ids=ids
                ):
                    routed.append((part, chunk_rows(rows, cfg.batch_size, cfg.max_request_bytes)))
        planned: list[PlannedFrame] = []
        for part, frames in routed:
            reserved = self.accumulator.reserve(
                part, [f.num_rows for f in frames], [f.nbytes for f in frames]
            )
            version = 0 if schema is None else schema.version
            planned.extend(
                PlannedFrame(b, f, version) for b, f in zip(reserved, frames, strict=True)
            )
        return planned

    def encode_planned(self, frame: PlannedFrame) -> None:
        """Encode one planned frame and hand it to the sender (any thread)."""
        batch = frame.batch
        try:
            encoded = encode_batch(
                frame.rows,
                compression=self.config.codec,
                producer_id=self.producer_id if self.producer_id is not None else -1,
                sequence=batch.sequence,
                schema_version=frame.schema_version,
            )
        except (ValueError, pa.ArrowException) as exc:
            self.accumulator.abandon(batch, FluvioError(f"cannot encode batch: {exc}"))
            return
        self.accumulator.fill(batch, encoded)

    def begin_flush(self) -> list[concurrent.futures.Future[BatchMetadata]]:
        """Seal every open draft, wake the sender, and return what is still unsettled."""
        futures = self.accumulator.seal_all()
        self._sender.wake()
        return futures

    # -- asyncio face ----------------------------------------------------------------

    async def send(
        self,
        key: bytes | str | None,
        value: bytes | str,
        *,
        timestamp_us: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        partition: int | None = None,
    ) -> DeliveryFuture:
        """Queue one record; waits only when ``buffer_memory`` is full.

        Args:
            key: hashed to pick the partition (None: round robin); bytes or str.
            value: the record value; bytes or str.
            timestamp_us: the record time (µs since the epoch); default now.
            headers: ``(name, value)`` pairs.
            partition: bypass the partitioner.

        Returns:
            A future of the record's ``RecordMetadata`` (await it, or ``result()``).

        Raises:
            UnknownTopicError: the topic is gone.
            UnknownPartitionError: ``partition`` does not exist.
            RequestTimeoutError: the buffer stayed full past the delivery timeout.
        """
        if not self.accumulator.has_space():
            await self._sender.wait_for_space(self.config.delivery_timeout_ms / 1000.0)
        return self.append_record(key, value, timestamp_us, headers, partition)

    async def send_batch(
        self,
        data: pa.Table | pa.RecordBatch,
        *,
        key_column: str | None = "key",
        value_column: str = "value",
        timestamp_column: str | None = "timestamp",
        headers_column: str | None = "headers",
        partition: int | None = None,
        partition_column: str | None = None,
    ) -> BatchFuture:
        """Queue a whole Arrow table or batch without per-record Python work.

        Args:
            data: the rows. ``value_column`` is required (binary or string); the key,
                timestamp and headers columns are used when present.
            key_column: keys to hash for partitioning (``"key"`` is optional; any other
                name must exist). None: no keys.
            value_column: the record values.
            timestamp_column: per-record timestamps (timestamp or int64 µs); now when absent.
            headers_column: per-record headers (list of ``{key, value}``), when present.
            partition: send every row to this partition.
            partition_column: an integer column naming each row's partition.

        Returns:
            A future of one ``BatchMetadata`` per produced frame.

        Raises:
            InvalidConfigError: a missing or ill-typed column.
            UnknownPartitionError: a partition that does not exist.
        """
        if not self.accumulator.has_space():
            await self._sender.wait_for_space(self.config.delivery_timeout_ms / 1000.0)
        planned = self.plan_batch(
            data,
            key_column=key_column,
            value_column=value_column,
            timestamp_column=timestamp_column,
            headers_column=headers_column,
            partition=partition,
            partition_column=partition_column,
        )
        for frame in planned:
            self.encode_planned(frame)
            await asyncio.sleep(0)  # let the sender ship this frame while we encode the next
        return BatchFuture([f.batch.future for f in planned])

    async def flush(self) -> None:
        """Send everything queued and wait until it is delivered or failed.

        Raises:
            FluvioError: the first delivery error among the batches flushed.
        """
        await _wait_all(self.begin_flush())

    async def close(self) -> None:
        """Flush (bounded by the delivery timeout), then stop the sender. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            async with asyncio.timeout(self.config.delivery_timeout_ms / 1000.0):
                await self.flush()
        except (FluvioError, TimeoutError):
            pass  # delivery errors are on the futures; close still stops everything
        finally:
            self.accumulator.close()
            await self._sender.close()

    async def __aenter__(self) -> AsyncTopicProducer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _wait_all(futures: Sequence[concurrent.futures.Future[BatchMetadata]]) -> None:
    if not futures:
        return
    results = await asyncio.gather(
        *(asyncio.wrap_future(f) for f in futures), return_exceptions=True
    )
    for result in results:
        if isinstance(result, BaseException):
            raise result


def _with_partition_ids(
    data: pa.Table | pa.RecordBatch, partition_column: str | None
) -> list[tuple[pa.Table | pa.RecordBatch, pa.Array | None]]:
    """Pair each batch of ``data`` with its partition-id column (when one is named)."""
    if partition_column is None:
        return [(data, None)]
    batches = data.to_batches() if isinstance(data, pa.Table) else [data]
    out: list[tuple[pa.Table | pa.RecordBatch, pa.Array | None]] = []
    for batch in batches:
        index = batch.schema.get_field_index(partition_column)
        if index < 0:
            raise InvalidConfigError(f"partition column {partition_column!r} not found")
        out.append((batch, batch.column(index)))
    return out
