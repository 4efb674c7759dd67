"""The client library: connect to a cluster, administer it, produce and consume.

Blocking use (threads, CLI, Spark)::

    from spark_stream.client import Fluvio, Offset

    with Fluvio.connect() as fluvio:                # FLUVIO_ENDPOINT or the profile, or "host:9003"
        producer = fluvio.topic_producer("orders", acks="all", linger_ms=5)
        producer.send(b"k1", b"v1").result()         # RecordMetadata(partition, offset)
        producer.send_batch(arrow_table)             # bulk, vectorised
        producer.flush()
        for record in fluvio.partition_consumer("orders", 0).stream(Offset.beginning()):
            ...

asyncio use: ``FluvioAsync`` has the same methods as coroutines and async iterators.
Spark's low-level reads: ``fetch_offsets``, ``offset_for_timestamp``,
``topic_partitions``, ``fetch_frames`` and ``fetch_batches``.
"""

from __future__ import annotations

from spark_stream.client.config import (
    Acks,
    Compression,
    ConsumerConfig,
    Isolation,
    ProducerConfig,
    parse_acks,
    parse_isolation,
    producer_id_for,
    random_producer_id,
)
from spark_stream.client.consumer.consumer import AsyncConsumer, AsyncPartitionConsumer
from spark_stream.client.consumer.group import AsyncGroupConsumer
from spark_stream.client.consumer.offset import Offset, OffsetKind
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.client.producer.futures import BatchFuture, DeliveryFuture
from spark_stream.client.producer.partitioner import Partitioner, fnv1a_32, fnv1a_32_array
from spark_stream.client.producer.producer import AsyncTopicProducer
from spark_stream.client.profile import resolve_endpoint
from spark_stream.client.sync import (
    Consumer,
    Fluvio,
    GroupConsumer,
    PartitionConsumer,
    SyncAdmin,
    SyncStream,
    TopicProducer,
)
from spark_stream.client.types import (
    BatchMetadata,
    PartitionInfo,
    PartitionOffsets,
    PreferredElection,
    Record,
    RecordMetadata,
)
from spark_stream.net.tls import TlsConfig

__all__ = [
    "TlsConfig",
    "Fluvio",
    "FluvioAsync",
    "TopicProducer",
    "AsyncTopicProducer",
    "PartitionConsumer",
    "AsyncPartitionConsumer",
    "Consumer",
    "AsyncConsumer",
    "GroupConsumer",
    "AsyncGroupConsumer",
    "SyncStream",
    "SyncAdmin",
    "Offset",
    "OffsetKind",
    "Acks",
    "Isolation",
    "Compression",
    "ProducerConfig",
    "ConsumerConfig",
    "parse_acks",
    "parse_isolation",
    "producer_id_for",
    "random_producer_id",
    "Partitioner",
    "fnv1a_32",
    "fnv1a_32_array",
    "DeliveryFuture",
    "BatchFuture",
    "PartitionInfo",
    "PartitionOffsets",
    "PreferredElection",
    "RecordMetadata",
    "BatchMetadata",
    "Record",
    "resolve_endpoint",
]
