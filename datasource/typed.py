"""Typed topics in ``format("fluvio")``: their DataFrame schema, read batches, written rows.

A typed topic reads as its user columns, then ``key``, ``topic``, ``partition``,
``offset``, ``timestamp``, ``headers`` (no ``value``: the columns are the value). The
schema comes from the topic's spec, looked up on the driver when Spark asks for the
DataFrame schema (``typed_user_schema``); executors get the Arrow output schema in the
pickled ``ReadSpec`` and never look it up. Writing to a typed topic sends the
DataFrame's user columns as they are (after the checks in ``typed_sink_columns``); the
producer checks them against the topic once more and the leader a last time.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
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

from datasource.clients import client_for
from datasource.schema import int32_column, topic_column
from spark_stream.client import TlsConfig
from spark_stream.errors import DataSourceOptionError, SchemaMismatchError
from spark_stream.models.topic_schema import TopicSchema

__all__ = [
    "typed_user_schema",
    "typed_spark_schema",
    "typed_arrow_schema",
    "to_typed_spark_batch",
    "typed_sink_columns",
    "to_typed_rows",
    "SINK_EXTRA",
]

_HEADERS_SPARK = ArrayType(
    StructType([StructField("key", StringType(), False), StructField("value", BinaryType(), True)]),
    containsNull=True,
)
_SYSTEM = (
    StructField("key", BinaryType(), True),
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    StructField("offset", LongType(), False),
    StructField("timestamp", TimestampType(), False),
    StructField("headers", _HEADERS_SPARK, True),
)
#: Columns a written DataFrame may have besides a typed topic's user columns: the
#: record's own (``key``, ``timestamp``, ``headers``, ``partition``: routes rows) and
#: what a read of a topic adds (ignored).
SINK_EXTRA = frozenset({"key", "timestamp", "headers", "partition", "topic", "offset"})


def typed_user_schema(
    endpoint: str | None,
    topics: Sequence[str],
    *,
    tls: TlsConfig | None = None,
    token: str | None = None,
) -> TopicSchema | None:
    """The schema of the typed topic a read or write names, None for untyped topics.

    Raises:
        DataSourceOptionError: a typed topic named together with other topics (a
            DataFrame has one schema).
    """
    if not topics:
        return None
    found = client_for(endpoint, tls=tls, token=token).admin().list_topics(*topics)
    typed = [t for t in found if t.spec.topic_schema is not None]
    if not typed:
        return None
    if len(topics) > 1:
        raise DataSourceOptionError(
            f"topic {typed[0].name!r} is typed: read it alone with the 'topic' option, not with "
            f"{', '.join(t for t in topics if t != typed[0].name)}"
        )
    return typed[0].spec.topic_schema


def typed_spark_schema(schema: TopicSchema) -> StructType:
    """The DataFrame schema of a typed topic read.

    Raises:
        DataSourceOptionError: a column type Spark has no type for.
    """
    fields: list[StructField] = []
    for field in schema.user_schema():
        try:
            kind = from_arrow_type(field.type, prefer_timestamp_ntz=True)
        except TypeError as exc:  # PySparkTypeError: an Arrow type Spark lacks
            raise DataSourceOptionError(
                f"column {field.name!r} ({field.type}) has no Spark type: {exc}"
            ) from None
        fields.append(StructField(field.name, kind, field.nullable))
    return StructType([*fields, *_SYSTEM])


def typed_arrow_schema(struct: StructType) -> pa.Schema:
    """The Arrow schema Spark expects of each batch of ``struct`` (read output)."""
    return to_arrow_schema(struct, timezone="UTC")


def to_typed_spark_batch(
    batch: pa.RecordBatch, topic: str, partition: int, output: pa.Schema
) -> pa.RecordBatch:
    """A decoded typed batch (offset, user columns, key, timestamp, headers) in the output
    schema; columns whose Arrow type Spark spells otherwise are cast (zero-copy when
    equal)."""
    n = batch.num_rows
    columns: list[pa.Array] = []
    for field in output:
        if field.name == "topic":
            column = topic_column(topic, n)
        elif field.name == "partition":
            column = int32_column(partition, n)
        else:
            column = batch.column(field.name)
        if column.type != field.type:
            column = column.cast(field.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=output)


def typed_sink_columns(df_schema: StructType, schema: TopicSchema, topic: str) -> None:
    """Check a DataFrame written to a typed topic, on the driver, before any task runs.

    Raises:
        SchemaMismatchError: a column the topic does not have, a user column of another
            Spark type than the topic's, or a non-nullable column missing.
    """
    user = schema.user_schema()
    given = {f.name: f for f in df_schema.fields}
    for name in given:
        if user.get_field_index(name) < 0 and name not in SINK_EXTRA:
            raise SchemaMismatchError(
                f"column {name!r} is not in typed topic {topic!r} "
                f"(columns: {', '.join(user.names)})"
            )
    for field in user:
        spark_field = given.get(field.name)
        if spark_field is None:
            if not field.nullable:
                raise SchemaMismatchError(
                    f"column {field.name!r} ({field.type}, not null) of typed topic "
                    f"{topic!r} is missing"
                )
            continue
        expected = from_arrow_type(field.type, prefer_timestamp_ntz=True)
        if spark_field.dataType != expected:
            raise SchemaMismatchError(
                f"column {field.name!r} is {spark_field.dataType.simpleString()}, typed topic "
                f"{topic!r} says {field.type} ({expected.simpleString()})"
            )


def to_typed_rows(
    batch: pa.RecordBatch, schema: TopicSchema, record_columns: Sequence[str]
) -> pa.RecordBatch:
    """A written Arrow batch with the topic's user columns in the topic's Arrow types
    (Spark's ``large_string`` -> ``string``...), plus the ``record_columns`` the sink
    uses (key, timestamp, headers, partition); the others (a read's offset...) dropped.

    Raises:
        SchemaMismatchError: a value that does not fit the topic's type.
    """
    names: list[str] = []
    columns: list[pa.Array] = []
    for field in schema.user_schema():
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            continue
        column = batch.column(index)
        if column.type != field.type:
            try:
                column = column.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"column {field.name!r} ({column.type}) does not fit {field.type}: {exc}"
                ) from None
        names.append(field.name)
        columns.append(column)
    for name in record_columns:
        index = batch.schema.get_field_index(name)
        if index >= 0:
            names.append(name)
            columns.append(batch.column(index))
    return pa.RecordBatch.from_arrays(columns, names=names)
