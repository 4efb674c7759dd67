"""Tier files on a local directory through fsspec: temporary names carry the writer's
epoch, and a leader removes what earlier writers of its partition left, nothing else."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_stream.errors import StorageError
from spark_stream.tier import TierManifest, load_manifest, save_manifest
from spark_stream.tier.store import remove_stale_temps, write_atomic


def _fail_midway(sink: object) -> None:
    raise StorageError("the writer died")


def test_a_failed_write_leaves_nothing_and_a_good_one_no_temporary(tmp_path: Path) -> None:
    url = str(tmp_path / "t" / "partition=0" / "a.parquet")
    with pytest.raises(StorageError):
        write_atomic(url, _fail_midway, epoch=3)
    assert list((tmp_path / "t" / "partition=0").iterdir()) == []
    write_atomic(url, lambda sink: sink.write(b"x"), epoch=3)
    assert [p.name for p in (tmp_path / "t" / "partition=0").iterdir()] == ["a.parquet"]


def test_the_leader_removes_leftovers_of_its_partition_up_to_its_epoch(tmp_path: Path) -> None:
    tier = tmp_path / "t"
    url = str(tier)
    save_manifest(url, TierManifest(partition=0), epoch=2)
    data, meta = tier / "partition=0", tier / "_fluvio"
    data.mkdir()
    left = {
        data / ".00000000000000000000.parquet.e2.aaaa.tmp": True,  # killed mid-upload
        data / ".00000000000000000000.parquet.ffff.tmp": True,  # no epoch: from before
        data / ".00000000000000000000.parquet.e5.bbbb.tmp": False,  # a newer leader's
        meta / ".partition=0.json.e1.cccc.tmp": True,
        meta / ".partition=1.json.e1.dddd.tmp": False,  # partition 1's own leader's
        tier / "partition=1" / ".00000000000000000000.parquet.e1.eeee.tmp": False,
    }
    for path in left:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"half a file")

    removed = remove_stale_temps(url, 0, 3)

    assert sorted(removed) == sorted(str(p) for p, stale in left.items() if stale)
    assert {p: not p.exists() for p in left} == left
    assert load_manifest(url, 0) == TierManifest(partition=0)  # the manifest stays
    assert remove_stale_temps(url, 0, 3) == []  # nothing more
    assert remove_stale_temps(str(tmp_path / "none"), 0, 3) == []  # no tier yet


def test_readers_of_the_directory_skip_a_leftover(tmp_path: Path) -> None:
    """Spark's, Delta's and pyarrow's listings skip hidden files, so a half-written
    leftover never fails a read of the tier as a table."""
    tier = tmp_path / "t"
    write_atomic(str(tier / "partition=0" / "a.parquet"), _table_writer)
    (tier / "partition=0" / ".b.parquet.e0.aaaa.tmp").write_bytes(b"PAR1 half")
    assert pq.read_table(str(tier)).num_rows == 3


def _table_writer(sink: object) -> None:
    pq.write_table(pa.table({"x": [1, 2, 3]}), sink)
