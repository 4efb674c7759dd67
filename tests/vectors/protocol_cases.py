"""Protocol frame vectors (``protocol_frames.json``): frames of the wire protocol as the
Python connection and server build them.

Requests, responses, stream frames (credit, cancel, end, push) and an error reply, each
with its header fields, its msgpack meta as tagged JSON (see ``generate``'s module doc)
and its bytes; a meta with every msgpack type and integer width the encoder picks; and
damaged headers with the message Python's ``parse_header`` gives for each. For
``FramesTest``, ``FrameEncoderTest`` and ``ProgressCommitTest``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from spark_stream.protocol import ApiKey
from spark_stream.protocol.control import ProgressCommitRequest
from spark_stream.protocol.data import (
    Acks,
    FetchRequest,
    FetchResponse,
    Isolation,
    ProduceRequest,
    StreamFetchRequest,
)
from spark_stream.protocol.frame import FrameFlags, FrameKind, as_buffer, encode_frame, parse_header
from spark_stream.protocol.message import ErrorReply, Message
from spark_stream.records import encode_records
from tests.vectors.batch_cases import BASE_TS, error_of

__all__ = ["protocol_frames"]


def _tagged(value: Any) -> Any:
    """A meta value as JSON, with msgpack bin and timestamp values tagged."""
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, datetime):
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return {"$timestamp_us": micros}
    if isinstance(value, dict):
        return {k: _tagged(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_tagged(v) for v in value]
    return value


def _frame(
    name: str,
    kind: FrameKind,
    api_key: int,
    correlation_id: int,
    meta: dict[str, Any],
    tail: bytes = b"",
    *,
    version: int = 0,
    flags: FrameFlags = FrameFlags.NONE,
) -> dict[str, Any]:
    parts = encode_frame(kind, api_key, correlation_id, meta, tail, version=version, flags=flags)
    data = b"".join(bytes(as_buffer(p)) for p in parts)
    header = parse_header(data)
    return {
        "name": name,
        "kind": header.kind.name,
        "flags": int(header.flags),
        "api_key": api_key,
        "version": version,
        "correlation_id": correlation_id,
        "meta": _tagged(meta),
        "meta_length": header.meta_length,
        "tail": tail.hex(),
        "bytes": data.hex(),
    }


def _request(name: str, msg: Message, correlation_id: int, **kw: Any) -> dict[str, Any]:
    tail = bytes(as_buffer(msg.tail_parts()))  # type: ignore[arg-type]
    return _frame(
        name,
        FrameKind.REQUEST,
        msg.API_KEY,
        correlation_id,
        msg.to_meta(),
        tail,
        version=msg.wire_version(),
        **kw,
    )


def protocol_frames() -> dict[str, Any]:
    """Frames of the wire protocol as the Python connection and server build them."""
    batch = encode_records([b"x", b"yy"], [b"k1", None], [BASE_TS, BASE_TS + 5])
    frames = [
        _frame("api_versions_request", FrameKind.REQUEST, ApiKey.API_VERSIONS, 1, {}),
        _request("fetch_v0", FetchRequest("orders", 3, 42), 7),
        _request(
            "fetch_v2_uncommitted",
            FetchRequest(
                "orders",
                0,
                1 << 33,
                max_bytes=65536,
                isolation=Isolation.UNCOMMITTED,
                max_wait_ms=250,
                leader_epoch=5,
            ),  # fmt: skip
            2**32 - 1,
        ),
        _frame(
            "fetch_response",
            FrameKind.RESPONSE,
            ApiKey.FETCH,
            7,
            FetchResponse(hw=2, leo=3, log_start=0).to_meta(),
            batch,
        ),
        _request("produce", ProduceRequest("orders", 1, Acks.ALL, tail=batch + batch), 9),
        _request("stream_fetch", StreamFetchRequest("events", 2, 0), 11, flags=FrameFlags.STREAM),
        _frame("credit", FrameKind.CREDIT, ApiKey.STREAM_FETCH, 11, {"credit": 4}),
        _frame("cancel", FrameKind.CANCEL, ApiKey.STREAM_FETCH, 11, {}),
        _frame("end", FrameKind.END, ApiKey.STREAM_FETCH, 11, {}),
        _frame(
            "not_leader_error",
            FrameKind.ERROR,
            ApiKey.FETCH,
            12,
            ErrorReply(10, "spu 2 is not the leader of orders/3").to_meta(),
        ),
        _frame("push", FrameKind.PUSH, ApiKey.STREAM_FETCH, 11, {"hw": 9, "leo": 9}, batch),
        _frame("every_meta_type", FrameKind.REQUEST, 60_000, 0x01020304, _every_type()),
        _request(
            "progress_commit",
            ProgressCommitRequest(
                "orders-report",
                [
                    {"topic": "orders", "partition": 1, "offset": 12},
                    {"topic": "orders", "partition": 0, "offset": 1 << 33},
                    {"topic": "events", "partition": 2, "offset": 0},
                ],
            ),
            13,
        ),
        _request("progress_claim", ProgressCommitRequest("orders-report", []), 14),
    ]
    return {"frames": frames, "corrupt": _corrupt_protocol(bytes.fromhex(frames[1]["bytes"]))}


def _every_type() -> dict[str, Any]:
    """A meta with each msgpack type and each integer width the encoder picks."""
    ints = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1]
    negatives = [-1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)]
    return {
        "ints": ints,
        "negatives": negatives,
        "float": 0.1,
        "true": True,
        "false": False,
        "nil": None,
        "bin": b"\x00\xffbin",
        "bin_256": bytes(range(256)),
        "str_31": "s" * 31,
        "str_32": "s" * 32,
        "str_256": "é" * 128,
        "unicode": "größe ✓",
        "list_16": list(range(16)),
        "nested": {"a": {"b": [1, "two", None]}},
        "map_16": {f"k{i:02}": i for i in range(16)},
        "ts32": datetime(2025, 11, 24, 16, 0, 0, tzinfo=UTC),
        "ts64": datetime(2025, 11, 24, 16, 0, 0, 123456, tzinfo=UTC),
        "ts96": datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
    }


def _corrupt_protocol(good: bytes) -> list[dict[str, str]]:
    """Damaged protocol headers and the message Python's ``parse_header`` gives for each."""
    cases = {
        "truncated": good[:12],
        "bad_magic": good[:4] + b"\x00" + good[5:],
        "unknown_kind": good[:5] + b"\x09" + good[6:],
        "unknown_flags": good[:6] + b"\x02" + good[7:],
        "reserved": good[:7] + b"\x01" + good[8:],
        "short_length": (3).to_bytes(4, "little") + good[4:],
        "meta_too_long": good[:16] + (10_000).to_bytes(4, "little") + good[20:],
    }
    return [
        {"name": name, "bytes": data.hex(), "error": error_of(parse_header, data)}
        for name, data in cases.items()
    ]
