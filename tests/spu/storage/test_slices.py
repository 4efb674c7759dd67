"""Read results: zero-copy views, sendfile ranges, trusted and verified decoding."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_stream.errors import CorruptFrameError
from spark_stream.records import decode_frames
from spu.storage import LogConfig, LogSlice, ReplicaLog, decode_trusted

from .helpers import fill, make_frame


def test_a_slice_is_a_view_of_the_segment_file(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 3)
    piece = log.read(0)
    assert piece.path is not None
    with open(piece.path, "rb") as f:
        f.seek(piece.position)
        assert f.read(piece.length) == bytes(piece.data)
    out = tmp_path / "sent"
    with open(out, "wb") as sink:
        sent = os.sendfile(sink.fileno(), piece.fileno(), piece.position, piece.length)
    assert sent == piece.length
    assert out.read_bytes() == bytes(piece.data)


def test_trusted_and_verified_decoding_agree(open_log: Callable[..., ReplicaLog]) -> None:
    log = open_log()
    fill(log, 4)
    piece = log.read(0, 1 << 20)
    trusted = piece.decode(trusted=True, with_offsets=True)
    verified = piece.decode(with_offsets=True)
    assert [b.to_pydict() for b in trusted] == [b.to_pydict() for b in verified]
    assert trusted[0].schema.names[0] == "offset"
    assert piece.records == sum(b.num_rows for b in trusted)


def test_only_the_verified_path_catches_a_flipped_payload_bit() -> None:
    frame = bytearray(make_frame(1, 5))
    frame[-40] ^= 0x01
    with pytest.raises(CorruptFrameError):
        decode_frames(bytes(frame))
    assert len(decode_trusted(bytes(frame))) == 1


def test_empty_slice() -> None:
    piece = LogSlice.empty(7)
    assert (piece.offset, piece.base_offset, piece.next_offset, piece.length) == (7, 7, 7, 0)
    assert piece.decode() == []
    with pytest.raises(ValueError):
        piece.fileno()


def test_a_slice_outlives_the_deletion_of_its_segment(
    open_log: Callable[..., ReplicaLog],
) -> None:
    log = open_log(LogConfig(segment_max_bytes=4096, retention_bytes=0, retention_ms=None))
    fill(log, 40)
    piece = log.read(0)
    before = bytes(piece.data)
    log.hw = log.leo
    removed = log.apply_retention()
    assert removed and not removed[0].path.exists()
    assert bytes(piece.data) == before
    assert os.fstat(piece.fileno()).st_size > 0
    assert piece.decode()[0].num_rows == 5
