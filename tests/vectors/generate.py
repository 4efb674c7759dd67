"""Shared test vectors: what the Python code writes, for the Java connector to match.

The Java client (``connector/``) re-implements the batch frame, the protocol frame and
its msgpack meta, the key hash and the derived producer ids. Its JUnit tests read the
files this script writes into ``tests/vectors/data`` and must decode (and, where it
encodes, produce) the very same bytes; ``tests/vectors/test_vectors.py`` checks that the
checked-in files still equal what the Python code produces now, so a Python change that
would break the Java side fails the Python suite first.

Run ``python -m tests.vectors.generate`` (from the repository root) after such a change,
and commit the files. The output is deterministic: fixed records, timestamps and ids.

JSON conventions: bytes are lowercase hex strings; in a protocol frame's ``meta`` a
msgpack bin value is ``{"$bytes": hex}`` and a msgpack timestamp is
``{"$timestamp_us": int}``, so the Java side knows which msgpack type each value is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from datasource.offset_spec import OffsetSpec
from datasource.options import Mode, parse_reader_options
from spark_stream.client.config import MAX_PRODUCER_ID, producer_id_for
from spark_stream.client.producer.partitioner import fnv1a_32
from spark_stream.errors import FluvioError
from spark_stream.protocol import ApiKey
from spark_stream.protocol.codes import error_classes
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
from spark_stream.records import (
    Compression,
    encode_records,
    read_header,
    verify_frame,
    with_base_offset,
)
from tests.vectors.tier_cases import tier_file, tier_manifests, tier_nested_file, tier_typed_file
from tests.vectors.typed_cases import typed_frames
from tests.vectors.writer_cases import writer_options

__all__ = ["DATA_DIR", "generate", "write"]

DATA_DIR = Path(__file__).resolve().parent / "data"
_BASE_TS = 1_764_000_000_000_000  # 2025-11-24T16:00:00Z in microseconds
_COMPRESSIONS: tuple[Compression, ...] = ("none", "lz4", "zstd")


def _records() -> dict[str, Any]:
    """Fixed records that exercise every column: null and empty keys, empty and long
    values, out-of-order timestamps, null, empty and multi-entry headers."""
    n = 40
    keys: list[bytes | None] = [
        None if i % 5 == 0 else (b"" if i % 7 == 0 else f"key-{i % 6}".encode()) for i in range(n)
    ]
    values = [b"" if i == 3 else bytes((i * 31 + j) % 256 for j in range(i * 13)) for i in range(n)]
    timestamps = [_BASE_TS + i * 1_000 - (5_000 if i == 10 else 0) for i in range(n)]
    headers: list[list[tuple[str, bytes]] | None] = [
        None if i % 3 else ([] if i % 9 == 0 else [("h", bytes([i])), ("trace-id", b"x" * i)])
        for i in range(n)
    ]
    return {"keys": keys, "values": values, "timestamps": timestamps, "headers": headers}


def _record_json(records: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "key": None if key is None else key.hex(),
            "value": value.hex(),
            "timestamp_us": ts,
            "headers": None if hdrs is None else [[k, v.hex()] for k, v in hdrs],
        }
        for key, value, ts, hdrs in zip(
            records["keys"],
            records["values"],
            records["timestamps"],
            records["headers"],
            strict=True,
        )
    ]


def _header_json(frame: bytes) -> dict[str, Any]:
    h = read_header(frame)
    return {
        "base_offset": h.base_offset,
        "payload_length": h.payload_length,
        "crc": h.crc,
        "attributes": h.attributes,
        "record_count": h.record_count,
        "sequence": h.sequence,
        "first_timestamp": h.first_timestamp,
        "max_timestamp": h.max_timestamp,
        "producer_id": h.producer_id,
        "compression": h.compression,
    }


def batch_frames() -> dict[str, Any]:
    """One frame per compression, a log of back-to-back frames, and damaged frames."""
    records = _records()
    frames = []
    for i, compression in enumerate(_COMPRESSIONS):
        frame = encode_records(
            **records,
            base_offset=1000 + i,
            compression=compression,
            producer_id=producer_id_for("vectors", compression),
            sequence=7 + i,
        )
        frames.append(
            {
                "name": f"frame_{compression}",
                "compression": compression,
                "bytes": frame.hex(),
                "header": _header_json(frame),
                "records": _record_json(records),
            }
        )
    # A log slice as a fetch returns it: frames back to back, base offsets rewritten.
    plain = [
        encode_records([b"a", b"bb"], [b"k", None], [_BASE_TS, _BASE_TS + 1]),
        encode_records([b"ccc"], timestamps=[_BASE_TS + 2], compression="zstd"),
        encode_records([b"d" * 300] * 3, timestamps=[_BASE_TS + 3] * 3, compression="lz4"),
    ]
    log, offset = b"", 500
    for frame in plain:
        log += with_base_offset(frame, offset)
        offset += read_header(frame).record_count
    log_json = {
        "bytes": log.hex(),
        "headers": [_header_json(with_base_offset(f, 0)) for f in plain],
        "base_offsets": [500, 502, 503],
    }
    return {"frames": frames, "log": log_json, "corrupt": _corrupt_frames(plain[0])}


def _corrupt_frames(good: bytes) -> list[dict[str, str]]:
    """Damaged frames and the message Python's ``verify_frame`` gives for each."""
    cases: dict[str, bytes] = {
        "truncated_header": good[:30],
        "bad_magic": b"FLVX" + good[4:],
        "bad_version": good[:20] + b"\x02" + good[21:],
        "zero_count": good[:24] + b"\x00\x00\x00\x00" + good[28:],
        "unknown_codec": good[:21] + b"\x03" + good[22:],
        "truncated_payload": good[:-1],
        "crc_mismatch": good[:-1] + bytes([good[-1] ^ 0xFF]),
        "negative_base": good[:8] + (-1).to_bytes(8, "little", signed=True) + good[16:],
    }
    out = []
    for name, data in cases.items():
        out.append({"name": name, "bytes": data.hex(), "error": _error_of(verify_frame, data)})
    return out


