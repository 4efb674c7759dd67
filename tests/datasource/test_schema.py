"""The declared schema equals what Spark derives, and frames convert to it exactly."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from datasource.schema import arrow_schema, combine, empty_batch, spark_schema, to_spark_batch
from spark_stream.records import decode_frames, encode_records


@pytest.mark.parametrize("headers", [False, True])
def test_arrow_schema_is_what_spark_expects(headers: bool) -> None:
    expected = to_arrow_schema(spark_schema(headers), timezone="UTC")
    assert expected.equals(arrow_schema(headers))
    assert arrow_schema(headers).field("topic").type == pa.string()
    assert arrow_schema(headers).field("timestamp").type == pa.timestamp("us", tz="UTC")


def _frames() -> bytes:
    one = encode_records(
        [b"v0", b"v1", b"v2"],
        keys=[b"k0", None, b"k2"],
        timestamps=[1_000_000, 2_000_000, 3_000_000],
        headers=[[("h", b"x")], None, []],
        base_offset=40,
    )
    two = encode_records(["v3"], timestamps=[4_000_000], base_offset=43)
    return one + two


@pytest.mark.parametrize("headers", [False, True])
def test_frames_convert_to_the_output_schema(headers: bool) -> None:
    batches = decode_frames(_frames(), with_offsets=True)
    out = [to_spark_batch(b, "orders", 3, include_headers=headers) for b in batches]
    expected_schema = to_arrow_schema(spark_schema(headers), timezone="UTC")
    for batch in out:
        assert batch.schema.equals(expected_schema)
        batch.validate(full=True)
    table = pa.Table.from_batches(out).to_pydict()
    assert table["offset"] == [40, 41, 42, 43]
    assert table["key"] == [b"k0", None, b"k2", None]
    assert table["value"] == [b"v0", b"v1", b"v2", b"v3"]
    assert table["topic"] == ["orders"] * 4
    assert table["partition"] == [3] * 4
    assert table["timestampType"] == [0] * 4
    assert [t.timestamp() for t in table["timestamp"]] == [1.0, 2.0, 3.0, 4.0]
    if headers:
        assert table["headers"][0] == [{"key": "h", "value": b"x"}]
        assert table["headers"][1] is None
    else:
        assert "headers" not in table


def test_conversion_reuses_value_buffers() -> None:
    batch = decode_frames(_frames(), with_offsets=True)[0]
    out = to_spark_batch(batch, "t", 0)
    assert out.column("value").buffers()[2].address == batch.column("value").buffers()[2].address


def test_slices_and_combine_keep_the_schema() -> None:
    batches = [to_spark_batch(b, "t", 1) for b in decode_frames(_frames(), with_offsets=True)]
    merged = combine([batches[0].slice(1), batches[1]])
    assert merged.schema.equals(arrow_schema())
    assert merged.column("offset").to_pylist() == [41, 42, 43]
    assert combine([batches[1]]) is batches[1]
    assert empty_batch(True).num_rows == 0 and empty_batch(True).schema.equals(arrow_schema(True))
