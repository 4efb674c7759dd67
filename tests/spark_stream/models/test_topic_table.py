"""The ``table`` topic setting and the column types a Delta table keeps."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.models.topic import TableFormat, TopicSpec
from spark_stream.models.topic_schema import TopicSchema
from spark_stream.models.topic_table import check_delta_types
from spark_stream.records import RECORD_SCHEMA


@pytest.mark.parametrize(
    "kind",
    [
        pa.int64(),
        pa.string(),
        pa.timestamp("us", tz="UTC"),
        pa.timestamp("us"),
        pa.date32(),
        pa.decimal128(10, 2),
        pa.binary(),
        RECORD_SCHEMA.field("headers").type,
    ],
)
def test_delta_types_accepted(kind: pa.DataType) -> None:
    schema = pa.schema([pa.field("c", kind)])
    assert check_delta_types(schema) is schema


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (pa.uint32(), "no unsigned integers"),
        (pa.timestamp("ns", tz="UTC"), "microseconds"),
        (pa.timestamp("ms"), "microseconds"),
        (pa.list_(pa.uint8()), "no unsigned integers"),
        (pa.time64("us"), "no such type"),
    ],
)
def test_delta_types_refused(kind: pa.DataType, message: str) -> None:
    pattern = rf"column 'c' \({re.escape(str(kind))}\).*{message}"
    with pytest.raises(InvalidConfigError, match=pattern):
        check_delta_types(pa.schema([pa.field("c", kind)]))


def test_the_spec_takes_table_in_any_case_and_checks_typed_columns() -> None:
    assert TopicSpec.from_dict({"table": "Delta"}).table is TableFormat.DELTA
    assert TopicSpec.from_dict({}).table is None
    assert TopicSpec.from_dict({"table": "delta"}).to_dict()["table"] == "delta"
    schema = TopicSchema.of(pa.schema([pa.field("n", pa.uint8())])).to_dict()
    assert TopicSpec.from_dict({"topicSchema": schema}).table is None
    with pytest.raises(InvalidConfigError, match="'n' \\(uint8\\) cannot be in a Delta table"):
        TopicSpec.from_dict({"topicSchema": schema, "table": "delta"})
    with pytest.raises(InvalidConfigError, match="table"):
        TopicSpec.from_dict({"table": "iceberg"})
