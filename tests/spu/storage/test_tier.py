"""Parquet export of sealed segments into an fsspec tier directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_stream.errors import CorruptFrameError
from spark_stream.records import OFFSET_FIELD, RECORD_SCHEMA
from spu.storage import ReplicaLog, tier_path
from spu.storage.tier import dictionary_columns, plain_columns

from .helpers import fill


def log_table(log: ReplicaLog, base: int, end: int) -> pa.Table:
    batches = []
    offset = base
    while offset < end:
        piece = log.read(offset, 1 << 20, end_offset=end)
        batches += piece.decode(with_offsets=True)
        offset = piece.next_offset
    return pa.Table.from_batches(batches)


def test_parquet_file_content_equals_the_log(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 40)
    segment = log.segments[1]
    url = log.export_parquet(segment.base_offset, tmp_path / "tier")
    assert url == tier_path(tmp_path / "tier", segment.base_offset)
    assert Path(url).name == f"{segment.base_offset:020d}.parquet"

    table = pq.read_table(url)
    assert table.schema.remove_metadata().equals(pa.schema([OFFSET_FIELD, *RECORD_SCHEMA]))
    assert table.schema.metadata[b"fluvio.base_offset"] == str(segment.base_offset).encode()
    assert table.schema.metadata[b"fluvio.next_offset"] == str(segment.next_offset).encode()
    assert table.column("offset").to_pylist() == list(
        range(segment.base_offset, segment.next_offset)
    )
    expected = log_table(log, segment.base_offset, segment.next_offset)
    assert table.replace_schema_metadata(None).equals(expected)


def test_default_tier_is_inside_the_replica_directory(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log()
    fill(log, 20)
    url = log.export_parquet(0)
    assert Path(url).parent == log.directory / "tier"
    assert pq.read_table(url).num_rows == log.segments[0].next_offset


def test_any_fsspec_url_works(open_log: Callable[..., ReplicaLog], tmp_path: Path) -> None:
    log = open_log()
    fill(log, 20)
    url = log.export_parquet(0, "memory://tier/orders-0")
    with fsspec.open(url, "rb") as f:
        table = pq.read_table(f)
    assert table.num_rows == log.segments[0].next_offset
    fs = fsspec.filesystem("memory")
    assert fs.ls("/tier/orders-0", detail=False) == ["/tier/orders-0/00000000000000000000.parquet"]
    fs.rm("/tier", recursive=True)

    file_url = log.export_parquet(0, f"file://{tmp_path}/t2")
    assert pq.read_table(file_url.removeprefix("file://")).num_rows == table.num_rows


def test_a_damaged_segment_does_not_export(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    fill(log, 20)
    segment = log.segments[0]
    log.close()
    data = bytearray(segment.path.read_bytes())
    data[len(data) // 2] ^= 0x01
    segment.path.write_bytes(bytes(data))
    reopened = open_log()
    with pytest.raises(CorruptFrameError):
        reopened.export_parquet(0)
    assert not (reopened.directory / "tier" / "00000000000000000000.parquet").exists()


_HEADERS = ["headers.list.element.key", "headers.list.element.value"]


@pytest.mark.parametrize(
    ("schema", "plain", "expected"),
    [
        # untyped: the payload and the per-record columns are PLAIN
        (RECORD_SCHEMA, frozenset({"offset", "timestamp", "value"}), ["key", *_HEADERS]),
        (
            pa.schema([OFFSET_FIELD, *RECORD_SCHEMA]),
            frozenset(),
            ["offset", "key", "value", "timestamp", *_HEADERS],
        ),
        (
            pa.schema(
                [
                    pa.field("m", pa.map_(pa.string(), pa.int64())),
                    pa.field("s", pa.struct([("a", pa.int8()), ("b", pa.large_list(pa.string()))])),
                    pa.field("f", pa.list_(pa.int32(), 2)),
                ]
            ),
            frozenset(),
            ["m.key_value.key", "m.key_value.value", "s.a", "s.b.list.element", "f.list.element"],
        ),
    ],
)
def test_dictionary_columns_are_parquet_leaf_paths(
    schema: pa.Schema, plain: frozenset[str], expected: list[str]
) -> None:
    assert dictionary_columns(schema, plain) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (RECORD_SCHEMA, {"offset", "timestamp", "value"}),
        (RECORD_SCHEMA.with_metadata({"x": "y"}), {"offset", "timestamp", "value"}),
        # a typed topic's own column named value keeps its dictionary
        (pa.schema([pa.field("value", pa.string()), *RECORD_SCHEMA]), {"offset", "timestamp"}),
    ],
)
def test_plain_columns(schema: pa.Schema, expected: set[str]) -> None:
    assert plain_columns(schema) == expected


def test_leaf_paths_name_what_pyarrow_encodes(tmp_path: Path) -> None:
    """Every path ``dictionary_columns`` names is a leaf pyarrow dictionary-encodes (a
    wrong name would be ignored silently)."""
    table = pa.table(
        {
            "m": pa.array([[("a", 1)]] * 50, pa.map_(pa.string(), pa.int64())),
            "s": pa.array(
                [{"a": 1, "b": ["x"]}] * 50,
                pa.struct([("a", pa.int8()), ("b", pa.large_list(pa.string()))]),
            ),
            "f": pa.array([[1, 2]] * 50, pa.list_(pa.int32(), 2)),
        }
    )
    paths = dictionary_columns(table.schema, frozenset())
    pq.write_table(table, tmp_path / "x.parquet", use_dictionary=paths)
    group = pq.ParquetFile(tmp_path / "x.parquet").metadata.row_group(0)
    encoded = {
        group.column(i).path_in_schema
        for i in range(group.num_columns)
        if "RLE_DICTIONARY" in group.column(i).encodings
    }
    assert encoded == set(paths)


def test_unique_columns_are_written_plain(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 40)
    url = log.export_parquet(log.segments[0].base_offset, tmp_path / "tier")
    group = pq.ParquetFile(url).metadata.row_group(0)
    dictionary = {
        group.column(i).path_in_schema
        for i in range(group.num_columns)
        if "RLE_DICTIONARY" in group.column(i).encodings
    }
    assert dictionary == {"key", *_HEADERS}
