"""The pure rules of Delta commits: pending files, stats, schemas, Delta types."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.records import OFFSET_FIELD, RECORD_SCHEMA
from spu.storage.delta_plan import (
    PARTITION_FIELD,
    TieredFile,
    add_stats,
    app_id,
    delta_schema,
    file_path,
    missing_columns,
    pending,
    table_schema,
)


def tf(base: int, partition: int = 0) -> TieredFile:
    return TieredFile(partition, base, records=10, min_offset=base, max_offset=base + 9, size=1)


@pytest.mark.parametrize(
    ("bases", "committed", "expected"),
    [
        ([0, 10, 20], None, [0, 10, 20]),  # a new table: everything
        ([0, 10, 20], 0, [10, 20]),  # the first is in
        ([0, 10, 20], 20, []),  # a retry after a crash past the commit
        ([20, 0, 10], 5, [10, 20]),  # any order in, ascending out
        ([10, 10, 30], 0, [10, 30]),  # the same file twice counts once
        ([], None, []),
        ([0], 0, []),  # the first file of a partition, committed: base 0 <= version 0
    ],
)
def test_pending(bases: list[int], committed: int | None, expected: list[int]) -> None:
    assert [f.base_offset for f in pending([tf(b) for b in bases], committed)] == expected


def test_paths_and_app_ids_follow_the_tier_layout() -> None:
    assert file_path(3, 42) == "partition=3/00000000000000000042.parquet"
    assert tf(42, partition=3).path == file_path(3, 42)
    assert app_id(3) == "fluvio-partition-3"
    assert app_id(3) != app_id(30)


def test_stats_are_exact_offset_bounds_and_count() -> None:
    stats = json.loads(add_stats(TieredFile(1, 100, 7, 100, 110, 5)))
    assert stats == {
        "numRecords": 7,
        "minValues": {"offset": 100},
        "maxValues": {"offset": 110},
        "nullCount": {"offset": 0},
    }


def test_table_schema_appends_the_partition_column_and_drops_metadata() -> None:
    file_schema = pa.schema([OFFSET_FIELD, *RECORD_SCHEMA]).with_metadata({"fluvio.x": "1"})
    schema = table_schema(file_schema)
    assert schema.names == ["offset", "key", "value", "timestamp", "headers", "partition"]
    assert schema.field("partition").equals(PARTITION_FIELD)
    assert not schema.metadata


ID = pa.field("id", pa.int64(), nullable=False)
NAME = pa.field("name", pa.string())


@pytest.mark.parametrize(
    ("table", "wanted", "added"),
    [
        ([ID], [ID], []),
        ([ID], [ID, NAME], ["name"]),
        ([ID, NAME], [ID], []),  # an older file lacks a column: it reads as null
        ([ID], [NAME, ID], ["name"]),  # order does not matter to Delta (by name)
        ([pa.field("id", pa.large_string())], [pa.field("id", pa.string())], []),
    ],
)
def test_missing_columns(table: list[pa.Field], wanted: list[pa.Field], added: list[str]) -> None:
    assert [f.name for f in missing_columns(pa.schema(table), pa.schema(wanted))] == added


@pytest.mark.parametrize(
    ("table", "wanted", "message"),
    [
        ([ID], [ID, pa.field("n", pa.int32(), nullable=False)], r"'n' \(int32\) is not nullable"),
        ([ID], [pa.field("id", pa.string())], "'id' is string in the new files but int64"),
    ],
)
def test_missing_columns_refuses(
    table: list[pa.Field], wanted: list[pa.Field], message: str
) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        missing_columns(pa.schema(table), pa.schema(wanted))


def test_a_type_delta_cannot_hold_is_a_typed_error() -> None:
    with pytest.raises(InvalidConfigError, match="cannot be a Delta table's: .*Timestamp"):
        delta_schema(pa.schema([pa.field("t", pa.timestamp("s"))]))
