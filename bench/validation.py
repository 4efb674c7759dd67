"""Payload-check benchmark: what each ``frame_validation`` level costs per produced frame.

A produced frame is appended only after its payload passes the SPU's check
(``spark_stream.frame_check``). This measures, per frame size and codec, the
microseconds of each level on frames like the bulk producer sends (random binary values,
null keys and headers), next to the crc32c pass every append already makes over the
same bytes, and the check the log made before levels existed (Arrow's
``read_record_batch``, no validation). Each figure is the best of ``--rounds`` rounds.
Prints a table and, as the last line, one JSON object.

    ./dev bench validation [--rounds 7]
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from crc32c import crc32c

from spark_stream.frame_check import PAYLOAD_CHECKS, check_payload
from spark_stream.records import (
    BATCH_HEADER_SIZE,
    RECORD_SCHEMA,
    Compression,
    build_batch,
    encode_batch,
    read_header,
)

SAMPLE_SECONDS = 0.05
CASES: tuple[tuple[int, int], ...] = ((100, 100), (10_000, 100), (40_000, 100), (4_000, 1000))
"""(rows, value bytes) per frame: small frames, and the bulk producer's ~4 MiB ones."""


def _values(n: int, size: int) -> pa.Array:
    """``n`` random binary values of ``size`` bytes (as ``bench.cluster`` sends)."""
    data = np.random.default_rng(7).integers(0, 256, n * size, dtype=np.uint8).tobytes()
    offsets = np.arange(0, (n + 1) * size, size, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _best_us(action: Callable[[], object], rounds: int) -> float:
    """Best over ``rounds`` of the mean microseconds of ``action`` in a short sample."""
    best = float("inf")
    for _ in range(rounds):
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < SAMPLE_SECONDS:
            action()
            calls += 1
        best = min(best, elapsed / calls * 1e6)
    return best


def measure(rows: int, size: int, compression: Compression, rounds: int) -> dict[str, Any]:
    """The figures of one frame shape."""
    frame = encode_batch(build_batch(_values(rows, size)), compression=compression)
    view, header = memoryview(frame), read_header(frame)
    payload = pa.py_buffer(view[BATCH_HEADER_SIZE:])
    row: dict[str, Any] = {
        "rows": rows,
        "value_bytes": size,
        "compression": compression,
        "frame_bytes": len(frame),
        "crc_us": round(_best_us(lambda: crc32c(view[20:]), rounds), 1),
        "old_check_us": round(
            _best_us(lambda: ipc.read_record_batch(payload, RECORD_SCHEMA), rounds), 1
        ),
    }
    for level in PAYLOAD_CHECKS:
        if level != "none":
            check = functools.partial(check_payload, view, header, RECORD_SCHEMA, level)
            row[f"{level}_us"] = round(_best_us(check, rounds), 1)
    row["full_mb_per_s"] = round(len(frame) / row["full_us"], 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds per figure (best kept)")
    args = parser.parse_args()
    results = [
        measure(rows, size, compression, args.rounds)
        for rows, size in CASES
        for compression in ("none", "lz4")
    ]
    print(
        f"{'rows':>7} {'B/value':>7} {'codec':>5} {'frame B':>9} {'crc us':>8} "
        f"{'old us':>8} {'struct us':>9} {'full us':>8} {'full MB/s':>9}"
    )
    for r in results:
        print(
            f"{r['rows']:>7} {r['value_bytes']:>7} {r['compression']:>5} {r['frame_bytes']:>9} "
            f"{r['crc_us']:>8} {r['old_check_us']:>8} {r['structure_us']:>9} "
            f"{r['full_us']:>8} {r['full_mb_per_s']:>9}"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
