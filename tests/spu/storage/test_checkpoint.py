"""The high-watermark checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.errors import StorageError
from spu.storage.checkpoint import read_checkpoint, write_checkpoint


def test_round_trip_and_replace(tmp_path: Path) -> None:
    path = tmp_path / "replication.chk"
    assert read_checkpoint(path) is None
    write_checkpoint(path, 42)
    assert path.read_text() == "0\nhigh_watermark 42\n"
    write_checkpoint(path, 7)
    assert read_checkpoint(path) == 7
    assert [p.name for p in tmp_path.iterdir()] == ["replication.chk"]


@pytest.mark.parametrize(
    "text",
    ["", "1\nhigh_watermark 3\n", "0\nhw 3\n", "0\nhigh_watermark -3\n", "0\nhigh_watermark x\n"],
)
def test_malformed_checkpoints_raise(tmp_path: Path, text: str) -> None:
    path = tmp_path / "replication.chk"
    path.write_text(text)
    with pytest.raises(StorageError, match="replication.chk"):
        read_checkpoint(path)