def _error_of(check: Callable[[bytes], object], data: bytes) -> str:
    try:
        check(data)
    except FluvioError as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"{data[:24].hex()}... was accepted")


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
    batch = encode_records([b"x", b"yy"], [b"k1", None], [_BASE_TS, _BASE_TS + 5])
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
        {"name": name, "bytes": data.hex(), "error": _error_of(parse_header, data)}
        for name, data in cases.items()
    ]


def key_hashes() -> dict[str, Any]:
    """32-bit FNV-1a of keys (the default partitioner's hash)."""
    keys = [b"", b"a", b"key-1", b"orders/42", "größe".encode(), bytes(range(256)), b"\xff" * 64]
    return {"fnv1a_32": [{"key": k.hex(), "hash": fnv1a_32(k)} for k in keys]}


def producer_ids() -> dict[str, Any]:
    """Producer ids derived from identities, as the exactly-once sink derives them."""
    identities: list[list[str | int]] = [
        ["q"],
        ["query-1", 0, 3],
        ["3f1c0f5e-8a3b-4f5e-9d2a-0c1b2a3d4e5f", 17, 0],
        ["query-1", 4_294_967_296, 12],
        ["ünïcode", -5, "x"],
        ["b" * 128],  # exactly one BLAKE2b block
        ["long-" + "y" * 300, 1],  # several blocks
    ]
    return {
        "max_producer_id": MAX_PRODUCER_ID,
        "separator": "\x1f",
        "ids": [{"parts": parts, "id": producer_id_for(*parts)} for parts in identities],
    }


