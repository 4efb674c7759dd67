"""Committing tiered Parquet files to a topic's Delta table with deltalake (delta-rs)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from spark_stream.errors import InvalidConfigError, StorageError
from spu.storage import ReplicaLog
from spu.storage.delta_plan import app_id, file_path
from spu.storage.delta_table import (
    CHECKPOINT_INTERVAL,
    CHECKPOINT_PROPERTY,
    commit_segments,
    committed_version,
    load,
)

from .helpers import commit_adds, fill


def tier_segments(log: ReplicaLog, table: Path, partition: int) -> list[int]:
    """Export every sealed segment of ``log`` into the tier LAYOUT; their base offsets."""
    bases = [s.base_offset for s in log.segments[:-1]]
    for base in bases:
        log.export_parquet(base, table / f"partition={partition}")
    return bases


def added_paths(table: DeltaTable) -> list[str]:
    return sorted(pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())


def test_one_file_commits_and_reads_back(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 20)
    table_dir = tmp_path / "orders"
    base = tier_segments(log, table_dir, 2)[0]

    assert commit_segments(str(table_dir), 2, [base]) == [base]

    table = DeltaTable(str(table_dir))
    assert table.version() == 0
    assert table.metadata().partition_columns == ["partition"]
    assert table.transaction_version(app_id(2)) == base
    assert added_paths(table) == [file_path(2, base)]
    rows = table.to_pyarrow_table()
    written = pq.read_table(table_dir / file_path(2, base))
    assert rows.column("offset").to_pylist() == written.column("offset").to_pylist()
    assert rows.column("value").to_pylist() == written.column("value").to_pylist()
    assert set(rows.column("partition").to_pylist()) == {2}
    stats = pa.table(table.get_add_actions(flatten=True)).to_pydict()
    assert stats["num_records"] == [written.num_rows]
    assert stats["min.offset"] == [written.column("offset").to_pylist()[0]]
    assert stats["max.offset"] == [written.column("offset").to_pylist()[-1]]
    history = table.history()
    assert history[0]["operation"] == "CREATE TABLE"
    assert history[0]["isBlindAppend"] is True


def test_a_retry_never_adds_a_file_twice(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 30)
    table_dir = str(tmp_path / "t")
    bases = tier_segments(log, tmp_path / "t", 0)
    assert len(bases) >= 3

    assert commit_segments(table_dir, 0, bases[:2]) == bases[:2]
    # A crash after the commit: the retry passes the whole manifest again.
    assert commit_segments(table_dir, 0, bases) == bases[2:]
    assert commit_segments(table_dir, 0, bases) == []
    assert commit_segments(table_dir, 0, [bases[0]]) == []

    table = DeltaTable(table_dir)
    assert table.version() == 1
    assert added_paths(table) == sorted(file_path(0, b) for b in bases)
    offsets = table.to_pyarrow_table().column("offset").to_pylist()
    assert sorted(offsets) == list(range(log.segments[-1].base_offset))
    assert committed_version(table_dir, 0) == bases[-1]
    assert committed_version(table_dir, 1) is None


def test_commits_made_after_a_snapshot_are_not_counted_as_its_own(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    """The cluster tests count the commits that added files up to a snapshot while the
    SPUs go on committing. ``DeltaTable.history()`` (deltalake 1.6) numbered the newer
    commits as older ones, so that count came out one per later commit too high (the
    flaky ``18 == 17``); ``commit_adds`` reads the snapshot's own log entries."""
    log = open_log()
    fill(log, 30)
    table_dir = tmp_path / "t"
    bases = tier_segments(log, table_dir, 0)
    for base in bases[:2]:
        commit_segments(str(table_dir), 0, [base])
    snapshot = DeltaTable(str(table_dir))
    for base in bases[2:4]:
        commit_segments(str(table_dir), 0, [base])  # another committer, after the snapshot

    adds = [path for added in commit_adds(table_dir, snapshot.version()) for path in added]
    assert adds == [file_path(0, b) for b in bases[:2]]
    assert len(adds) == len(added_paths(snapshot))


