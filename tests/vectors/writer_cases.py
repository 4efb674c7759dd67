"""Vectors of the write side: writer options and sink columns (``writer_options.json``).

``parse_writer_options`` and ``sink_columns`` decide what a write accepts and the exact
messages it refuses with; the JVM connector's ``WriterOptions`` and ``SinkColumns`` must
agree with them case for case, which ``WriterOptionsTest`` checks against these files.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from datasource.options import parse_writer_options
from datasource.sink_schema import sink_columns, typed_topic_refused
from spark_stream.errors import FluvioError

__all__ = ["writer_options"]

_EP = {"endpoint": "127.0.0.1:9003"}

_WRITER_CASES: list[dict[str, str]] = [
    {"topic": "t", **_EP},
    {**_EP},
    {"TOPIC": " t ", "ACKS": "Leader", "checkpointLocation": "/c", **_EP},
    {"topic": "", **_EP},
    {"topic": "  ", **_EP},
    {"topik": "t", **_EP},
    {"path": "t", **_EP},
    {"topic": "t", "compression": "zstd", **_EP},
    {"topic": "t", "compression": "LZ4", **_EP},
    {"topic": "t", "compression": "gzip", **_EP},
    {"topic": "t", "batchSize": "1", **_EP},
    {"topic": "t", "batchSize": "0", **_EP},
    {"topic": "t", "batchSize": "x", **_EP},
    {"topic": "t", "acks": "none", **_EP},
    {"topic": "t", "preservePartitions": "TRUE", **_EP},
    {"topic": "t", "preservePartitions": "yes", **_EP},
    {"topic": "t", "endpoint": "nohost"},
    {"topic": "t", "endpoint": "h:99999"},
    {"topic": "t", "kafka.bootstrap.servers": "h1:9003,h2:9003"},
    {"topic": "t", "kafka.bootstrap.servers": "h1:9003", "endpoint": "h2:9003"},
    {"topic": "t", "compresion": "zstd", **_EP},
    {"topic": "t", "subscribe": "t", **_EP},
    {"topic": "t", "mergeSchema": "TRUE", **_EP},
    {"topic": "t", "mergeSchema": "false", **_EP},
    {"topic": "t", "mergeschema": "yes", **_EP},
    {"mergeSchema": "true", **_EP},
    {"mergeSchema": "false", **_EP},
]

_HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def _schema(*fields: tuple[str, Any]) -> StructType:
    return StructType([StructField(name, dt) for name, dt in fields])


_READ = (
    ("key", BinaryType()),
    ("value", BinaryType()),
    ("topic", StringType()),
    ("partition", IntegerType()),
    ("offset", LongType()),
    ("timestamp", TimestampType()),
    ("timestampType", IntegerType()),
)

# (schema, topic option set, preservePartitions option or None)
_SINK_CASES: list[tuple[StructType, bool, bool | None]] = [
    (_schema(("value", StringType())), True, None),
    (_schema(("value", BinaryType()), ("key", StringType())), True, None),
    (_schema(("key", StringType())), True, None),
    (
        _schema(("value", StringType()), ("extra", IntegerType()), ("more", IntegerType())),
        True,
        None,
    ),
    (_schema(("value", StringType())), False, None),
    (_schema(("value", StringType()), ("topic", StringType())), False, None),
    (_schema(("value", StringType()), ("topic", StringType())), True, None),
    (_schema(("value", DoubleType())), True, None),
    (_schema(("value", StringType()), ("key", IntegerType())), True, None),
    (_schema(("value", StringType()), ("topic", IntegerType())), False, None),
    (_schema(("value", StringType()), ("topic", IntegerType())), True, None),
    (_schema(("value", StringType()), ("partition", LongType())), True, None),
    (_schema(("value", StringType()), ("partition", StringType())), True, None),
    (_schema(("value", StringType()), ("partition", StringType())), True, False),
    (_schema(("value", StringType())), True, True),
    (_schema(("value", StringType()), ("timestamp", LongType())), True, None),
    (_schema(("value", StringType()), ("headers", _HEADERS)), True, None),
    (_schema(("value", StringType()), ("headers", ArrayType(StringType()))), True, None),
    (_schema(*_READ), True, None),
    (_schema(*_READ), True, True),
    (_schema(*_READ), False, None),
    (_schema(("id", LongType()), ("name", StringType()), ("topic", StringType())), False, None),
    (_schema(("id", LongType()), ("name", StringType())), True, None),
]

# (topic, its user columns, routed by the topic column)
_TYPED_TARGETS: list[tuple[str, list[str], bool]] = [
    ("cities", ["id", "name"], True),
    ("cities", ["id", "name"], False),
    ("o'neil", ["x"], True),
]


def _error(exc: FluvioError) -> str:
    return f"{type(exc).__name__}: {exc}"


def writer_options() -> dict[str, Any]:
    """Writer options and sink schemas, each with what Python makes of it."""
    writer = []
    for options in _WRITER_CASES:
        case: dict[str, Any] = {"options": options}
        try:
            opts = parse_writer_options(options)
        except FluvioError as exc:
            case["error"] = _error(exc)
        else:
            case["parsed"] = {
                "endpoint": opts.endpoint,
                "topic": opts.topic,
                "compression": opts.compression,
                "batch_size": opts.batch_size,
                "acks": opts.acks,
                "preserve_partitions": opts.preserve_partitions,
                "merge_schema": opts.merge_schema,
            }
        writer.append(case)
    sink = []
    for schema, topic_option, preserve in _SINK_CASES:
        sink_case: dict[str, Any] = {
            "schema": schema.json(),
            "topic_option": topic_option,
            "preserve_partitions": preserve,
        }
        try:
            used = sink_columns(schema, topic_option=topic_option, preserve_partitions=preserve)
        except FluvioError as exc:
            sink_case["error"] = _error(exc)
        else:
            sink_case["used"] = {
                "key": used.key,
                "topic": used.topic,
                "partition": used.partition,
                "timestamp": used.timestamp,
                "headers": used.headers,
            }
        sink.append(sink_case)
    typed_targets = [
        {
            "topic": topic,
            "columns": columns,
            "routed": routed,
            "message": typed_topic_refused(topic, columns, routed=routed),
        }
        for topic, columns, routed in _TYPED_TARGETS
    ]
    return {"writer": writer, "sink_columns": sink, "typed_targets": typed_targets}