_EP = {"endpoint": "127.0.0.1:9003"}
_OPTION_CASES: list[dict[str, str]] = [
    {"topic": "t", **_EP},
    {"TOPIC": "t", "Endpoint": "[::1]:9003", "checkpointLocation": "/x"},
    {"topik": "t", **_EP},
    {"path": "x", "topic": "t", **_EP},
    {"topic": "a,b", **_EP},
    {"topics": "a,,b", **_EP},
    {"topics": "b, a,b", **_EP},
    {"topic": "t", "topics": "a", **_EP},
    {**_EP},
    {"topic": "t", "partitions": "0,x", **_EP},
    {"topic": "t", "partitions": "2,0,2", **_EP},
    {"topic": "t", "partitions": "-1", **_EP},
    {"topic": "t", "startingOffsets": "latest", **_EP},
    {"topic": "t", "startingOffsets": "bogus", **_EP},
    {"topic": "t", "endingOffsets": "bogus", **_EP},
    {"topic": "t", "startingOffsets": "[]", **_EP},
    {"topic": "t", "startingOffsets": '{"t": 5}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"x": 5}}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"0": "5"}}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"0": true}}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"0": -3}}', **_EP},
    {"topic": "t", "endingOffsets": "earliest", **_EP},
    {"topic": "t", "endingOffsets": '{"t": {"0": -2}}', **_EP},
    {"topic": "t", "startingOffsets": '{"u": {"0": 1}}', **_EP},
    {
        "topic": "t",
        "startingOffsets": '{"t": {"1": 5, "0": -2}}',
        "endingOffsets": '{"t": {"0": 9}}',
        **_EP,
    },
    {"topic": "t", "startingOffsets": "earliest", "startingTimestamp": "5", **_EP},
    {"topic": "t", "startingTimestamp": "abc", **_EP},
    {"topic": "t", "startingTimestamp": "1700000000000", **_EP},
    {"topic": "t", "startingTimestamp": "-5", **_EP},
    {"topic": "t", "endingTimestamp": "1700000000123000", **_EP},  # microseconds
    {"topic": "t", "endingTimestamp": "1700000000000000000", **_EP},  # nanoseconds
    {"topic": "t", "endingTimestamp": "99999999999999999999999", **_EP},
    {"topic": "t", "isolation": " Uncommitted", **_EP},
    {"topic": "t", "isolation": "sometimes", **_EP},
    {"topic": "t", "includeHeaders": "yes", **_EP},
    {"topic": "t", "includeHeaders": "TRUE", "failOnDataLoss": "false", **_EP},
    {"topic": "t", "fetchMaxBytes": "10", **_EP},
    {"topic": "t", "fetchMaxBytes": "x", **_EP},
    {"topic": "t", "fetchMaxBytes": "4096", "localReads": "false", **_EP},
    {"topic": "t", "minPartitions": "0", **_EP},
    {"topic": "t", "minPartitions": "7", **_EP},
    {"topic": "t", "maxOffsetsPerTrigger": "5", **_EP},
    {"topic": "t", "progressGroup": "g", **_EP},
    {"topic": "t", "startingOffsets": "group:g-1", **_EP},
    {"topic": "t", "startingOffsets": " GROUP: g2 ", **_EP},
    {"topic": "t", "startingOffsets": "group:", **_EP},
    {"topic": "t", "startingOffsets": "group:a/b", **_EP},
    {"topic": "t", "startingOffsets": "group:" + "x" * 250, **_EP},
    {"topic": "t", "endingOffsets": "group:g", **_EP},
    {"topicPattern": "orders-.*", **_EP},
    {"topicPattern": "o.*", "startingOffsets": '{"orders": {"0": 1}}', **_EP},
    {"topicPattern": "o.*", "startingOffsets": '{"x": {"0": 1}}', **_EP},
    {"topic": "t", "endpoint": "nohost"},
    {"topic": "t", "endpoint": "h:99999"},
    # Spark's Kafka names (issue 14)
    {"subscribe": "b,a", **_EP},
    {"subscribe": "a", "topics": "a", **_EP},
    {"subscribe": "a", "topics": "b", **_EP},
    {"subscribe": "a", "topic": "a", **_EP},
    {"subscribe": "a,,b", **_EP},
    {"subscribePattern": "o.*", **_EP},
    {"subscribePattern": "o.*", "topicPattern": "x.*", **_EP},
    {"assign": '{"b": [1, 0, 1], "a": [2]}', **_EP},
    {"assign": '{"t": [0]}', "partitions": "0", **_EP},
    {"assign": '{"t": [0]}', "topic": "t", **_EP},
    {"assign": "t", **_EP},
    {"assign": "[]", **_EP},
    {"assign": '{"t": []}', **_EP},
    {"assign": '{"t": [-1]}', **_EP},
    {"assign": '{"t": ["0"]}', **_EP},
    {"assign": '{"t": [0]}', "startingOffsets": '{"t": {"0": 3}}', **_EP},
    {"assign": '{"t": [0]}', "startingOffsets": '{"u": {"0": 3}}', **_EP},
    {"topic": "t", "kafka.bootstrap.servers": "127.0.0.1:9003"},
    {"topic": "t", "KAFKA.BOOTSTRAP.SERVERS": " h1:9003, h2:9004 "},
    {"topic": "t", "kafka.bootstrap.servers": "h1:9003,nohost"},
    {"topic": "t", "kafka.bootstrap.servers": "h1:1", "endpoint": "h2:2"},
    {"topic": "t", "kafka.bootstrap.servers": "h1:1", "endpoint": "h1:1"},
    {"topic": "t", "kafka.isolation.level": "read_uncommitted", **_EP},
    {"topic": "t", "kafka.isolation.level": "READ_COMMITTED", **_EP},
    {"topic": "t", "isolation": "read-uncommitted", **_EP},
    {"topic": "t", "kafka.isolation.level": "dirty", **_EP},
    {"topic": "t", "kafka.isolation.level": "read_committed", "isolation": "uncommitted", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"1": 1700000000000, "0": 5}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": "5", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": "{}", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": 5}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": "5"}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"x": 5}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": -5}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": 1700000000000000}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"u": {"0": 5}}', **_EP},
    {
        "topic": "t",
        "startingOffsetsByTimestamp": '{"t": {"0": 5}}',
        "startingTimestamp": "5",
        **_EP,
    },  # fmt: skip
    {
        "topic": "t",
        "startingOffsetsByTimestamp": '{"t": {"0": 5}}',
        "startingOffsetsByTimestampStrategy": " Latest",
        **_EP,
    },  # fmt: skip
    {
        "topic": "t",
        "startingTimestamp": "5",
        "startingOffsetsByTimestampStrategy": "error",
        **_EP,
    },  # fmt: skip
    {"topic": "t", "startingOffsetsByTimestampStrategy": "error", **_EP},
    {
        "topic": "t",
        "startingTimestamp": "5",
        "startingOffsetsByTimestampStrategy": "never",
        **_EP,
    },  # fmt: skip
    {"topic": "t", "endingOffsetsByTimestamp": '{"t": {"0": 1700000000000}}', **_EP},
    {
        "topic": "t",
        "endingOffsetsByTimestamp": '{"t": {"0": 5}}',
        "endingOffsets": "latest",
        **_EP,
    },  # fmt: skip
    {"topic": "t", "minOffsetsPerTrigger": "5", **_EP},
    {"topic": "t", "maxTriggerDelay": "5s", **_EP},
    {"topic": "t", "startingOffset": "earliest", **_EP},
    {"topic": "t", "subscribePatern": "x", **_EP},
    {"topic": "t", "kafka.bootstrap.server": "h:1", **_EP},
    {"topic": "t", "maxoffsetspertriger": "5", **_EP},
    {"topic": "t", "minPartition": "2", **_EP},
    {"topic": "t", "zzzzzz": "2", **_EP},
    {"topic": "t", "kafka.group.id": "g", **_EP},
]

