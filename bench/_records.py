"""Synthetic record batches for benchmarks: random values, no per-record Python work."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_stream.records import HEADERS_TYPE, RECORD_SCHEMA

__all__ = ["make_batches", "batch_sizes"]

TS0 = 1_700_000_000_000_000


def batch_sizes(total: int, low: int, high: int, rng: np.random.Generator) -> list[int]:
    """Random batch sizes in ``[low, high]`` adding up to exactly ``total``."""
    sizes: list[int] = []
    left = total
    while left > 0:
        n = min(int(rng.integers(low, high + 1)), left)
        sizes.append(n)
        left -= n
    return sizes


def make_batches(
    total: int, value_size: int, *, low: int = 1_000, high: int = 10_000, seed: int = 7
) -> list[pa.RecordBatch]:
    """``total`` records of ``value_size``-byte random values, in batches of ``low..high``.

    Keys and headers are null; timestamps are one microsecond apart.
    """
    rng = np.random.default_rng(seed)
    batches = []
    first = 0
    for n in batch_sizes(total, low, high, rng):
        data = rng.integers(0, 256, n * value_size, dtype=np.uint8)
        offsets = np.arange(0, (n + 1) * value_size, value_size, dtype=np.int32)
        values = pa.Array.from_buffers(
            pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        ts = pa.array(np.arange(TS0 + first, TS0 + first + n, dtype=np.int64)).cast(
            RECORD_SCHEMA.field("timestamp").type
        )
        batches.append(
            pa.RecordBatch.from_arrays(
                [pa.nulls(n, pa.binary()), values, ts, pa.nulls(n, HEADERS_TYPE)],
                schema=RECORD_SCHEMA,
            )
        )
        first += n
    return batches
