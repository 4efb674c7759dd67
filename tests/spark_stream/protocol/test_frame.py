"""The frame header and ``encode_frame``: layout, limits, typed errors."""

from __future__ import annotations

import struct

import pytest

from spark_stream.errors import CorruptFrameError, InvalidRequestError, RecordTooLargeError
from spark_stream.protocol import (
    FRAME_HEADER_SIZE,
    FRAME_MAGIC,
    ApiKey,
    FrameFlags,
    FrameKind,
    decode_meta,
    encode_frame,
    parse_header,
    tail_length,
)


def _join(parts: list) -> bytes:
    return b"".join(bytes(p) for p in parts)


def test_header_layout_is_little_endian_and_20_bytes() -> None:
    data = _join(encode_frame(FrameKind.REQUEST, ApiKey.FETCH, 7, {"a": 1}, b"TAIL", version=3))
    assert FRAME_HEADER_SIZE == 20
    length, magic, kind, flags, reserved, api, version, cid, meta_len = struct.unpack_from(
        "<IBBBBHHII", data
    )
    assert length == len(data) - 4
    assert (magic, kind, flags, reserved) == (FRAME_MAGIC, FrameKind.REQUEST, 0, 0)
    assert (api, version, cid) == (ApiKey.FETCH, 3, 7)
    assert decode_meta(data[FRAME_HEADER_SIZE : FRAME_HEADER_SIZE + meta_len]) == {"a": 1}
    assert data[FRAME_HEADER_SIZE + meta_len :] == b"TAIL"


def test_parse_header_round_trips_every_field() -> None:
    data = _join(
        encode_frame(
            FrameKind.REQUEST,
            3003,
            2**32 - 1,
            {"x": "y"},
            [b"ab", memoryview(b"cd")],
            version=65535,
            flags=FrameFlags.STREAM,
        )
    )
    header = parse_header(data)
    assert header.kind is FrameKind.REQUEST
    assert header.is_stream
    assert (header.api_key, header.version, header.correlation_id) == (3003, 65535, 2**32 - 1)
    assert header.frame_length == len(data)
    assert header.tail_length == 4


def test_tail_is_returned_as_separate_buffers_not_copied() -> None:
    big = bytearray(b"x" * 1000)
    view = memoryview(big)
    parts = encode_frame(FrameKind.RESPONSE, 1, 1, None, [view, b"", b"yz"])
    assert parts[1] is view  # the caller's buffer itself, for writelines
    assert parts[2] == b"yz"
    assert len(parts) == 3  # empty parts are dropped
    assert tail_length([view, b"yz"]) == 1002


def test_empty_meta_and_tail_give_a_bare_header() -> None:
    parts = encode_frame(FrameKind.END, 1, 1)
    data = _join(parts)
    assert len(parts) == 1
    header = parse_header(data)
    assert header.meta_length == 1  # msgpack {} is one byte
    assert decode_meta(data[FRAME_HEADER_SIZE:]) == {}


def test_pre_encoded_meta_bytes_are_used_as_is() -> None:
    data = _join(encode_frame(FrameKind.RESPONSE, 1, 1, b"\x81\xa1k\x01"))
    assert decode_meta(data[FRAME_HEADER_SIZE:]) == {"k": 1}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"api_key": 70000}, "api key"),
        ({"api_key": -1}, "api key"),
        ({"version": 65536}, "version"),
        ({"correlation_id": 2**32}, "correlation id"),
    ],
)
def test_out_of_range_header_fields_are_refused(kwargs: dict, match: str) -> None:
    args = {"api_key": 1, "correlation_id": 1, "version": 0} | kwargs
    with pytest.raises(InvalidRequestError, match=match):
        encode_frame(
            FrameKind.REQUEST, args["api_key"], args["correlation_id"], version=args["version"]
        )


def test_unencodable_meta_is_a_typed_error() -> None:
    with pytest.raises(InvalidRequestError, match="msgpack"):
        encode_frame(FrameKind.REQUEST, 1, 1, {"obj": object()})


def test_frame_over_the_limit_is_refused_before_sending() -> None:
    with pytest.raises(RecordTooLargeError, match="passes the limit"):
        encode_frame(FrameKind.REQUEST, 1, 1, None, b"x" * 100, max_frame_size=100)
    assert encode_frame(FrameKind.REQUEST, 1, 1, None, b"x" * 79, max_frame_size=100)


def _header(**fields: int) -> bytes:
    values = {
        "length": 16,
        "magic": FRAME_MAGIC,
        "kind": 0,
        "flags": 0,
        "reserved": 0,
        "api": 1,
        "version": 0,
        "cid": 1,
        "meta": 0,
    } | fields
    return struct.pack("<IBBBBHHII", *values.values())


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"magic": 0x00}, "magic"),
        ({"kind": 99}, "kind"),
        ({"flags": 0x80}, "flags"),
        ({"reserved": 1}, "reserved"),
        ({"length": 15}, "shorter than its own header"),
        ({"length": 20, "meta": 5}, "meta length"),
    ],
)
def test_impossible_headers_raise_corrupt_frame(fields: dict, match: str) -> None:
    with pytest.raises(CorruptFrameError, match=match):
        parse_header(_header(**fields))


def test_truncated_header_raises_corrupt_frame() -> None:
    with pytest.raises(CorruptFrameError, match="truncated"):
        parse_header(_header()[:19])
