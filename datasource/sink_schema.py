"""Which DataFrame columns the sink maps to record fields, checked once on the driver.

``sink_columns`` validates the DataFrame's Spark schema when the write starts (so a
stray or ill-typed column fails the query before any task runs, naming the column);
``to_record_batch`` then casts each incoming Arrow batch to the producer's column
types with Arrow kernels (string -> binary, any-zone timestamp -> UTC), no Python per row.

Copying a topic must just work, so the columns a read of ``format("fluvio")`` has and a
topic cannot store are ignored, as Spark's Kafka sink ignores what it does not use:

- ``offset`` and ``timestampType`` (``SOURCE_COLUMNS``) are always ignored. Only a read
  of a topic makes them, so a DataFrame with either is taken for one.
- ``topic`` routes rows unless the ``topic`` option is set (then it is ignored).
- ``partition`` routes rows (overriding the key hash), except in a read of a topic:
  there it says where each row came from, which means nothing for another topic, and is
  ignored. The ``preservePartitions`` option decides explicitly (``true``: route by it,
  e.g. to copy a topic partition for partition; ``false``: ignore it).

Any other column is an error naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from spark_stream.errors import SinkSchemaError
from spark_stream.records import HEADERS_TYPE, RECORD_SCHEMA, null_headers

__all__ = [
    "SinkColumns",
    "sink_columns",
    "to_record_batch",
    "typed_topic_refused",
    "SINK_COLUMNS",
    "SOURCE_COLUMNS",
]

SINK_COLUMNS = ("key", "value", "topic", "partition", "timestamp", "headers")
SOURCE_COLUMNS = ("offset", "timestampType")
"""Columns of a topic read that a record does not carry: ignored by the sink."""


_NO_VALUE_TOPIC_OPTION = (
    "the DataFrame needs a 'value' column (binary or string): the topic is untyped (only "
    "a typed topic takes other columns; option 'mergeSchema' types an empty one)"
)
_NO_VALUE_ROUTED = (
    "the DataFrame needs a 'value' column (binary or string): rows routed by a 'topic' "
    "column are untyped records; to write a typed topic's columns, name it with the "
    "'topic' option"
)


def typed_topic_refused(topic: str, columns: Sequence[str], *, routed: bool) -> str:
    """Why untyped records cannot go to typed ``topic``, and what to do instead.

    Args:
        columns: the topic's user columns.
        routed: the rows were routed by the ``topic`` column (else the ``topic`` option
            named the topic and the DataFrame has a ``value`` column).
    """
    what = f"topic {topic!r} is typed (columns {', '.join(columns)})"
    if routed:
        return (
            f"{what}: rows routed by the 'topic' column are untyped records (key, value); "
            "write a DataFrame of its columns to it alone with the 'topic' option, or "
            "route records to untyped topics only"
        )
    return (
        f"{what}: write a DataFrame of its columns, not 'value' (a 'value' column makes "
        "untyped records)"
    )


@dataclass(frozen=True)
class SinkColumns:
    """Which optional columns the written DataFrame has (``value`` always does)."""

    key: bool = False
    topic: bool = False
    partition: bool = False
    timestamp: bool = False
    headers: bool = False


def _bytes_like(dt: DataType) -> bool:
    return isinstance(dt, BinaryType | StringType)


def _headers_ok(dt: DataType) -> bool:
    if not isinstance(dt, ArrayType) or not isinstance(dt.elementType, StructType):
        return False
    fields = {f.name: f.dataType for f in dt.elementType.fields}
    return (
        set(fields) == {"key", "value"}
        and isinstance(fields["key"], StringType)
        and _bytes_like(fields["value"])
    )


_CHECKS = {
    "key": (_bytes_like, "binary or string"),
    "value": (_bytes_like, "binary or string"),
    "topic": (lambda dt: isinstance(dt, StringType), "string"),
    "partition": (lambda dt: isinstance(dt, IntegerType | LongType | ShortType), "int"),
    "timestamp": (lambda dt: isinstance(dt, TimestampType), "timestamp"),
    "headers": (_headers_ok, "array<struct<key: string, value: binary>>"),
}


def sink_columns(
    schema: StructType, *, topic_option: bool, preserve_partitions: bool | None = None
) -> SinkColumns:
    """Check a DataFrame schema for writing to topics (the rules are in the module doc).

    Args:
        schema: the DataFrame's schema.
        topic_option: whether the ``topic`` option is set (then a ``topic`` column is
            ignored).
        preserve_partitions: the ``preservePartitions`` option; None when not given.

    Raises:
        SinkSchemaError: a missing ``value``, an unknown column, a wrong type, no topic,
            or ``preservePartitions=true`` without a ``partition`` column.
    """
    names = [f.name for f in schema.fields]
    if "value" not in names:  # before the other columns: they may be a typed topic's
        raise SinkSchemaError(_NO_VALUE_TOPIC_OPTION if topic_option else _NO_VALUE_ROUTED)
    unknown = [n for n in names if n not in SINK_COLUMNS and n not in SOURCE_COLUMNS]
    if unknown:
        raise SinkSchemaError(
            f"cannot write column(s) {', '.join(unknown)} to a topic; the fluvio sink takes "
            f"{', '.join(SINK_COLUMNS)} and ignores {', '.join(SOURCE_COLUMNS)} "
            "(select or rename columns first)"
        )
    if preserve_partitions and "partition" not in names:
        raise SinkSchemaError(
            "option 'preservePartitions' is true but the DataFrame has no 'partition' column"
        )
    if not topic_option and "topic" not in names:
        raise SinkSchemaError("set the 'topic' option or give the DataFrame a 'topic' column")
    read_of_topic = any(n in SOURCE_COLUMNS for n in names)
    if preserve_partitions is None:
        preserve_partitions = not read_of_topic
    used = SinkColumns(
        key="key" in names,
        topic="topic" in names and not topic_option,
        partition="partition" in names and preserve_partitions,
        timestamp="timestamp" in names,
        headers="headers" in names,
    )
    for field in schema.fields:
        if field.name == "value" or getattr(used, field.name, False):
            check, expected = _CHECKS[field.name]
            if not check(field.dataType):
                raise SinkSchemaError(
                    f"column '{field.name}' must be {expected}, got {field.dataType.simpleString()}"
                )
    return used


def to_record_batch(batch: pa.RecordBatch, columns: SinkColumns) -> pa.RecordBatch:
    """The producer's view of a Spark Arrow batch: binary key/value, UTC timestamps,
    and always a ``headers`` column (compact nulls when the DataFrame has none).

    Raises:
        SinkSchemaError: null values in ``value``.
    """
    value = batch.column("value")
    if value.null_count:
        raise SinkSchemaError(f"column 'value' has {value.null_count} null value(s)")
    arrays = [value.cast(pa.binary())]
    names = ["value"]
    if columns.key:
        arrays.append(batch.column("key").cast(pa.binary()))
        names.append("key")
    if columns.timestamp:
        arrays.append(batch.column("timestamp").cast(RECORD_SCHEMA.field("timestamp").type))
        names.append("timestamp")
    headers = batch.column("headers").cast(HEADERS_TYPE) if columns.headers else None
    arrays.append(null_headers(batch.num_rows) if headers is None else headers)
    names.append("headers")
    if columns.partition:
        arrays.append(batch.column("partition").cast(pa.int32()))
        names.append("partition")
    return pa.RecordBatch.from_arrays(arrays, names=names)
