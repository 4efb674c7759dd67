"""``LocalFiles``: reads only the very file a leader named, from this host."""

from __future__ import annotations

import os
from pathlib import Path

from spark_stream.client.consumer.local_files import LocalFiles


def identity(path: Path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino


def test_reads_the_named_range_of_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(range(256)) * 4)
    files = LocalFiles()
    assert files.read(str(path), 10, 5, *identity(path)) == bytes(range(10, 15))
    assert files.read(str(path), 1000, 24, *identity(path)) == (bytes(range(256)) * 4)[1000:]
    assert files.open_files == (str(path),)


def test_another_file_a_missing_path_or_a_short_read_is_none(tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"x" * 100)
    device, inode = identity(path)
    files = LocalFiles()
    assert files.read(str(path), 0, 10, device, inode + 1) is None  # not the file named
    assert files.read(str(tmp_path / "gone.log"), 0, 10, device, inode) is None
    assert files.read(str(path), 90, 20, device, inode) is None  # past the end
    assert files.read(str(path), 90, 10, device, inode) == b"x" * 10


def test_a_replaced_path_is_reopened_not_read_through_the_stale_descriptor(
    tmp_path: Path,
) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"old!" * 10)
    files = LocalFiles()
    assert files.read(str(path), 0, 4, *identity(path)) == b"old!"
    path.unlink()  # e.g. retention, then a recreated topic writes the same name
    path.write_bytes(b"new!" * 10)
    assert files.read(str(path), 0, 4, *identity(path)) == b"new!"


def test_open_files_are_bounded_and_close_ends_reads(tmp_path: Path) -> None:
    paths = [tmp_path / f"{i}.log" for i in range(3)]
    for path in paths:
        path.write_bytes(b"abc")
    files = LocalFiles(max_open=2)
    for path in paths:
        assert files.read(str(path), 0, 3, *identity(path)) == b"abc"
    assert files.open_files == (str(paths[1]), str(paths[2]))
    files.close()
    assert files.open_files == ()
    assert files.read(str(paths[0]), 0, 3, *identity(paths[0])) is None


def test_mapped_reads_view_the_file_and_outlive_its_deletion(tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"0123456789")
    files = LocalFiles()
    view = files.read(str(path), 2, 5, *identity(path), mapped=True)
    assert isinstance(view, memoryview) and bytes(view) == b"23456"
    with path.open("ab") as out:  # the active segment grows
        out.write(b"abcdef")
    grown = files.read(str(path), 8, 6, *identity(path), mapped=True)
    assert grown is not None and bytes(grown) == b"89abcd"
    assert files.read(str(path), 12, 10, *identity(path), mapped=True) is None  # past the end
    device, inode = identity(path)
    path.unlink()  # retention deletes the segment; views taken before stay readable
    files.close()
    assert bytes(view) == b"23456" and bytes(grown) == b"89abcd"
    assert files.read(str(path), 0, 2, device, inode, mapped=True) is None
