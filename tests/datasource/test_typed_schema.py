"""A typed topic's DataFrame schema, declared for Spark and for Arrow (no session needed)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from datasource.typed import (
    to_typed_rows,
    to_typed_spark_batch,
    typed_arrow_schema,
    typed_sink_columns,
    typed_spark_schema,
)
from spark_stream.errors import DataSourceOptionError, SchemaMismatchError
from spark_stream.models.topic_schema import TopicSchema, storage_schema
from spark_stream.records import null_headers

USER = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def test_a_decoded_typed_batch_converts_to_the_declared_arrow_schema() -> None:
    schema = TopicSchema.of(USER)
    output = typed_arrow_schema(typed_spark_schema(schema))
    stored = storage_schema(USER)
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([3, 4], pa.int64()),
            pa.array([1, 2], pa.int64()),
            pa.array(["a", None]),
            pa.nulls(2, pa.binary()),
            pa.array([1, 2], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            null_headers(2),
        ],
        schema=pa.schema([pa.field("offset", pa.int64(), nullable=False), *stored]),
    )
    out = to_typed_spark_batch(batch, "t", 5, output)
    assert out.schema.equals(output)
    assert out.to_pydict()["topic"] == ["t", "t"] and out.to_pydict()["partition"] == [5, 5]
    assert out.column("offset").to_pylist() == [3, 4]


def test_a_column_spark_cannot_type_is_named() -> None:
    schema = TopicSchema.of(pa.schema([pa.field("n", pa.uint64())]))
    with pytest.raises(DataSourceOptionError, match="column 'n' \\(uint64\\) has no Spark type"):
        typed_spark_schema(schema)


def test_written_columns_are_checked_and_cast_to_the_topics_spelling() -> None:
    schema = TopicSchema.of(USER)
    ok = StructType([StructField("id", LongType(), False), StructField("name", StringType())])
    typed_sink_columns(ok, schema, "t")
    with pytest.raises(SchemaMismatchError, match="column 'name' is bigint"):
        typed_sink_columns(
            StructType([StructField("id", LongType()), StructField("name", LongType())]),
            schema,
            "t",
        )
    spark_batch = pa.record_batch(
        {"id": pa.array([1], pa.int64()), "name": pa.array(["x"], pa.large_string()),
         "offset": pa.array([9], pa.int64())}
    )  # fmt: skip
    rows = to_typed_rows(spark_batch, schema, ())
    assert rows.schema.names == ["id", "name"] and rows.schema.field("name").type == pa.string()