def test_the_log_is_checkpointed_and_commits_stay_idempotent_across_it(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 5 * (2 * CHECKPOINT_INTERVAL + 2))  # five batches a segment
    table_dir = tmp_path / "t"
    bases = tier_segments(log, table_dir, 0)
    assert len(bases) > 2 * CHECKPOINT_INTERVAL
    for base in bases:  # one commit per segment, as the SPU's hook makes them
        commit_segments(str(table_dir), 0, [base])

    table = DeltaTable(str(table_dir))
    assert table.metadata().configuration[CHECKPOINT_PROPERTY] == str(CHECKPOINT_INTERVAL)
    # delta-rs checkpoints after every CHECKPOINT_INTERVAL-th commit (versions 9, 19...)
    log_dir = table_dir / "_delta_log"
    checkpoints = sorted(int(p.name[:20]) for p in log_dir.glob("*.checkpoint.parquet"))
    every = range(CHECKPOINT_INTERVAL - 1, table.version() + 1, CHECKPOINT_INTERVAL)
    assert checkpoints == list(every) and len(checkpoints) >= 2
    # A retry of the whole manifest after the checkpoint: the transaction version came
    # through the checkpoint, nothing is added again.
    assert commit_segments(str(table_dir), 0, bases) == []
    assert DeltaTable(str(table_dir)).version() == table.version()
    assert committed_version(str(table_dir), 0) == bases[-1]
    assert added_paths(table) == sorted(file_path(0, b) for b in bases)
    offsets = sorted(table.to_pyarrow_table().column("offset").to_pylist())
    assert offsets == list(range(log.segments[-1].base_offset))


def test_time_travel_sees_each_commit(open_log: Callable[..., ReplicaLog], tmp_path: Path) -> None:
    log = open_log()
    fill(log, 30)
    table_dir = str(tmp_path / "t")
    bases = tier_segments(log, tmp_path / "t", 0)
    for base in bases:
        commit_segments(table_dir, 0, [base])

    table = DeltaTable(table_dir)
    counts = []
    for version in range(len(bases)):
        table.load_as_version(version)
        counts.append(len(table.file_uris()))
    assert counts == list(range(1, len(bases) + 1))


def _commit_partition(table_dir: str, partition: int, bases: list[int]) -> list[int]:
    done: list[int] = []
    for base in bases:
        done += commit_segments(table_dir, partition, [base])
    return done


def test_partitions_commit_concurrently_each_file_once(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 30)
    table_dir = tmp_path / "t"
    partitions = 4
    bases = {p: tier_segments(log, table_dir, p) for p in range(partitions)}
    # Two committers per partition (an old and a new leader), in separate processes.
    jobs = [(str(table_dir), p, bases[p]) for p in range(partitions) for _ in range(2)]
    with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
        results = pool.starmap(_commit_partition, jobs)

    table = DeltaTable(str(table_dir))
    expected = sorted(file_path(p, b) for p in bases for b in bases[p])
    assert added_paths(table) == expected
    for p in range(partitions):
        mine = sorted(results[2 * p] + results[2 * p + 1])
        assert mine == bases[p], f"partition {p}: each file committed by exactly one process"
        assert table.transaction_version(app_id(p)) == bases[p][-1]
    rows = table.to_pyarrow_table()
    assert rows.num_rows == partitions * log.segments[-1].base_offset


def typed_file(table_dir: Path, partition: int, base: int, columns: dict[str, pa.Array]) -> int:
    path = table_dir / file_path(partition, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = len(next(iter(columns.values())))
    offsets = pa.array(range(base, base + count), pa.int64())
    schema = pa.schema(
        [pa.field("offset", pa.int64(), nullable=False)]
        + [pa.field(n, a.type, nullable=n != "id") for n, a in columns.items()]
    )
    pq.write_table(pa.table([offsets, *columns.values()], schema=schema), path)
    return base


def test_new_nullable_columns_update_the_table_schema(tmp_path: Path) -> None:
    table_dir = tmp_path / "t"
    first = typed_file(table_dir, 0, 0, {"id": pa.array([1, 2])})
    commit_segments(str(table_dir), 0, [first])
    later = typed_file(table_dir, 0, 2, {"id": pa.array([3]), "name": pa.array(["c"])})
    commit_segments(str(table_dir), 0, [later])

    table = DeltaTable(str(table_dir))
    assert pa.schema(table.schema().to_arrow()).names == ["offset", "id", "partition", "name"]
    rows = table.to_pyarrow_table().sort_by("offset").to_pydict()
    assert rows["id"] == [1, 2, 3]
    assert rows["name"] == [None, None, "c"]
    assert [h["operation"] for h in table.history()] == ["WRITE", "ADD COLUMN", "CREATE TABLE"]


def test_a_changed_column_type_is_refused(tmp_path: Path) -> None:
    table_dir = tmp_path / "t"
    commit_segments(str(table_dir), 0, [typed_file(table_dir, 0, 0, {"id": pa.array([1])})])
    bad = typed_file(table_dir, 0, 1, {"id": pa.array(["x"])})
    with pytest.raises(InvalidConfigError, match="'id' is string in the new files but int64"):
        commit_segments(str(table_dir), 0, [bad])
    assert DeltaTable(str(table_dir)).version() == 0


def test_a_missing_file_is_a_storage_error(tmp_path: Path) -> None:
    pattern = r"cannot read the tiered file .*partition=0/0+7\.parquet"
    with pytest.raises(StorageError, match=pattern):
        commit_segments(str(tmp_path / "t"), 0, [7])
    assert load(str(tmp_path / "t")) is None
