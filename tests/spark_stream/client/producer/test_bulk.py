"""The bulk path: normalising user Arrow data, routing rows, cutting frames."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from spark_stream.client.producer.bulk import chunk_rows, normalize, row_sizes, split_by_partition
from spark_stream.client.producer.partitioner import Partitioner, fnv1a_32
from spark_stream.errors import InvalidConfigError, RecordTooLargeError, UnknownPartitionError
from spark_stream.records import RECORD_SCHEMA


def one(data: pa.Table | pa.RecordBatch, **kw: object) -> pa.RecordBatch:
    batches = list(normalize(data, now_us=5, **kw))  # type: ignore[arg-type]
    assert len(batches) == 1
    return batches[0]


def test_strings_values_only_become_the_record_schema() -> None:
    out = one(pa.table({"value": ["a", "b"]}))
    assert out.schema == RECORD_SCHEMA
    assert out.column("value").to_pylist() == [b"a", b"b"]
    assert out.column("key").null_count == 2
    assert out.column("timestamp").cast(pa.int64()).to_pylist() == [5, 5]


def test_named_columns_and_timestamp_types() -> None:
    ts = datetime(2024, 1, 2, tzinfo=UTC)
    table = pa.table(
        {
            "k": pa.array(["x", None]),
            "v": pa.array([b"1", b"2"], pa.large_binary()),
            "t": pa.array([ts, ts], pa.timestamp("ms", tz="UTC")),
        }
    )
    out = one(table, key_column="k", value_column="v", timestamp_column="t")
    assert out.column("key").to_pylist() == [b"x", None]
    expected = int(ts.timestamp() * 1_000_000)
    assert out.column("timestamp").cast(pa.int64()).to_pylist() == [expected, expected]
    ints = one(pa.table({"value": [b"a"], "timestamp": pa.array([77], pa.int64())}))
    assert ints.column("timestamp").cast(pa.int64()).to_pylist() == [77]


def test_multi_chunk_tables_give_one_batch_per_chunk() -> None:
    table = pa.concat_tables([pa.table({"value": [b"a"]}), pa.table({"value": [b"b", b"c"]})])
    assert [b.num_rows for b in normalize(table, now_us=1)] == [1, 2]


@pytest.mark.parametrize(
    ("table", "kw", "match"),
    [
        (pa.table({"v": [b"a"]}), {}, "'value' not found"),
        (pa.table({"value": [b"a"]}), {"key_column": "kk"}, "'kk' not found"),
        (pa.table({"value": [1]}), {}, "binary or string"),
        (pa.table({"value": [b"a", None]}), {}, "null"),
        (pa.table({"value": [b"a"], "timestamp": ["x"]}), {}, "timestamp"),
        (
            pa.table({"value": [b"a", b"b"], "timestamp": [1, 1_700_000_000_000_000_000]}),
            {},
            "column 'timestamp' \\(int64\\) is microseconds since the epoch, and "
            "1700000000000000000 us is after the year 9999: it looks like nanoseconds",
        ),
        (
            pa.table({"value": [b"a"], "timestamp": [-1]}),
            {},
            "column 'timestamp' \\(int64\\) is microseconds since the epoch and must be >= 0",
        ),
        (pa.table({"value": [b"a"], "headers": [1]}), {}, "headers"),
    ],
)
def test_bad_columns_are_invalid_config(table: pa.Table, kw: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        one(table, **kw)


def test_not_arrow_is_invalid_config() -> None:
    with pytest.raises(InvalidConfigError):
        list(normalize([b"a"], now_us=1))  # type: ignore[arg-type]


def test_split_by_key_hash_keeps_row_order_within_partitions() -> None:
    keys = [f"k{i % 10}".encode() for i in range(100)]
    batch = one(pa.table({"key": keys, "value": [str(i) for i in range(100)]}))
    routed = split_by_partition(batch, 3, Partitioner("hash"))
    seen = 0
    for part, rows in routed:
        assert all(fnv1a_32(k) % 3 == part for k in rows.column("key").to_pylist())
        values = [int(v) for v in rows.column("value").to_pylist()]
        assert values == sorted(values)
        seen += rows.num_rows
    assert seen == 100


def test_split_explicit_partition_and_partition_column() -> None:
    batch = one(pa.table({"value": [b"a", b"b", b"c"]}))
    assert split_by_partition(batch, 2, Partitioner(), partition=1) == [(1, batch)]
    routed = split_by_partition(batch, 2, Partitioner(), partition_ids=pa.array([1, 0, 1]))
    assert [(p, r.column("value").to_pylist()) for p, r in routed] == [
        (0, [b"b"]),
        (1, [b"a", b"c"]),
    ]
    with pytest.raises(UnknownPartitionError):
        split_by_partition(batch, 2, Partitioner(), partition=2)
    with pytest.raises(UnknownPartitionError):
        split_by_partition(batch, 2, Partitioner(), partition_ids=pa.array([0, 5, 1]))


def test_chunk_rows_cuts_by_size_and_keeps_every_row() -> None:
    batch = one(pa.table({"value": [b"x" * 100] * 50}))
    sizes = row_sizes(batch)
    assert sizes.tolist() == [124] * 50
    chunks = chunk_rows(batch, 1000, 10_000)
    assert sum(c.num_rows for c in chunks) == 50
    assert all(int(row_sizes(c).sum()) <= 1000 for c in chunks)
    assert (
        np.concatenate([c.column("value").to_numpy(zero_copy_only=False) for c in chunks]).tolist()
        == [b"x" * 100] * 50
    )
    assert chunk_rows(batch, 1 << 20, 1 << 20) == [batch]


def test_chunk_rows_refuses_a_row_larger_than_a_request() -> None:
    batch = one(pa.table({"value": [b"x" * 1000]}))
    with pytest.raises(RecordTooLargeError):
        chunk_rows(batch, 100, 500)
