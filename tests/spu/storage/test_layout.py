"""File names of a replica directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.errors import InvalidRequestError
from spu.storage.layout import (
    list_segment_bases,
    parse_segment_name,
    replica_dir,
    segment_paths,
    segment_stem,
)


def test_segment_names_are_zero_padded_base_offsets(tmp_path: Path) -> None:
    assert segment_stem(42) == "00000000000000000042"
    log, index, timeindex = segment_paths(tmp_path, 7)
    assert [p.name for p in (log, index, timeindex)] == [
        "00000000000000000007.log",
        "00000000000000000007.index",
        "00000000000000000007.timeindex",
    ]


@pytest.mark.parametrize(
    "name, base",
    [
        ("00000000000000000042.log", 42),
        ("00000000000000000042.index", None),
        ("42.log", None),
        ("00000000000000000042.log.corrupt", None),
    ],
)
def test_parse_segment_name(name: str, base: int | None) -> None:
    assert parse_segment_name(name) == base


def test_list_segment_bases_sorts_and_ignores_other_files(tmp_path: Path) -> None:
    for name in [
        "00000000000000000100.log",
        "00000000000000000003.log",
        "00000000000000000003.index",
        "replication.chk",
        "x.log.corrupt",
    ]:
        (tmp_path / name).touch()
    assert list_segment_bases(tmp_path) == [3, 100]


def test_replica_dir_is_stable_per_replica_id(tmp_path: Path) -> None:
    assert replica_dir(tmp_path, "orders", 3) == tmp_path / "orders-3"
    assert replica_dir(str(tmp_path), "orders", 3) == replica_dir(tmp_path, "orders", 3)


@pytest.mark.parametrize("topic, partition", [("../etc", 0), ("a/b", 0), ("", 0), ("t", -1)])
def test_replica_dir_rejects_unsafe_names(tmp_path: Path, topic: str, partition: int) -> None:
    with pytest.raises(InvalidRequestError):
        replica_dir(tmp_path, topic, partition)
