"""Tier vectors for the JVM connector's tier reader.

``tier_manifests.json``: a manifest as the SPU writes it, and what ``spark_stream.tier``
plans from it (``tier_start`` for log starts, ``covering_entries`` for ranges, with the
error type and message of a range the tier does not hold), for ``TierManifestTest``.
``tier_file.json``: a tier file exactly as the SPU's ``write_parquet`` writes it (hex) and
its records, for ``TierFileReaderTest`` to read back column by column.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from spark_stream.errors import FluvioError
from spark_stream.records import RECORD_SCHEMA, encode_records, with_base_offset
from spark_stream.tier import TierEntry, TierManifest, covering_entries, data_file, tier_start

__all__ = ["tier_file", "tier_manifests"]

_FILE_BASE = 500
_TS = 1_764_000_000_000_000

_PIECES = ((100, 125), (125, 150), (150, 190), (190, 191))
_LOG_STARTS = (0, 50, 100, 150, 191, 192, 400)
_RANGES = (
    (100, 191),
    (100, 101),
    (120, 130),
    (125, 150),
    (149, 151),
    (190, 191),
    (150, 150),
    (99, 120),
    (150, 192),
    (191, 195),
)
_INVALID = (
    '{"version": 1, "partition": 0, "files": [{"base_offset": 0, "next_offset": 5, '
    '"records": 4, "bytes": 1, "file": "partition=0/a.parquet"}]}',
    '{"version": 1, "partition": 0, "files": ['
    '{"base_offset": 0, "next_offset": 5, "records": 5, "bytes": 1, "file": "a"}, '
    '{"base_offset": 6, "next_offset": 7, "records": 1, "bytes": 1, "file": "b"}]}',
    '{"version": 1, "partition": -1, "files": []}',
    '{"version": 1, "partition": 0, "files": [{"base_offset": 0}]}',
    "[1, 2]",
    "not json",
)


def _manifest() -> TierManifest:
    entries = tuple(
        TierEntry(
            base_offset=base,
            next_offset=end,
            records=end - base,
            bytes=1000 + base,
            file=data_file(3, base),
            max_timestamp=1_764_000_000_000_000 + base,
        )
        for base, end in _PIECES
    )
    return TierManifest(partition=3, files=entries)


def _plan(manifest: TierManifest, start: int, end: int) -> dict[str, Any]:
    try:
        files = [e.file for e in covering_entries(manifest, start, end)]
    except FluvioError as exc:
        return {"start": start, "end": end, "error": type(exc).__name__, "message": str(exc)}
    return {"start": start, "end": end, "files": files}


def tier_manifests() -> dict[str, Any]:
    """The manifest's text, its tier starts and plans, an empty manifest's, and texts
    that are not valid manifests (the JVM refuses each with a ``StorageError``)."""
    manifest = _manifest()
    empty = TierManifest(partition=0)
    return {
        "manifest": manifest.to_json(),
        "start_offset": manifest.start_offset,
        "end_offset": manifest.end_offset,
        "tier_starts": [
            {"log_start": s, "tier_start": tier_start(manifest, s)} for s in _LOG_STARTS
        ],
        "plans": [_plan(manifest, a, b) for a, b in _RANGES],
        "empty": {
            "manifest": empty.to_json(),
            "tier_starts": [{"log_start": s, "tier_start": tier_start(empty, s)} for s in (0, 7)],
            "plans": [_plan(empty, 0, 5), _plan(empty, 4, 4)],
        },
        "invalid": list(_INVALID),
    }


def _file_records() -> list[dict[str, Any]]:
    """Records over two frames: null and empty keys, an empty value, null, empty and
    multi-entry headers, a header with a null value."""
    out = []
    for i in range(30):
        headers: list[tuple[str, bytes | None]] | None = (
            None if i % 3 else ([] if i % 9 == 0 else [("h", bytes([i])), ("trace", None)])
        )
        if i == 4:
            headers = [("only", b"")]
        out.append(
            {
                "key": None if i % 5 == 0 else (b"" if i % 7 == 0 else f"key-{i}".encode()),
                "value": b"" if i == 3 else f"value-{i}-{'v' * i}".encode(),
                "timestamp_us": _TS + i * 1_000 - (5_000 if i == 10 else 0),
                "headers": headers,
            }
        )
    return out


def tier_file() -> dict[str, Any]:
    """A Parquet tier file of ``_file_records`` at offset 500 (as hex) and its records."""
    from spu.storage.tier import write_parquet  # the SPU's writer, as tiering calls it

    records = _file_records()
    frames = b""
    base = _FILE_BASE
    for chunk in (records[:17], records[17:]):
        frame = encode_records(
            [r["value"] for r in chunk],
            keys=[r["key"] for r in chunk],
            timestamps=[r["timestamp_us"] for r in chunk],
            headers=[r["headers"] for r in chunk],
        )
        frames += with_base_offset(frame, base)
        base += len(chunk)
    with tempfile.TemporaryDirectory() as folder:
        url = write_parquet(
            memoryview(frames),
            base_offset=_FILE_BASE,
            next_offset=base,
            schema=RECORD_SCHEMA,
            tier_url=folder,
        )
        data = Path(url).read_bytes()
    return {
        "base_offset": _FILE_BASE,
        "parquet": data.hex(),
        "records": [
            {
                "offset": _FILE_BASE + i,
                "key": None if r["key"] is None else r["key"].hex(),
                "value": r["value"].hex(),
                "timestamp_us": r["timestamp_us"],
                "headers": None
                if r["headers"] is None
                else [[k, None if v is None else v.hex()] for k, v in r["headers"]],
            }
            for i, r in enumerate(records)
        ],
    }
