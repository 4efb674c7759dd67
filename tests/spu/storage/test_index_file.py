"""IndexFile: a memory-mapped array of entries that grows, seals and truncates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spu.storage.index import OFFSET_ENTRY, TIME_ENTRY, floor_by_rel
from spu.storage.index_file import IndexFile


def test_appends_grow_the_file_and_seal_trims_it(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    index = IndexFile.write(path, OFFSET_ENTRY, np.empty(0, OFFSET_ENTRY), writable=True)
    for i in range(1, 1001):
        index.append(i * 3, i * 4096)
    assert index.count == 1000
    assert path.stat().st_size >= 1000 * OFFSET_ENTRY.itemsize
    assert floor_by_rel(index.entries, 3 * 500 + 1) == 499
    index.seal()
    assert path.stat().st_size == 1000 * OFFSET_ENTRY.itemsize
    assert not index.writable
    index.close()

    again = IndexFile.open_read_only(path, OFFSET_ENTRY)
    assert again.count == 1000
    assert again.last() == (3000, 1000 * 4096)
    assert int(again.entries["pos"][10]) == 11 * 4096
    again.close()


def test_truncate_and_close_trims_a_writable_index(tmp_path: Path) -> None:
    path = tmp_path / "x.timeindex"
    index = IndexFile.write(path, TIME_ENTRY, np.empty(0, TIME_ENTRY), writable=True)
    for i in range(10):
        index.append(100 + i, i)
    index.truncate(4)
    assert index.last() == (103, 3)
    index.append(200, 9)
    index.close()
    assert path.stat().st_size == 5 * TIME_ENTRY.itemsize
    reread = IndexFile.open_read_only(path, TIME_ENTRY)
    assert reread.entries["ts"].tolist() == [100, 101, 102, 103, 200]
    reread.close()


def test_a_sealed_index_can_take_appends_again(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    entries = np.array([(1, 100), (2, 200)], OFFSET_ENTRY)
    index = IndexFile.write(path, OFFSET_ENTRY, entries, writable=False)
    with pytest.raises(ValueError, match="read-only"):
        index.append(3, 300)
    index.make_writable()
    index.append(3, 300)
    index.close()
    assert IndexFile.open_read_only(path, OFFSET_ENTRY).count == 3


def test_a_partial_entry_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(b"\x01" * 13)
    with pytest.raises(ValueError, match="whole number of entries"):
        IndexFile.open_read_only(path, OFFSET_ENTRY)


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        IndexFile.open_read_only(tmp_path / "none.index", OFFSET_ENTRY)
