"""``replica.json``: the metadata an SPU keeps of each replica (``spu.storage.replica_meta``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.errors import StorageError
from spark_stream.models import PartitionSpec
from spark_stream.protocol.control import Replica, ReplicaMeta
from spu.storage.identity import write_uid
from spu.storage.replica_meta import (
    decode_meta,
    encode_meta,
    list_replica_meta,
    read_replica_meta,
    write_replica_meta,
)


def _meta(name: str = "t-0", uid: str = "u1", epoch: int = 3) -> ReplicaMeta:
    spec = PartitionSpec(initial_leader=1, replicas=(1, 2), retention_secs=60)
    return ReplicaMeta("store-1", Replica(name, 2, spec, 17, uid, epoch))


def test_round_trip(tmp_path: Path) -> None:
    assert read_replica_meta(tmp_path) is None
    write_replica_meta(tmp_path, _meta())
    assert read_replica_meta(tmp_path) == _meta()
    write_replica_meta(tmp_path, _meta(epoch=4))  # replaced, no temporary file left
    assert read_replica_meta(tmp_path) == _meta(epoch=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["replica.json"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "not JSON"),
        (b'{"version": 9, "meta": {}}', "unknown version 9"),
        (b'{"version": 1, "meta": {"store": 5}}', "string 'store'"),
        (b'{"version": 1, "meta": {"store": "s", "replica": {"name": "t-0"}}}', "t-0"),
        (b"[]", "unknown version"),
    ],
)
def test_malformed_files_are_storage_errors(data: bytes, message: str) -> None:
    with pytest.raises(StorageError, match=message):
        decode_meta(data, "x/replica.json")


def test_encoding_is_stable() -> None:
    assert encode_meta(_meta()) == encode_meta(_meta())


def test_listing_keeps_only_records_of_the_incarnation_on_disk(tmp_path: Path) -> None:
    for name, uid, meta_uid in [("t-0", "u1", "u1"), ("t-1", "u2", "old"), ("t-2", "u3", None)]:
        write_uid(tmp_path / name, uid)
        if meta_uid is not None:
            write_replica_meta(tmp_path / name, _meta(name, meta_uid))
    write_uid(tmp_path / "t-3", "u4")
    (tmp_path / "t-3" / "replica.json").write_text("garbage")  # unreadable: left out
    assert [m.replica.name for m in list_replica_meta(tmp_path)] == ["t-0"]
