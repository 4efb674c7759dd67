"""Spark reads a topic's Delta table: rows, partition pruning, offset skipping, time travel."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from spu.storage import ReplicaLog
from spu.storage.delta_plan import file_path
from spu.storage.delta_table import CHECKPOINT_INTERVAL, commit_segments

from .helpers import fill

pytestmark = [
    pytest.mark.spark,
    pytest.mark.spark_source("python", reason="reads format('delta'), not format('fluvio')"),
]


@pytest.fixture
def table_of_three_partitions(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> tuple[str, dict[int, list[int]], int]:
    """A table of the same segments tiered as partitions 0-2, one commit per file."""
    log = open_log()
    fill(log, 20)
    root = tmp_path / "orders"
    bases = [s.base_offset for s in log.segments[:-1]]
    for p in range(3):
        for base in bases:
            log.export_parquet(base, root / f"partition={p}")
            commit_segments(str(root), p, [base])
    return str(root), {p: bases for p in range(3)}, log.segments[-1].base_offset


def test_spark_reads_the_table_with_partition_pruning(
    spark: SparkSession, table_of_three_partitions: tuple[str, dict[int, list[int]], int]
) -> None:
    root, bases, records = table_of_three_partitions
    df = spark.read.format("delta").load(root)
    assert df.columns == ["offset", "key", "value", "timestamp", "headers", "partition"]
    assert df.count() == 3 * records
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: records, 1: records, 2: records}

    one = df.where("partition = 1")
    files = sorted(
        Path(f.removeprefix("file:")).relative_to(root).as_posix() for f in one.inputFiles()
    )
    assert files == sorted(file_path(1, b) for b in bases[1])
    plan = one._jdf.queryExecution().executedPlan().toString()
    assert re.search(r"PartitionFilters: \[[^\]]*\(partition#\d+ = 1\)", plan), plan
    assert sorted(r["offset"] for r in one.select("offset").collect()) == list(range(records))


def test_offset_stats_skip_files(
    spark: SparkSession, table_of_three_partitions: tuple[str, dict[int, list[int]], int]
) -> None:
    root, bases, records = table_of_three_partitions
    last = bases[0][-1]
    tail = spark.read.format("delta").load(root).where(f"partition = 0 and offset >= {last}")
    assert [Path(f).name for f in tail.inputFiles()] == [f"{last:020d}.parquet"]
    assert tail.count() == records - last


def test_time_travel_by_version(
    spark: SparkSession, table_of_three_partitions: tuple[str, dict[int, list[int]], int]
) -> None:
    root, bases, _ = table_of_three_partitions
    first = spark.read.format("delta").option("versionAsOf", 0).load(root)
    # Version 0 holds only the first file of partition 0: offsets up to the second's base.
    assert sorted(r["offset"] for r in first.collect()) == list(range(bases[0][1]))
    second = spark.read.format("delta").option("versionAsOf", 1).load(root)
    assert second.count() == bases[0][2]
    versions = spark.sql(f"DESCRIBE HISTORY delta.`{root}`").select("version").collect()
    assert len(versions) == 3 * len(bases[0])


def test_new_columns_read_as_null_in_older_files(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "typed"

    def write(base: int, columns: dict[str, pa.Array]) -> None:
        path = root / file_path(0, base)
        path.parent.mkdir(parents=True, exist_ok=True)
        count = len(next(iter(columns.values())))
        table = pa.table({"offset": pa.array(range(base, base + count), pa.int64()), **columns})
        pq.write_table(table, path)
        commit_segments(str(root), 0, [base])

    write(0, {"id": pa.array([1, 2])})
    write(2, {"id": pa.array([3]), "city": pa.array(["Oslo"])})
    rows = spark.read.format("delta").load(str(root)).orderBy("offset").collect()
    assert [(r["id"], r["city"]) for r in rows] == [(1, None), (2, None), (3, "Oslo")]


def test_spark_reads_a_checkpointed_table_as_deltalake_does(
    spark: SparkSession, open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 5 * (CHECKPOINT_INTERVAL + 3))  # five batches a segment
    root = tmp_path / "checkpointed"
    for base in [s.base_offset for s in log.segments[:-1]]:
        log.export_parquet(base, root / "partition=0")
        commit_segments(str(root), 0, [base])
    log_dir = root / "_delta_log"
    (checkpoint,) = log_dir.glob("*.checkpoint.parquet")
    # Leave only the checkpoint and the commits after it: each reader must load it.
    for commit in log_dir.glob("*.json"):
        if int(commit.name[:20]) <= int(checkpoint.name[:20]):
            commit.unlink()

    rows = spark.read.format("delta").load(str(root)).select("offset", "value").collect()
    by_spark = sorted((r["offset"], bytes(r["value"])) for r in rows)
    table = DeltaTable(str(root)).to_pyarrow_table(columns=["offset", "value"])
    by_deltalake = sorted(zip(table["offset"].to_pylist(), table["value"].to_pylist(), strict=True))
    assert by_spark == by_deltalake
    assert [o for o, _ in by_spark] == list(range(log.segments[-1].base_offset))
