"""The reader's output schema, declared once for Spark and for Arrow, and the conversion.

A fetched batch frame decodes (zero-copy) to a record batch of ``RECORD_SCHEMA`` plus an
``offset`` column; ``to_spark_batch`` rearranges those columns into the declared schema
and adds the constant ``topic``/``partition``/``timestampType`` columns with Arrow
kernels, so no Python code runs per record. Spark checks that every batch a Python
source yields has exactly the Arrow schema it derives from the declared ``StructType``
(``string`` not ``large_string``, ``timestamp[us, UTC]``, nullability), so the two
declarations here are tested against each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache

import numpy as np
import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_stream.errors import DataSourceOptionError
from spark_stream.records import HEADERS_TYPE, OFFSET_FIELD, RECORD_SCHEMA

__all__ = [
    "TIMESTAMP_TYPE_CREATE",
    "spark_schema",
    "arrow_schema",
    "to_spark_batch",
    "empty_batch",
    "combine",
    "topic_column",
    "int32_column",
    "typed_in_untyped_read",
]

TIMESTAMP_TYPE_CREATE = 0
"""``timestampType`` value of every record: the producer's create time (Kafka's 0)."""

_HEADERS_SPARK = ArrayType(
    StructType([StructField("key", StringType(), False), StructField("value", BinaryType(), True)]),
    containsNull=True,
)


@cache
def spark_schema(include_headers: bool = False) -> StructType:
    """The DataFrame schema of ``format("fluvio")`` reads, as in Spark's Kafka source.

    Args:
        include_headers: add the ``headers`` column (``includeHeaders=true``).
    """
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("timestamp", TimestampType(), False),
        StructField("timestampType", IntegerType(), False),
    ]
    if include_headers:
        fields.append(StructField("headers", _HEADERS_SPARK, True))
    return StructType(fields)


@cache
def arrow_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema every yielded batch has; equal to what Spark derives from
    ``spark_schema(include_headers)``."""
    fields = [
        RECORD_SCHEMA.field("key"),
        RECORD_SCHEMA.field("value"),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        OFFSET_FIELD,
        RECORD_SCHEMA.field("timestamp"),
        pa.field("timestampType", pa.int32(), nullable=False),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE, nullable=True))
    return pa.schema(fields)


def to_spark_batch(
    batch: pa.RecordBatch, topic: str, partition: int, *, include_headers: bool = False
) -> pa.RecordBatch:
    """Turn a decoded batch (``offset`` + ``RECORD_SCHEMA`` columns) into the output schema.

    Column buffers are reused as they are; only the three constant columns are built.

    Args:
        batch: as ``records.decode_frames(..., with_offsets=True)`` returns it (or a slice).
        topic: the topic the batch was read from.
        partition: the partition index.
        include_headers: keep the ``headers`` column.

    Raises:
        DataSourceOptionError: the batch is a typed topic's (a read of several topics
            met it).
    """
    if batch.schema.get_field_index("value") < 0:
        raise DataSourceOptionError(typed_in_untyped_read(topic))
    n = batch.num_rows
    columns = [
        batch.column("key"),
        batch.column("value"),
        _constant(_topic_block(topic), n),
        _constant(_int32_block(partition), n),
        batch.column("offset"),
        batch.column("timestamp"),
        _constant(_int32_block(TIMESTAMP_TYPE_CREATE), n),
    ]
    if include_headers:
        columns.append(batch.column("headers"))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def typed_in_untyped_read(topic: str) -> str:
    """Why a read of several topics (a list or a pattern) cannot read typed ``topic``,
    and how to read it (the JVM connector's ``FrameColumns`` says the same)."""
    return (
        f"topic {topic!r} is typed (its records have columns, not 'value'): read it alone "
        "with the 'topic' option, not through 'topics' or 'topicPattern'"
    )


_BLOCK_ROWS = 1 << 16
"""Rows of the cached constant columns that batches take zero-copy slices of."""


@lru_cache(maxsize=64)
def _topic_block(topic: str) -> pa.Array:
    return pa.repeat(pa.scalar(topic, pa.string()), _BLOCK_ROWS)


@lru_cache(maxsize=256)
def _int32_block(value: int) -> pa.Array:
    return pa.array(np.full(_BLOCK_ROWS, value, dtype=np.int32), pa.int32())


def _constant(block: pa.Array, n: int) -> pa.Array:
    """``n`` rows of a constant column: a slice of ``block`` (no copy), or built whole
    for a batch longer than the block."""
    if n <= _BLOCK_ROWS:
        return block.slice(0, n)
    return pa.repeat(block[0], n)


def topic_column(topic: str, n: int) -> pa.Array:
    """``n`` rows of ``topic`` (a zero-copy slice of a cached block)."""
    return _constant(_topic_block(topic), n)


def int32_column(value: int, n: int) -> pa.Array:
    """``n`` rows of the int32 ``value`` (a zero-copy slice of a cached block)."""
    return _constant(_int32_block(value), n)


def empty_batch(include_headers: bool = False) -> pa.RecordBatch:
    """A zero-row batch of the output schema."""
    schema = arrow_schema(include_headers)
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def combine(batches: Sequence[pa.RecordBatch]) -> pa.RecordBatch:
    """Concatenate same-schema batches into one (copies; used to merge small frames)."""
    if len(batches) == 1:
        return batches[0]
    return pa.concat_batches(list(batches))
