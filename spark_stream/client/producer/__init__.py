"""Producer side of the client: the topic producer, its per-partition accumulator, the
sender loop, the bulk (Arrow) path, partitioning and delivery futures."""

from __future__ import annotations

from spark_stream.client.producer.futures import BatchFuture, DeliveryFuture
from spark_stream.client.producer.partitioner import Partitioner, fnv1a_32, fnv1a_32_array
from spark_stream.client.producer.producer import AsyncTopicProducer

__all__ = [
    "AsyncTopicProducer",
    "BatchFuture",
    "DeliveryFuture",
    "Partitioner",
    "fnv1a_32",
    "fnv1a_32_array",
]
