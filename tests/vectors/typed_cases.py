"""Vectors of typed topics (``typed_frames.json``): a topic schema with two versions,
typed frames of each version and compression, the read schema Spark gets, and the
driver's checks of a DataFrame written to the topic.

The JVM connector's ``TopicSchema``, ``FrameBuffer``/``BatchFrames`` (typed frames carry
their schema message before the records), ``TypedSchema`` (the read schema, column for
column PySpark's ``from_arrow_type``) and ``TypedSink`` (Python's messages) must agree
with these; ``TypedFramesTest`` checks them.

Values in ``rows`` are JSON: timestamps as integers in their column's unit, dates as
days, decimals as strings, binary as hex; ``null`` for a column a frame's version lacks.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from datasource.typed import typed_sink_columns, typed_spark_schema
from spark_stream.errors import FluvioError
from spark_stream.models.topic_schema import TopicSchema, encode_arrow, storage_schema
from spark_stream.records import Compression, encode_batch, read_header

__all__ = ["typed_frames"]

_BASE_TS = 1_764_000_000_000_000
_COMPRESSIONS: tuple[Compression, ...] = ("none", "lz4", "zstd")

V1 = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ms", pa.timestamp("ms", tz="UTC")),
        pa.field("local", pa.timestamp("us")),
        pa.field("ns", pa.timestamp("ns", tz="UTC")),
        pa.field("day", pa.date32()),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("text", pa.large_string()),
        pa.field("flag", pa.bool_()),
        pa.field("small", pa.int16()),
        pa.field("ratio", pa.float32()),
        pa.field("blob", pa.binary()),
    ]
)
V2 = V1.append(pa.field("score", pa.float64()))


def _user_rows(n: int, version: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        row: dict[str, Any] = {
            "id": i,
            "name": None if i % 4 == 1 else f"name-{i}",
            "ms": datetime(2025, 11, 24, 16, 0, i, i * 1000, tzinfo=UTC),
            "local": datetime(2024, 1, 2, 3, 4, 5, i),
            "ns": None if i == 2 else datetime(2025, 1, 1, tzinfo=UTC),
            "day": datetime(2025, 3, 1 + i).date(),
            "amount": Decimal(f"{i * 7}.{i:02d}"),
            "text": "é" * i,
            "flag": None if i == 3 else i % 2 == 0,
            "small": -i,
            "ratio": i / 4,
            "blob": bytes(range(i)),
        }
        if version == 2:
            row["score"] = None if i == 0 else i * 1.5
        rows.append(row)
    return rows


def _batch(version: int, n: int) -> pa.RecordBatch:
    user = V1 if version == 1 else V2
    table = pa.Table.from_pylist(_user_rows(n, version), schema=user)
    keys = pa.array([None if i % 3 == 0 else f"k{i}".encode() for i in range(n)], pa.binary())
    ts = pa.array([_BASE_TS + i for i in range(n)], pa.timestamp("us", tz="UTC"))
    headers = pa.nulls(n, storage_schema(user).field("headers").type)
    columns = [*table.columns, keys, ts, headers]
    return pa.RecordBatch.from_arrays(
        [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns],
        schema=storage_schema(user),
    )


def _json_value(value: Any, kind: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        raw = pa.int64() if pa.types.is_timestamp(kind) else pa.int32()
        return pa.scalar(value, kind).cast(raw).as_py()
    if pa.types.is_decimal(kind):
        return str(value)
    if pa.types.is_binary(kind):
        return bytes(value).hex()
    return value


def _frame_json(version: int, compression: Compression, index: int) -> dict[str, Any]:
    n = 5
    batch = _batch(version, n)
    frame = encode_batch(
        batch, base_offset=2000 + index, compression=compression, schema_version=version
    )
    header = read_header(frame)
    rows = []
    for i, row in enumerate(batch.to_pylist()):
        out = {f.name: _json_value(row[f.name], f.type) for f in V2 if f.name in row}
        out.setdefault("score", None)  # read in the latest version: null before v2
        out["key"] = None if row["key"] is None else row["key"].hex()
        out["timestamp"] = _BASE_TS + i
        rows.append(out)
    return {
        "name": f"v{version}_{compression}",
        "schema_version": header.schema_version,
        "compression": compression,
        "base_offset": header.base_offset,
        "record_count": header.record_count,
        "bytes": frame.hex(),
        "rows": rows,
    }


def _sink_cases(schema: TopicSchema) -> list[dict[str, Any]]:
    fields = [
        StructField("id", LongType(), False),
        StructField("name", StringType()),
        StructField("key", StringType()),
    ]
    cases = {
        "user and record columns": StructType(fields),
        "a column the topic lacks": StructType([*fields, StructField("flagged", BooleanType())]),
        "another type": StructType(
            [StructField("id", DoubleType()), StructField("name", StringType())]
        ),
        "a not-null column missing": StructType([StructField("name", StringType())]),
        "an int for a bigint": StructType([StructField("id", IntegerType())]),
    }
    out = []
    for name, df in cases.items():
        try:
            typed_sink_columns(df, schema, "typed")
            error = None
        except FluvioError as exc:
            error = f"{type(exc).__name__}: {exc}"
        out.append({"name": name, "schema": df.json(), "error": error})
    return out


def typed_frames() -> dict[str, Any]:
    """The typed topic's spec, its read schema, frames of both versions, sink checks."""
    schema = TopicSchema.of(V1).evolve(V2)
    frames = [
        _frame_json(version, compression, i)
        for i, (version, compression) in enumerate((v, c) for v in (1, 2) for c in _COMPRESSIONS)
    ]
    return {
        "topic_schema": schema.to_dict(),
        "read_schema": typed_spark_schema(schema).json(),
        "storage_schemas": {
            str(v): encode_arrow(storage_schema(schema.user_schema(v))) for v in (1, 2)
        },
        "frames": frames,
        "sink": _sink_cases(schema),
    }
