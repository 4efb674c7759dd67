"""The ``partition.uid`` file: which incarnation of a partition a replica directory holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.errors import StorageError
from spu.storage import ReplicaLog
from spu.storage.identity import list_replica_dirs, read_uid, remove_replica_dir, write_uid


def test_round_trip_and_replace(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    assert read_uid(directory) is None  # no directory, no file: no uid
    write_uid(directory, "0f3a")
    assert (directory / "partition.uid").read_text() == "0\nuid 0f3a\n"
    write_uid(directory, "beef")
    assert read_uid(directory) == "beef"
    assert [p.name for p in directory.iterdir()] == ["partition.uid"]


def test_a_log_opens_beside_the_uid_and_keeps_it(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    write_uid(directory, "u1")
    with ReplicaLog.open(directory) as log:
        assert log.leo == 0
    assert read_uid(directory) == "u1"


@pytest.mark.parametrize(
    "text", ["", "1\nuid u1\n", "0\nid u1\n", "0\nuid \n", "0\nuid a/b\n", "0\nuid " + "x" * 65]
)
def test_malformed_uid_files_raise(tmp_path: Path, text: str) -> None:
    (tmp_path / "partition.uid").write_text(text)
    with pytest.raises(StorageError, match="partition.uid"):
        read_uid(tmp_path)


@pytest.mark.parametrize("uid", ["", "a/b", "../x", "x" * 65])
def test_a_uid_that_is_no_safe_token_is_refused(tmp_path: Path, uid: str) -> None:
    with pytest.raises(StorageError, match="cannot be stored"):
        write_uid(tmp_path, uid)
    assert list(tmp_path.iterdir()) == []


def test_listing_names_replica_directories_with_their_uids(tmp_path: Path) -> None:
    write_uid(tmp_path / "a-0", "u1")
    (tmp_path / "b-12").mkdir()  # written before uids: None
    (tmp_path / "bad-1").mkdir()
    (tmp_path / "bad-1" / "partition.uid").write_text("garbage")  # left out, never purged
    (tmp_path / "tier").mkdir()
    (tmp_path / "c-01").mkdir()  # not a partition index
    (tmp_path / "d-0.log").write_text("a file")
    assert list_replica_dirs(tmp_path) == [("a-0", "u1"), ("b-12", None)]
    assert list_replica_dirs(tmp_path / "missing") == []


def test_remove_deletes_the_directory_and_tolerates_a_missing_one(tmp_path: Path) -> None:
    directory = tmp_path / "a-0"
    write_uid(directory, "u1")
    with ReplicaLog.open(directory):
        pass
    (directory / "nested").mkdir()
    remove_replica_dir(directory)
    assert not directory.exists()
    remove_replica_dir(directory)  # already gone: nothing to do