_STREAM_CASES: list[dict[str, str]] = [
    {"topic": "t", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "30s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": " 2 Min", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "250", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "1h", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "3d", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "0ms", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "soon", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "-1s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "1.5s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "9" * 20 + "d", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "0", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "x", **_EP},
    {"topic": "t", "maxTriggerDelay": "5s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxOffsetsPerTrigger": "50", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": 5}}', **_EP},
    {"topic": "t", "endingOffsetsByTimestamp": '{"t": {"0": 5}}', **_EP},
    {"subscribe": "t", "kafka.isolation.level": "read_uncommitted", **_EP},
]


def _spec_json(spec: OffsetSpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    out = {
        "default": spec.default,
        "specific": [list(s) for s in spec.specific],
        "timestamp_ms": spec.timestamp_ms,
    }
    if spec.group is not None:
        out["group"] = spec.group
    if spec.timestamps:
        out["timestamps"] = [list(t) for t in spec.timestamps]
    if spec.timestamps or spec.timestamp_ms is not None:
        out["time_strategy"] = spec.time_strategy
    return out


def _reader_cases(cases: list[dict[str, str]], mode: Mode) -> list[dict[str, Any]]:
    out = []
    for options in cases:
        case: dict[str, Any] = {"options": options}
        try:
            opts = parse_reader_options(options, mode)
        except FluvioError as exc:
            case["error"] = f"{type(exc).__name__}: {exc}"
        else:
            case["parsed"] = {
                "endpoint": opts.endpoint,
                "topics": list(opts.topics),
                "partitions": None if opts.partitions is None else list(opts.partitions),
                "starting": _spec_json(opts.starting),
                "ending": _spec_json(opts.ending),
                "isolation": opts.isolation,
                "include_headers": opts.include_headers,
                "fetch_max_bytes": opts.fetch_max_bytes,
                "fail_on_data_loss": opts.fail_on_data_loss,
                "min_partitions": opts.min_partitions,
                "local_reads": opts.local_reads,
            }
            if opts.topic_pattern is not None:
                case["parsed"]["topic_pattern"] = opts.topic_pattern
            if opts.assign is not None:
                case["parsed"]["assign"] = [[t, list(ps)] for t, ps in opts.assign]
            if mode == "stream":
                case["parsed"]["max_records_per_trigger"] = opts.max_records_per_trigger
                case["parsed"]["min_records_per_trigger"] = opts.min_records_per_trigger
                case["parsed"]["max_trigger_delay_ms"] = opts.max_trigger_delay_ms
        out.append(case)
    return out


def reader_options() -> dict[str, Any]:
    """Reader options and what ``parse_reader_options`` makes of them, for batch reads
    and streams: the parsed values the JVM connector also uses, or the error message it
    must give word for word."""
    return {
        "batch": _reader_cases(_OPTION_CASES, "batch"),
        "stream": _reader_cases(_STREAM_CASES, "stream"),
    }


def error_codes() -> dict[str, Any]:
    """The wire error codes: code, Python type name, retriable."""
    return {
        "errors": [
            {"code": cls.code, "name": cls.__name__, "retriable": cls.retriable}
            for cls in error_classes()
        ]
    }


def generate() -> dict[str, str]:
    """Every vector file: name -> JSON text (keys in insertion order, which is the
    msgpack order of a meta map; one trailing newline)."""
    files = {
        "batch_frames.json": batch_frames(),
        "protocol_frames.json": protocol_frames(),
        "key_hashes.json": key_hashes(),
        "producer_ids.json": producer_ids(),
        "error_codes.json": error_codes(),
        "reader_options.json": reader_options(),
        "writer_options.json": writer_options(),
        "typed_frames.json": typed_frames(),
        "tier_manifests.json": tier_manifests(),
        "tier_file.json": tier_file(),
        "tier_typed_file.json": tier_typed_file(),
        "tier_nested_file.json": tier_nested_file(),
    }
    return {name: json.dumps(body, indent=1) + "\n" for name, body in files.items()}


def write(data_dir: Path = DATA_DIR) -> list[Path]:
    """Write every vector file into ``data_dir``; returns the paths written."""
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in generate().items():
        path = data_dir / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA_DIR):
        print(written)
