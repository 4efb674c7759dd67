"""The asyncio topic producer: ``send`` into the accumulator, a sender loop per partition.

See ``accumulator.py`` for batching and ``sender.py`` for delivery, retries and
idempotence.
"""

from __future__ import annotations

import pyarrow as pa

from spark_stream.client.futures import BatchFuture, DeliveryFuture

__all__ = ["AsyncTopicProducer"]


class AsyncTopicProducer:
    """Produces to one topic. Get one from ``FluvioAsync.topic_producer``.

    Attributes:
        topic: the topic produced to.
        producer_id: the idempotent producer id, or None without idempotence.
    """

    topic: str
    producer_id: int | None

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

        Returns:
            A future of the record's ``RecordMetadata`` (await it, or ``result()``).
        """
        raise NotImplementedError

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
                name must exist).
            value_column: the record values.
            timestamp_column: per-record timestamps (timestamp or int64 µs); now when absent.
            headers_column: per-record headers (list of ``{key, value}``), when present.
            partition: send every row to this partition.
            partition_column: an integer column naming each row's partition.

        Returns:
            A future of one ``BatchMetadata`` per produced frame.

        Raises:
            InvalidConfigError: a missing or ill-typed column, or a bad partition.
        """
        raise NotImplementedError

    async def flush(self) -> None:
        """Send everything queued and wait until it is delivered or failed."""
        raise NotImplementedError

    async def close(self) -> None:
        """Flush, then stop the sender. Idempotent."""
        raise NotImplementedError

    async def __aenter__(self) -> AsyncTopicProducer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
