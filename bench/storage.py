"""Benchmark: ``ReplicaLog`` against pyarrow's own IPC stream on the same record batches.

Run: ``.venv/bin/python -m bench.storage`` (progress on stderr; the last line on stdout is
one JSON object). Data: 1M records of 100-byte values and 200k records of 1 KiB values,
in random batches of 1,000..10,000 records; temporary directories are removed.

What each side does (also printed):

* append, log: ``append_produced(frame)`` per batch, on frames already encoded (what a
  producer sends): header, crc32c and payload-metadata checks, base offset rewritten in
  a patched header, ``pwritev``, index entries; one ``fdatasync`` at the end (the log's
  flush policy is off, as the baseline has none). Ratios are given with the final fsync
  (the headline: the same durable end state) and before it (page-cache writes only).
* append, baseline: ``pyarrow.ipc.new_stream(OSFile)`` and ``write_batch(batch)`` per
  batch (serialises each batch into the file); one ``fdatasync`` at the end.
* read, log: ``read(offset, 16 MiB)`` from offset 0 to the LEO, each slice decoded to
  ``RecordBatch``es without copying. Headline figure: *trusted* decoding (no crc, no full
  Arrow validation: the log checked the crc on append, and pyarrow's reader validates no
  more); the *verified* figure (crc + ``validate(full=True)``, what a client does with
  bytes from the network) is reported next to it.
* read, baseline: ``ipc.open_stream(pa.memory_map(path))``, batch by batch.
* lookup: ``read(random_offset, max_bytes=1)`` on a ~1 GiB log (default config, reopened
  from disk): segment bisect, index ``searchsorted`` over the mmap, header walk, and a
  memoryview of the frame. 10,000 lookups, latency percentiles.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from bench._records import make_batches
from spark_stream.records import RECORD_SCHEMA, encode_batch
from spu.storage import LogConfig, ReplicaLog

APPEND_REPS = 5
READ_REPS = 25
LOOKUPS = 10_000
LOOKUP_LOG_BYTES = 1 << 30
READ_BUDGET = 16 << 20
BENCH_CONFIG = LogConfig(flush_interval_ms=None, flush_bytes=None, retention_ms=None)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def append_log(directory: Path, frames: list[bytes]) -> tuple[int, float, float]:
    """Append every frame, then fdatasync; return (bytes, write seconds, sync seconds)."""
    with ReplicaLog.open(directory, BENCH_CONFIG) as log:
        start = time.perf_counter()
        for frame in frames:
            log.append_produced(frame)
        written = time.perf_counter()
        log.flush()
        synced = time.perf_counter()
        return log.size_bytes, written - start, synced - written


def append_baseline(path: Path, batches: list[pa.RecordBatch]) -> tuple[int, float, float]:
    """Write every batch to an IPC stream, then fdatasync; same return as ``append_log``."""
    start = time.perf_counter()
    with pa.OSFile(str(path), "wb") as sink, ipc.new_stream(sink, RECORD_SCHEMA) as writer:
        for batch in batches:
            writer.write_batch(batch)
    written = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)
    synced = time.perf_counter()
    return path.stat().st_size, written - start, synced - written


def read_log(log: ReplicaLog, *, trusted: bool) -> int:
    rows, offset = 0, 0
    while offset < log.leo:
        piece = log.read(offset, READ_BUDGET)
        rows += sum(b.num_rows for b in piece.decode(trusted=trusted))
        offset = piece.next_offset
    return rows


def read_baseline(path: Path) -> int:
    with pa.memory_map(str(path)) as source:
        return sum(batch.num_rows for batch in ipc.open_stream(source))


def bench_size(
    label: str, records: int, value_size: int, scratch: Path
) -> tuple[dict[str, float], list[bytes]]:
    progress(f"[{label}] building {records:,} records of {value_size} B ...")
    batches = make_batches(records, value_size)
    frames = [encode_batch(b) for b in batches]
    out: dict[str, float] = {"records": records, "batches": len(batches)}

    runs: dict[str, list[tuple[int, float, float]]] = {"log": [], "base": []}
    for rep in range(APPEND_REPS):
        progress(f"[{label}] append rep {rep + 1}/{APPEND_REPS}")
        order = ["log", "base"] if rep % 2 else ["base", "log"]  # alternate who goes first
        for side in order:
            with tempfile.TemporaryDirectory(dir=scratch) as tmp:
                runs[side].append(
                    append_log(Path(tmp) / "log", frames)
                    if side == "log"
                    else append_baseline(Path(tmp) / "baseline.arrows", batches)
                )
    log_bytes, base_bytes = runs["log"][0][0], runs["base"][0][0]
    log_t = statistics.median(w + f for _, w, f in runs["log"])
    base_t = statistics.median(w + f for _, w, f in runs["base"])
    log_w = statistics.median(w for _, w, _ in runs["log"])
    base_w = statistics.median(w for _, w, _ in runs["base"])
    out.update(
        append_log_s=log_t,
        append_base_s=base_t,
        append_log_write_s=log_w,
        append_base_write_s=base_w,
        append_log_rps=records / log_t,
        append_base_rps=records / base_t,
        append_log_mbps=log_bytes / log_t / 1e6,
        append_base_mbps=base_bytes / base_t / 1e6,
        append_ratio=base_t / log_t,
        append_ratio_no_fsync=base_w / log_w,
    )

    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        base_path = Path(tmp) / "baseline.arrows"
        append_baseline(base_path, batches)
        append_log(Path(tmp) / "log", frames)
        with ReplicaLog.open(Path(tmp) / "log", BENCH_CONFIG) as log:
            assert read_log(log, trusted=True) == records == read_baseline(base_path)
            progress(f"[{label}] read x{READ_REPS}")
            trusted = [timed(lambda: read_log(log, trusted=True)) for _ in range(READ_REPS)]
            verified = [timed(lambda: read_log(log, trusted=False)) for _ in range(READ_REPS)]
            baseline = [timed(lambda: read_baseline(base_path)) for _ in range(READ_REPS)]
    read_t, ver_t, rbase_t = (statistics.median(x) for x in (trusted, verified, baseline))
    out.update(
        read_log_s=read_t,
        read_log_verified_s=ver_t,
        read_base_s=rbase_t,
        read_log_rps=records / read_t,
        read_base_rps=records / rbase_t,
        read_log_mbps=log_bytes / read_t / 1e6,
        read_base_mbps=base_bytes / rbase_t / 1e6,
        read_ratio=rbase_t / read_t,
        read_ratio_verified=rbase_t / ver_t,
    )
    progress(
        f"[{label}] append log {out['append_log_mbps']:.0f} MB/s vs pyarrow "
        f"{out['append_base_mbps']:.0f} MB/s (x{out['append_ratio']:.2f}, before the "
        f"fsync x{out['append_ratio_no_fsync']:.2f}); read log "
        f"{out['read_log_rps'] / 1e6:.0f} M rec/s vs pyarrow "
        f"{out['read_base_rps'] / 1e6:.0f} M rec/s (x{out['read_ratio']:.2f}, verified "
        f"x{out['read_ratio_verified']:.2f})"
    )
    return out, frames


def bench_lookup(frames: list[bytes], scratch: Path) -> dict[str, float]:
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        directory = Path(tmp) / "big"
        progress(f"[lookup] writing a {LOOKUP_LOG_BYTES / 2**30:.0f} GiB log ...")
        with ReplicaLog.open(directory, BENCH_CONFIG) as log:
            while log.size_bytes < LOOKUP_LOG_BYTES:
                for frame in frames:
                    log.append_produced(frame)
                    if log.size_bytes >= LOOKUP_LOG_BYTES:
                        break
        start = time.perf_counter()
        log = ReplicaLog.open(directory, BENCH_CONFIG)
        open_s = time.perf_counter() - start
        try:
            offsets = rng.integers(0, log.leo, LOOKUPS).tolist()
            for offset in offsets[:100]:  # warm the code paths
                log.read(offset, 1)
            latencies = np.empty(LOOKUPS, dtype=np.int64)
            clock = time.perf_counter_ns
            for i, offset in enumerate(offsets):
                t0 = clock()
                piece = log.read(offset, 1)
                latencies[i] = clock() - t0
                if not piece.base_offset <= offset < piece.next_offset:
                    raise AssertionError(f"lookup of {offset} returned {piece}")
            size, segments, leo = log.size_bytes, len(log.segments), log.leo
        finally:
            log.close()
    us = latencies / 1000
    out = {
        "lookup_log_bytes": size,
        "lookup_log_segments": segments,
        "lookup_log_records": leo,
        "lookup_open_s": open_s,
        "lookup_p50_us": float(np.percentile(us, 50)),
        "lookup_p99_us": float(np.percentile(us, 99)),
        "lookup_max_us": float(us.max()),
    }
    progress(
        f"[lookup] {LOOKUPS:,} lookups on {size / 1e9:.2f} GB ({segments} segments): "
        f"p50 {out['lookup_p50_us']:.1f} us, p99 {out['lookup_p99_us']:.1f} us; "
        f"reopen {open_s * 1000:.0f} ms"
    )
    return out


def main() -> int:
    started = time.perf_counter()
    progress(__doc__.split("What each side does (also printed):")[1].strip())
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as root:
        scratch = Path(root)
        small, small_frames = bench_size("100B", 1_000_000, 100, scratch)
        large, large_frames = bench_size("1KB", 200_000, 1024, scratch)
        sizes = {"100B": small, "1KB": large}
        # The same records, interleaved, repeated (with new offsets) up to ~1 GiB.
        frames = [f for pair in zip(small_frames, large_frames, strict=False) for f in pair]
        frames += small_frames[len(large_frames) :]
        lookup = bench_lookup(frames, scratch)
    total = {
        key: sum(s[key] for s in sizes.values())
        for key in (
            "append_log_s",
            "append_base_s",
            "append_log_write_s",
            "append_base_write_s",
            "read_log_s",
            "read_log_verified_s",
            "read_base_s",
        )
    }
    result = {
        "append_ratio": round(total["append_base_s"] / total["append_log_s"], 3),
        "append_ratio_no_fsync": round(
            total["append_base_write_s"] / total["append_log_write_s"], 3
        ),
        "read_ratio": round(total["read_base_s"] / total["read_log_s"], 3),
        "read_ratio_verified": round(total["read_base_s"] / total["read_log_verified_s"], 3),
        "lookup_p50_us": round(lookup["lookup_p50_us"], 2),
        "lookup_p99_us": round(lookup["lookup_p99_us"], 2),
        "lookup_log_bytes": lookup["lookup_log_bytes"],
        "by_size": {
            label: {k: round(v, 3) if isinstance(v, float) else v for k, v in s.items()}
            for label, s in sizes.items()
        },
        "lookup": {k: round(v, 3) if isinstance(v, float) else v for k, v in lookup.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
