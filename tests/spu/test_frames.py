"""Header-only walks: a produce tail, a log's frames, a follower's tail signature."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.errors import CorruptFrameError, InvalidRequestError, RecordTooLargeError
from spark_stream.records import encode_records, read_header
from spu.frames import check_codec, log_headers, split_request, tail_signature
from spu.storage import LogConfig, ReplicaLog


def test_split_request_returns_headers_and_whole_frames() -> None:
    frames = [encode_records(["a"]), encode_records(["b", "c"], producer_id=3, sequence=7)]
    headers, views = split_request(memoryview(b"".join(frames)), 1 << 20)
    assert [h.record_count for h in headers] == [1, 2]
    assert (headers[1].producer_id, headers[1].sequence) == (3, 7)
    assert [bytes(v) for v in views] == frames


@pytest.mark.parametrize(
    ("tail", "limit", "error", "match"),
    [
        (b"", 1 << 20, InvalidRequestError, "at least one"),
        (encode_records(["a"])[:-1], 1 << 20, CorruptFrameError, "remain"),
        (encode_records(["a"]) + b"\x00" * 10, 1 << 20, CorruptFrameError, "truncated"),
        (encode_records(["x" * 500]), 300, RecordTooLargeError, "over the 300-byte limit"),
        (b"JUNK" * 20, 1 << 20, CorruptFrameError, "magic"),
    ],
    ids=["empty", "cut short", "trailing bytes", "too large", "not a frame"],
)
def test_split_request_refuses_bad_tails(
    tail: bytes, limit: int, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        split_request(memoryview(tail), limit)


def test_check_codec_refuses_the_first_frame_of_another_codec() -> None:
    frames = [encode_records(["a"], compression="lz4"), encode_records(["b"])]
    headers, _ = split_request(memoryview(b"".join(frames)), 1 << 20)
    check_codec(headers, "any", "t-0")
    check_codec(headers[:1], "lz4", "t-0")
    with pytest.raises(InvalidRequestError, match="t-0 stores lz4 batches.*batch 1 is none"):
        check_codec(headers, "lz4", "t-0")


def test_log_headers_and_tail_signature_walk_segments(tmp_path: Path) -> None:
    config = LogConfig(segment_max_bytes=2048)  # several segments
    with ReplicaLog.open(tmp_path / "t-0", config) as log:
        for i in range(20):
            log.append_produced(encode_records([f"value-{i}" * 5]))
        assert len(log.segments) > 1
        bases = [h.base_offset for h in log_headers(log)]
        assert bases == list(range(20))
        assert [h.base_offset for h in log_headers(log, 5, 9)] == [5, 6, 7, 8]
        start, signature = tail_signature(log, 17, 10)
        assert start == 17 and [b for b, _ in signature] == [17, 18, 19]
        first = log.read(17, 1)
        assert signature[0][1] == read_header(first.data).crc
        assert tail_signature(log, 3, 2)[1] == [
            (3, read_header(log.read(3, 1).data).crc),
            (4, read_header(log.read(4, 1).data).crc),
        ]
        assert tail_signature(log, 20, 10) == (20, [])


def test_tail_signature_starts_at_the_frame_holding_the_offset(tmp_path: Path) -> None:
    with ReplicaLog.open(tmp_path / "t-0") as log:
        log.append_produced(encode_records(["a", "b", "c"]))
        log.append_produced(encode_records(["d"]))
        start, signature = tail_signature(log, 1, 10)
        assert start == 0 and [b for b, _ in signature] == [0, 3]
