"""``Fluvio``: the blocking face of ``FluvioAsync``, for threads, the CLI and Spark.

Theory of operation. Each ``Fluvio`` owns one daemon thread running an event loop, and
the ``FluvioAsync`` core lives on it. A blocking call submits a coroutine to that loop
and waits for its result; iterators cross the thread once per Arrow batch (records of a
batch are then handed out locally). The producer's accumulator is thread-safe, so
``send`` never crosses to the loop thread at all: it appends under a lock and wakes the
sender only when a batch fills or a linger timer must start. ``close`` stops producers
and consumers, closes every socket, then stops and joins the thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from spark_stream.client.futures import BatchFuture, DeliveryFuture
from spark_stream.client.offset import Offset
from spark_stream.client.types import PartitionInfo, PartitionOffsets, Record
from spark_stream.protocol.data import DEFAULT_FETCH_MAX_BYTES, Isolation

__all__ = ["Fluvio", "TopicProducer", "PartitionConsumer", "Consumer", "SyncStream"]


class SyncStream(Iterator[Any]):
    """A blocking iterator over an async stream on the client's loop; close it when done."""

    def __next__(self) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the stream (cancels it on the leader). Idempotent."""
        raise NotImplementedError

    def __enter__(self) -> SyncStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class TopicProducer:
    """Blocking face of ``AsyncTopicProducer`` (see it for the arguments)."""

    topic: str
    producer_id: int | None

    def send(
        self,
        key: bytes | str | None,
        value: bytes | str,
        *,
        timestamp_us: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        partition: int | None = None,
    ) -> DeliveryFuture:
        """Queue one record; returns its delivery future (``.result()`` waits)."""
        raise NotImplementedError

    def send_batch(
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
        """Queue a whole Arrow table or batch (vectorised partitioning and encoding)."""
        raise NotImplementedError

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait for it (raises the first delivery error)."""
        raise NotImplementedError

    def close(self, timeout: float | None = None) -> None:
        """Flush and stop. Idempotent."""
        raise NotImplementedError

    def __enter__(self) -> TopicProducer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class PartitionConsumer:
    """Blocking face of ``AsyncPartitionConsumer``."""

    topic: str
    partition: int

    def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream:
        """A blocking iterator of ``Record`` from ``offset``."""
        raise NotImplementedError

    def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream:
        """A blocking iterator of ``pyarrow.RecordBatch`` from ``offset``."""
        raise NotImplementedError


class Consumer:
    """Blocking face of ``AsyncConsumer`` (several partitions merged)."""

    topic: str
    partitions: list[int]

    def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream:
        """A blocking iterator of ``Record`` of every partition."""
        raise NotImplementedError

    def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream:
        """A blocking iterator of ``pyarrow.RecordBatch`` of every partition."""
        raise NotImplementedError


class Fluvio:
    """A blocking connection to a cluster. ``Fluvio.connect()`` or ``Fluvio.connect("h:p")``."""

    endpoint: str

    @classmethod
    def connect(cls, endpoint: str | None = None, *, timeout: float = 10.0) -> Fluvio:
        """Connect to the SC at ``"host:port"``, or the local profile when None.

        Raises:
            ConnectionClosedError: the SC is unreachable.
            NotFoundError: no endpoint given and no profile found.
        """
        raise NotImplementedError

    def admin(self) -> Any:
        """A blocking admin client: the methods of ``AdminClient``, run on the loop."""
        raise NotImplementedError

    def topic_producer(self, topic: str, **config: Any) -> TopicProducer:
        """A producer for ``topic``; options as ``ProducerConfig``."""
        raise NotImplementedError

    def partition_consumer(self, topic: str, partition: int, **config: Any) -> PartitionConsumer:
        """A consumer of one partition; options as ``ConsumerConfig``."""
        raise NotImplementedError

    def consumer(
        self, topic: str, partitions: list[int] | None = None, **config: Any
    ) -> Consumer:
        """A consumer of several partitions (all when None)."""
        raise NotImplementedError

    def topic_partitions(self, topic: str) -> list[PartitionInfo]:
        """Every partition of ``topic`` with its leader and replicas, by index."""
        raise NotImplementedError

    def fetch_offsets(self, topic: str, partition: int) -> PartitionOffsets:
        """``(log_start, hw, leo)`` of a partition, from its leader."""
        raise NotImplementedError

    def offset_for_timestamp(self, topic: str, partition: int, timestamp_us: int) -> int | None:
        """The first offset at or after ``timestamp_us`` (None: no record that recent)."""
        raise NotImplementedError

    def fetch_frames(
        self,
        topic: str,
        partition: int,
        start: int,
        end_exclusive: int | None = None,
        *,
        isolation: Isolation | str = Isolation.COMMITTED,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
    ) -> Iterator[memoryview]:
        """Raw whole batch frames covering ``[start, end_exclusive)`` (see ``FluvioAsync``)."""
        raise NotImplementedError

    def fetch_batches(
        self,
        topic: str,
        partition: int,
        start: int,
        end_exclusive: int | None = None,
        *,
        isolation: Isolation | str = Isolation.COMMITTED,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        with_offsets: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """Exactly the records ``[start, end_exclusive)`` as Arrow batches with offsets."""
        raise NotImplementedError

    def close(self) -> None:
        """Close everything and stop the loop thread. Idempotent."""
        raise NotImplementedError

    def __enter__(self) -> Fluvio:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_ = Record  # re-exported through the package
