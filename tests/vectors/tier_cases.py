"""Tier vectors for the JVM connector's tier reader.

``tier_manifests.json``: a manifest as the SPU writes it, and what ``spark_stream.tier``
plans from it (``tier_start`` for log starts, ``covering_entries`` for ranges, with the
error type and message of a range the tier does not hold), for ``TierManifestTest``.
``tier_file.json``: a tier file exactly as the SPU's ``write_parquet`` writes it (hex) and
its records, for ``TierFileReaderTest`` to read back column by column.
``tier_typed_file.json``: a typed topic's spec (two schema versions) and two tier files as
tiering writes them, one before the schema evolved (no ``score`` column) and one after
(its older frame widened), with their rows in the latest version, for ``TypedTierTest``.
``tier_nested_file.json``: a typed topic with a ``list<int64>``, a ``list<string>`` and a
struct column, one tier file as tiering writes it and its rows (lists as arrays, structs
as objects), for ``TypedTierTest`` to read the nested columns back.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from spark_stream.errors import FluvioError
from spark_stream.models.topic_schema import TopicSchema, storage_schema
from spark_stream.records import RECORD_SCHEMA, encode_batch, encode_records, with_base_offset
from spark_stream.tier import TierEntry, TierManifest, covering_entries, data_file, tier_start
from tests.vectors.typed_cases import V1, json_value, typed_rows

__all__ = ["tier_file", "tier_manifests", "tier_nested_file", "tier_typed_file"]

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


_TYPED_V1 = V1.append(pa.field("sec", pa.timestamp("s"))).append(pa.field("tiny", pa.int8()))
_TYPED_V1 = _TYPED_V1.append(pa.field("count", pa.int32())).append(
    pa.field("raw", pa.large_binary())
)
_TYPED_V2 = _TYPED_V1.append(pa.field("score", pa.float64()))


def _typed_batch(version: int, first: int, n: int) -> pa.RecordBatch:
    """Rows ``first..first+n`` of the typed topic's ``version``: every column type the
    JVM's typed read serves, nulls in each nullable one."""
    user = _TYPED_V1 if version == 1 else _TYPED_V2
    rows = typed_rows(first + n, version)[first:]
    for i, row in enumerate(rows, start=first):
        row["sec"] = None if i == 1 else datetime(2025, 6, 1, 0, 0, i)
        row["tiny"] = None if i == 4 else i - 3
        row["count"] = i * 1000
        row["raw"] = None if i == 5 else bytes([i]) * i
    table = pa.Table.from_pylist(rows, schema=user)
    keys = pa.array([None if i % 3 == 0 else f"k{i}".encode() for i in range(first, first + n)])
    ts = pa.array([_TS + i for i in range(first, first + n)], pa.timestamp("us", tz="UTC"))
    headers = pa.array(
        [None if i % 2 else [("h", bytes([i]))] for i in range(first, first + n)],
        storage_schema(user).field("headers").type,
    )
    columns = [c.combine_chunks() for c in table.columns]
    return pa.RecordBatch.from_arrays(
        [*columns, keys.cast(pa.binary()), ts, headers], schema=storage_schema(user)
    )


def _typed_parquet(batches: list[tuple[int, pa.RecordBatch]], base: int, latest: int) -> bytes:
    """The tier file of frames ``batches`` (version, records) at ``base``, as tiering writes
    it with the topic's ``latest`` version then."""
    from spu.storage.tier import write_parquet

    frames = b""
    offset = base
    for version, batch in batches:
        frames += encode_batch(batch, base_offset=offset, schema_version=version)
        offset += batch.num_rows
    user = _TYPED_V1 if latest == 1 else _TYPED_V2
    with tempfile.TemporaryDirectory() as folder:
        url = write_parquet(
            memoryview(frames),
            base_offset=base,
            next_offset=offset,
            schema=storage_schema(user),
            tier_url=folder,
        )
        return Path(url).read_bytes()


def tier_typed_file() -> dict[str, Any]:
    """A typed topic's spec and two of its tier files (before and after ``score`` was
    added); ``rows`` are the records of both in offset order, in the latest version."""
    schema = TopicSchema.of(_TYPED_V1).evolve(_TYPED_V2)
    first = _typed_batch(1, 0, 6)
    second = [(1, _typed_batch(1, 6, 3)), (2, _typed_batch(2, 9, 5))]
    files = [
        {"base_offset": 700, "records": 6, "parquet": _typed_parquet([(1, first)], 700, 1).hex()},
        {"base_offset": 706, "records": 8, "parquet": _typed_parquet(second, 706, 2).hex()},
    ]
    rows = []
    for batch in (first, second[0][1], second[1][1]):
        for row in batch.to_pylist():
            out = {f.name: json_value(row.get(f.name), f.type) for f in _TYPED_V2}
            out["key"] = None if row["key"] is None else row["key"].hex()
            out["timestamp"] = json_value(row["timestamp"], pa.timestamp("us", tz="UTC"))
            out["headers"] = None if row["headers"] is None else len(row["headers"])
            rows.append(out)
    return {"topic_schema": schema.to_dict(), "files": files, "rows": rows}


_NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("tags", pa.list_(pa.int64())),
        pa.field("names", pa.list_(pa.string())),
        pa.field("point", pa.struct([("x", pa.int32()), ("label", pa.string())])),
    ]
)


def _nested_rows(n: int) -> list[dict[str, Any]]:
    """Null, empty and multi-element lists, null elements; null structs, null children."""
    rows = []
    for i in range(n):
        tags = None if i % 5 == 1 else [i * 10 + j if (i + j) % 4 else None for j in range(i % 4)]
        names = None if i % 6 == 2 else [f"n{i}-{j}" if j != 1 else None for j in range(i % 3)]
        x = None if i % 5 == 0 else -i
        point = None if i % 4 == 3 else {"x": x, "label": None if i == 6 else f"p{i}" * (i % 3)}
        rows.append({"id": i, "tags": tags, "names": names, "point": point, "key": f"k{i}"})
    return rows


def tier_nested_file() -> dict[str, Any]:
    """A typed topic with nested columns, one tier file of two frames (as hex) and its rows."""
    from spu.storage.tier import write_parquet

    schema = TopicSchema.of(_NESTED)
    storage = storage_schema(_NESTED)
    rows = _nested_rows(23)
    frames = b""
    base = 900
    for chunk in (rows[:13], rows[13:]):
        n = len(chunk)
        user = pa.Table.from_pylist(chunk, schema=_NESTED)
        batch = pa.RecordBatch.from_arrays(
            [
                *(c.combine_chunks() for c in user.columns),
                pa.array([r["key"].encode() for r in chunk], pa.binary()),
                pa.array([_TS + r["id"] for r in chunk], pa.timestamp("us", tz="UTC")),
                pa.nulls(n, storage.field("headers").type),
            ],
            schema=storage,
        )
        frames += encode_batch(batch, base_offset=base, schema_version=1)
        base += n
    with tempfile.TemporaryDirectory() as folder:
        url = write_parquet(
            memoryview(frames),
            base_offset=900,
            next_offset=base,
            schema=storage,
            tier_url=folder,
        )
        data = Path(url).read_bytes()
    return {
        "topic_schema": schema.to_dict(),
        "base_offset": 900,
        "records": len(rows),
        "parquet": data.hex(),
        "rows": [{k: v for k, v in r.items() if k != "key"} for r in rows],
    }
