"""Storage demo (``python -m spu.storage.demo``, or ``./dev demo``).

In a temporary directory: write ~100k sample records in batches into a ``ReplicaLog``
with small segments so that it rolls, close it, reopen it, show its offsets and
segments, read a range by offset and by timestamp, export a sealed segment to Parquet
and read it back with ``pyarrow.parquet``. Exits 0 when every check passed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from spark_stream.records import encode_records
from spu.storage import LogConfig, ReplicaLog, replica_dir

__all__ = ["main"]

TS0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z, in microseconds
RECORDS = 100_000
CONFIG = LogConfig(segment_max_bytes=512 * 1024, index_interval_bytes=4096)
EVENTS = ("view", "click", "cart", "buy")


def sample_batches(total: int, seed: int = 1) -> list[tuple[int, bytes]]:
    """Encoded sample batches (record count, frame): user events one millisecond apart."""
    rng = np.random.default_rng(seed)
    out, first = [], 0
    while first < total:
        n = min(int(rng.integers(500, 3_000)), total - first)
        rows = range(first, first + n)
        users = rng.integers(0, 500, n)
        out.append(
            (
                n,
                encode_records(
                    [f'{{"event": "{EVENTS[i % 4]}", "seq": {i}}}'.encode() for i in rows],
                    keys=[f"user-{u}".encode() for u in users],
                    timestamps=[TS0 + i * 1000 for i in rows],
                ),
            )
        )
        first += n
    return out


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    """A small fixed-width text table."""
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join("  " + line for line in lines)


def rows_of(batches: list[pa.RecordBatch], start: int, count: int) -> list[list[object]]:
    """``count`` rows from ``start`` as (offset, time, key, value) for printing."""
    out: list[list[object]] = []
    for batch in batches:
        for row in batch.to_pylist():
            if row["offset"] >= start and len(out) < count:
                ts = row["timestamp"].astimezone(UTC).strftime("%H:%M:%S.%f")[:-3]
                out.append([row["offset"], ts, row["key"].decode(), row["value"].decode()])
    return out


def read_rows(log: ReplicaLog, start: int, count: int) -> list[list[object]]:
    """Read frames from ``start`` (bytes, not decoded) and decode just enough to print."""
    piece = log.read(start, 64 * 1024, end_offset=log.hw)
    return rows_of(piece.decode(with_offsets=True), start, count)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return the exit code."""
    del argv
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fluvio-storage-demo-") as root:
        directory = replica_dir(root, "events", 0)
        print(f"replica directory: {directory}")
        print(
            f"config: segments of {CONFIG.segment_max_bytes // 1024} KiB, "
            f"an index entry per {CONFIG.index_interval_bytes} B"
        )

        batches = sample_batches(RECORDS)
        with ReplicaLog.open(directory, CONFIG) as log:
            t0 = time.perf_counter()
            for _, frame in batches:
                log.append_produced(frame)
            elapsed = time.perf_counter() - t0
            log.hw = log.leo
            print(
                f"wrote {log.leo:,} records in {len(batches)} batches "
                f"({log.size_bytes / 1e6:.1f} MB) in {elapsed * 1000:.0f} ms; closing"
            )

        log = ReplicaLog.open(directory, CONFIG)
        try:
            segments = log.segments
            print(
                f"\nreopened: log start {log.log_start_offset}, LEO {log.leo:,}, "
                f"HW {log.hw:,}, {len(segments)} segments, repairs: "
                f"{log.recovery.cut_tail or 'none'}"
            )
            rows: list[list[object]] = [
                [
                    s.path.name,
                    f"{s.base_offset:,}",
                    f"{s.next_offset:,}",
                    f"{s.size / 1024:.0f} KiB",
                    "sealed" if s.sealed else "active",
                ]
                for s in segments
            ]
            if len(rows) > 5:
                rows = [*rows[:3], ["...", "", "", "", ""], *rows[-2:]]
            print(table(rows, ["file", "base", "next", "size", "state"]))
            checks = {"rolled": len(segments) > 3, "reopened intact": log.leo == RECORDS}

            at = 41_000
            print(f"\nread by offset {at:,} (frames served as bytes, decoded here):")
            by_offset = read_rows(log, at, 5)
            print(table(by_offset, ["offset", "time", "key", "value"]))
            checks["offset read"] = [r[0] for r in by_offset] == list(range(at, at + 5))

            when = TS0 + 73_210_500  # 73.2105 s after the first record
            found = log.offset_for_timestamp(when)
            stamp = datetime.fromtimestamp(when / 1e6, UTC).strftime("%H:%M:%S.%f")[:-3]
            print(f"\nfirst record at or after {stamp}: offset {found}")
            by_time = read_rows(log, found or 0, 3)
            print(table(by_time, ["offset", "time", "key", "value"]))
            checks["timestamp lookup"] = found == 73_211

            sealed = segments[1]
            url = log.export_parquet(sealed.base_offset, Path(root) / "tier")
            parquet = pq.read_table(url)
            print(
                f"\nexported segment {sealed.path.name} to {Path(url).name}: "
                f"{parquet.num_rows:,} rows, columns {parquet.column_names}"
            )
            from_log = []
            offset = sealed.base_offset
            while offset < sealed.next_offset:
                piece = log.read(offset, 1 << 20)
                from_log += piece.decode(with_offsets=True)
                offset = piece.next_offset
            same = pa.Table.from_batches(from_log).equals(parquet.replace_schema_metadata(None))
            print(f"pyarrow.parquet reads it back equal to the log: {same}")
            checks["parquet round trip"] = same
        finally:
            log.close()

    print("\nsummary:")
    print(
        table(
            [[name, "ok" if ok else "FAILED"] for name, ok in checks.items()], ["check", "result"]
        )
    )
    total = time.perf_counter() - started
    ok = all(checks.values())
    print(f"\nstorage demo {'passed' if ok else 'FAILED'} in {total:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
