"""The tier hook of ``--table delta``: replays, failures retried by replay, expiry."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from spark_stream.errors import StorageError
from spu.delta_hook import DeltaTableHook
from spu.storage.delta_plan import file_path


@dataclass(frozen=True)
class Entry:
    base_offset: int


def tiered(tier: Path, partition: int, base: int, count: int = 3) -> Entry:
    """A tiered file of ``count`` records in the LAYOUT, as tiering writes it."""
    path = tier / file_path(partition, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    offsets = pa.array(range(base, base + count), pa.int64())
    values = pa.array([f"v{o}".encode() for o in range(base, base + count)], pa.binary())
    schema = pa.schema([pa.field("offset", pa.int64(), nullable=False), ("value", pa.binary())])
    pq.write_table(pa.table([offsets, values], schema=schema), path)
    return Entry(base)


def offsets(tier: Path) -> list[int]:
    return sorted(DeltaTable(str(tier)).to_pyarrow_table().column("offset").to_pylist())


def test_replays_commit_each_file_once(tmp_path: Path) -> None:
    entries = [tiered(tmp_path, 0, b) for b in (0, 3, 6)]
    hook = DeltaTableHook(str(tmp_path))
    for entry in entries:
        hook.on_tiered(0, entry)
    assert DeltaTable(str(tmp_path)).version() == 2

    # A new leader replays the whole manifest, then tiers one more file.
    again = DeltaTableHook(str(tmp_path))
    for entry in [*entries, tiered(tmp_path, 0, 9)]:
        again.on_tiered(0, entry)
    table = DeltaTable(str(tmp_path))
    assert table.version() == 3
    assert offsets(tmp_path) == list(range(12))


def test_a_failed_commit_is_made_by_the_next_replay(tmp_path: Path) -> None:
    first = tiered(tmp_path, 1, 0)
    hook = DeltaTableHook(str(tmp_path))
    hook.on_tiered(1, first)
    with pytest.raises(StorageError, match="cannot read the tiered file"):
        hook.on_tiered(1, Entry(3))  # its file is not there (an upload cut short)
    # The round failed, so the next one replays every entry of the manifest.
    replay = DeltaTableHook(str(tmp_path))
    for entry in (first, tiered(tmp_path, 1, 3), tiered(tmp_path, 1, 6)):
        replay.on_tiered(1, entry)
    assert offsets(tmp_path) == list(range(9))


def test_expired_files_leave_the_table_before_the_tier(tmp_path: Path) -> None:
    entries = [tiered(tmp_path, 0, b) for b in (0, 3, 6)]
    hook = DeltaTableHook(str(tmp_path))
    for entry in entries:
        hook.on_tiered(0, entry)
    hook.on_expired(0, entries[:2])
    hook.on_expired(0, entries[:2])  # repeated after a crash: nothing more
    table = DeltaTable(str(tmp_path))
    assert table.version() == 3
    assert offsets(tmp_path) == [6, 7, 8]
    # Time travel still reaches the removed files while the tier keeps them.
    table.load_as_version(2)
    assert len(table.to_pyarrow_table()) == 9
