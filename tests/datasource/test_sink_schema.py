"""Sink column checks (driver) and Arrow casts (executor)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from datasource.schema import spark_schema
from datasource.sink_schema import SinkColumns, sink_columns, to_record_batch
from spark_stream.errors import SinkSchemaError
from spark_stream.records import HEADERS_TYPE, RECORD_SCHEMA, null_headers

HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def _schema(**cols: object) -> StructType:
    return StructType([StructField(name, dt) for name, dt in cols.items()])  # type: ignore[arg-type]


def test_all_columns() -> None:
    schema = _schema(
        key=StringType(),
        value=BinaryType(),
        topic=StringType(),
        partition=IntegerType(),
        timestamp=TimestampType(),
        headers=HEADERS,
    )
    assert sink_columns(schema, topic_option=False) == SinkColumns(True, True, True, True, True)


def test_topic_option_wins_over_the_column() -> None:
    schema = _schema(value=StringType(), topic=StringType())
    assert sink_columns(schema, topic_option=True).topic is False


def test_a_read_of_a_topic_writes_as_it_is() -> None:
    """offset/timestampType are ignored, and so is the partition the rows came from."""
    for headers in (False, True):
        used = sink_columns(spark_schema(headers), topic_option=True)
        assert used == SinkColumns(key=True, timestamp=True, headers=headers)


def test_a_read_without_the_topic_option_routes_by_its_topic_column() -> None:
    assert sink_columns(spark_schema(), topic_option=False).topic is True


@pytest.mark.parametrize(
    ("columns", "preserve", "routes"),
    [
        ({"partition": IntegerType()}, None, True),  # no source columns: a routing override
        ({"partition": IntegerType(), "offset": IntegerType()}, None, False),
        ({"partition": IntegerType(), "timestampType": IntegerType()}, None, False),
        ({"partition": IntegerType(), "offset": IntegerType()}, True, True),
        ({"partition": IntegerType()}, False, False),
    ],
)
def test_the_partition_column_routes_unless_it_comes_from_a_read(
    columns: dict[str, object], preserve: bool | None, routes: bool
) -> None:
    schema = _schema(value=StringType(), **columns)
    used = sink_columns(schema, topic_option=True, preserve_partitions=preserve)
    assert used.partition is routes


def test_ignored_columns_are_not_type_checked() -> None:
    schema = _schema(value=StringType(), topic=IntegerType(), partition=StringType())
    used = sink_columns(schema, topic_option=True, preserve_partitions=False)
    assert used == SinkColumns()


@pytest.mark.parametrize(
    ("schema", "topic_option", "message"),
    [
        (_schema(value=StringType(), extra=StringType(), more=IntegerType()), True, "extra, more"),
        (_schema(key=StringType()), True, "'value'"),
        (_schema(value=DoubleType()), True, "column 'value' must be binary or string"),
        (_schema(value=StringType(), partition=StringType()), True, "column 'partition'"),
        (_schema(value=StringType(), headers=StringType()), True, "column 'headers'"),
        (_schema(value=StringType()), False, "'topic' option"),
        (_schema(value=StringType(), offset=IntegerType(), score=DoubleType()), True, "(s) score "),
    ],
)
def test_bad_schemas_name_the_columns(schema: StructType, topic_option: bool, message: str) -> None:
    with pytest.raises(SinkSchemaError) as info:
        sink_columns(schema, topic_option=topic_option)
    assert message in str(info.value)


def test_preserve_partitions_needs_a_partition_column() -> None:
    with pytest.raises(SinkSchemaError, match="'preservePartitions' is true"):
        sink_columns(_schema(value=StringType()), topic_option=True, preserve_partitions=True)


def test_casts_to_the_producer_types() -> None:
    ts = pa.array([datetime(2024, 1, 1, tzinfo=UTC)] * 2, pa.timestamp("us", tz="Europe/Paris"))
    batch = pa.RecordBatch.from_pydict(
        {
            "value": pa.array(["a", "b"]),
            "key": pa.array(["k", None]),
            "timestamp": ts,
            "headers": pa.array(
                [[{"key": "h", "value": b"1"}], None],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            ),
            "partition": pa.array([1, 0], pa.int64()),
        }
    )
    out = to_record_batch(
        batch, SinkColumns(key=True, partition=True, timestamp=True, headers=True)
    )
    assert out.column("value").type == pa.binary()
    assert out.column("key").to_pylist() == [b"k", None]
    assert out.column("timestamp").type == RECORD_SCHEMA.field("timestamp").type
    assert out.column("timestamp")[0].as_py() == datetime(2024, 1, 1, tzinfo=UTC)
    assert out.column("headers").type == HEADERS_TYPE
    assert out.column("partition").type == pa.int32()


def test_missing_headers_become_compact_nulls() -> None:
    batch = pa.RecordBatch.from_pydict({"value": pa.array([b"a"] * 1000)})
    out = to_record_batch(batch, SinkColumns())
    headers = out.column("headers")
    assert headers.type == HEADERS_TYPE and headers.null_count == 1000
    assert len(headers.values) == 0
    assert all(b is None or b.size <= 4 for b in headers.values.buffers())
    assert null_headers(0).null_count == 0


def test_null_values_are_rejected() -> None:
    batch = pa.RecordBatch.from_pydict({"value": pa.array([b"a", None])})
    with pytest.raises(SinkSchemaError, match="null"):
        to_record_batch(batch, SinkColumns())
