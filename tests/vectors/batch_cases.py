"""Batch frame vectors (``batch_frames.json``): the record batch frame as Python encodes it.

One frame per compression over fixed records that exercise every column, with each
frame's header fields and records; a log slice of frames back to back with rewritten
base offsets, as a fetch returns it; and damaged frames with the message Python's
``verify_frame`` gives for each. For ``BatchFramesTest``, ``BatchHeaderTest`` and
``FrameBufferTest``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spark_stream.client.config import producer_id_for
from spark_stream.errors import FluvioError
from spark_stream.records import (
    Compression,
    encode_records,
    read_header,
    verify_frame,
    with_base_offset,
)

__all__ = ["BASE_TS", "batch_frames", "error_of"]

BASE_TS = 1_764_000_000_000_000  # 2025-11-24T16:00:00Z in microseconds
_COMPRESSIONS: tuple[Compression, ...] = ("none", "lz4", "zstd")


def _records() -> dict[str, Any]:
    """Fixed records that exercise every column: null and empty keys, empty and long
    values, out-of-order timestamps, null, empty and multi-entry headers."""
    n = 40
    keys: list[bytes | None] = [
        None if i % 5 == 0 else (b"" if i % 7 == 0 else f"key-{i % 6}".encode()) for i in range(n)
    ]
    values = [b"" if i == 3 else bytes((i * 31 + j) % 256 for j in range(i * 13)) for i in range(n)]
    timestamps = [BASE_TS + i * 1_000 - (5_000 if i == 10 else 0) for i in range(n)]
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
        encode_records([b"a", b"bb"], [b"k", None], [BASE_TS, BASE_TS + 1]),
        encode_records([b"ccc"], timestamps=[BASE_TS + 2], compression="zstd"),
        encode_records([b"d" * 300] * 3, timestamps=[BASE_TS + 3] * 3, compression="lz4"),
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
        out.append({"name": name, "bytes": data.hex(), "error": error_of(verify_frame, data)})
    return out


def error_of(check: Callable[[bytes], object], data: bytes) -> str:
    """The typed error (``Type: message``) ``check`` raises for ``data``; accepting it is
    a broken vector."""
    try:
        check(data)
    except FluvioError as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"{data[:24].hex()}... was accepted")
