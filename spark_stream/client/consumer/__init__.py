"""Consumer side of the client: partition and topic consumers, the low-level fetches
Spark reads with, local segment-file reads, and offsets."""

from __future__ import annotations

from spark_stream.client.consumer.consumer import AsyncConsumer, AsyncPartitionConsumer
from spark_stream.client.consumer.fetch import GroupFetch
from spark_stream.client.consumer.offset import Offset, OffsetKind

__all__ = ["AsyncConsumer", "AsyncPartitionConsumer", "GroupFetch", "Offset", "OffsetKind"]
