"""``FluvioAsync``: the asyncio client core (SC metadata, SPU connections, low-level fetch).

Theory of operation. ``connect`` opens the SC's public endpoint, wraps it in the admin
client and starts one metadata watch; a ``MetadataCache`` mirrors the SPUs and
partitions it pushes, so leader discovery is a dictionary lookup refreshed on change.
Data requests go straight to partition leaders over pooled connections (one per SPU,
multiplexed). A retriable failure (``NotLeaderError``, a closed connection) drops the
cached leader, waits for the watch to report a new one (bounded), and retries.

Everything here runs on one event loop; ``spark_stream.client.Fluvio`` is the same API
for threads, running this class on a background loop thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pyarrow as pa

from spark_stream.client.types import PartitionInfo, PartitionOffsets
from spark_stream.protocol.data import DEFAULT_FETCH_MAX_BYTES, Isolation

__all__ = ["FluvioAsync"]


class FluvioAsync:
    """A connection to a cluster, for asyncio code. Create it with ``await connect()``."""

    endpoint: str

    @classmethod
    async def connect(
        cls, endpoint: str | None = None, *, timeout: float = 10.0  # noqa: ASYNC109
    ) -> FluvioAsync:
        """Connect to the SC at ``"host:port"``, or the local profile when None.

        Args:
            endpoint: the SC public address; None reads the profile written by
                ``fluvio cluster start`` (``~/.fluvio/profile.json`` or ``FLUVIO_PROFILE``).
            timeout: bound on connecting and receiving the first metadata.

        Raises:
            ConnectionClosedError: the SC is unreachable.
            NotFoundError: no endpoint given and no profile found.
        """
        raise NotImplementedError

    def admin(self) -> Any:
        """The admin client (``spark_stream.admin.AdminClient``) on this connection."""
        raise NotImplementedError

    async def topic_producer(self, topic: str, **config: Any) -> Any:
        """A producer for ``topic`` (``AsyncTopicProducer``); options as ``ProducerConfig``.

        Raises:
            UnknownTopicError: the topic does not exist.
            InvalidConfigError: an unknown option or a bad value.
        """
        raise NotImplementedError

    async def partition_consumer(self, topic: str, partition: int, **config: Any) -> Any:
        """A consumer of one partition (``AsyncPartitionConsumer``); options as
        ``ConsumerConfig``."""
        raise NotImplementedError

    async def consumer(
        self, topic: str, partitions: list[int] | None = None, **config: Any
    ) -> Any:
        """A consumer of several partitions (all when None) merged (``AsyncConsumer``)."""
        raise NotImplementedError

    async def topic_partitions(self, topic: str) -> list[PartitionInfo]:
        """Every partition of ``topic`` with its leader and replicas, by index.

        Raises:
            UnknownTopicError: the topic does not exist.
        """
        raise NotImplementedError

    async def fetch_offsets(self, topic: str, partition: int) -> PartitionOffsets:
        """The partition's ``(log_start, hw, leo)`` as its leader sees them now."""
        raise NotImplementedError

    async def offset_for_timestamp(
        self, topic: str, partition: int, timestamp_us: int
    ) -> int | None:
        """The first offset whose timestamp is at or after ``timestamp_us`` (None: none)."""
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
    ) -> AsyncIterator[memoryview]:
        """Raw batch frames covering ``[start, end_exclusive)``, one frame per item.

        Frames are whole and as stored: the first may begin before ``start`` and the
        last may end after ``end_exclusive`` (decode and slice, or use
        ``fetch_batches``). ``end_exclusive=None`` reads to the end visible at the first
        fetch (HW for committed, LEO for uncommitted). Fails over to a new leader.

        Raises:
            OffsetOutOfRangeError: ``start`` is below the log start or past the end.
        """
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
    ) -> AsyncIterator[pa.RecordBatch]:
        """Exactly the records ``[start, end_exclusive)`` as Arrow batches.

        Each batch has the record schema with an ``offset`` column first (unless
        ``with_offsets=False``); buffers are zero-copy views of the received frames.
        """
        raise NotImplementedError

    async def close(self) -> None:
        """Close producers' connections, the metadata watch and the SC connection."""
        raise NotImplementedError

    async def __aenter__(self) -> FluvioAsync:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
