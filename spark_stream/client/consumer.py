"""Asyncio consumers: one partition, or many merged, as records or Arrow batches."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pyarrow as pa

from spark_stream.client.offset import Offset
from spark_stream.client.types import Record
from spark_stream.protocol.data import Isolation

__all__ = ["AsyncPartitionConsumer", "AsyncConsumer"]


class AsyncPartitionConsumer:
    """Reads one partition. Get one from ``FluvioAsync.partition_consumer``."""

    topic: str
    partition: int

    def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> AsyncIterator[Record]:
        """Records from ``offset`` on, as they become visible (streaming fetch).

        Args:
            offset: where to start.
            isolation: overrides the consumer's ``isolation``.
            end_offset: stop before this offset.
            stop_at_end: stop at the end visible when the stream starts (``-d``).
        """
        raise NotImplementedError

    def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> AsyncIterator[pa.RecordBatch]:
        """Like ``stream`` but Arrow batches: ``partition``, ``offset`` then record columns."""
        raise NotImplementedError


class AsyncConsumer:
    """Reads several partitions of a topic, merged. From ``FluvioAsync.consumer``."""

    topic: str
    partitions: list[int]

    def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        stop_at_end: bool = False,
    ) -> AsyncIterator[Record]:
        """Records of every partition from ``offset`` (per partition), in order per partition."""
        raise NotImplementedError

    def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        stop_at_end: bool = False,
    ) -> AsyncIterator[pa.RecordBatch]:
        """Arrow batches of every partition (each batch from one partition)."""
        raise NotImplementedError
