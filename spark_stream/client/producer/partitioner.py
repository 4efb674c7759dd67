"""Choosing a partition for each record: a stable key hash, or round robin.

The key hash is **32-bit FNV-1a** of the key bytes, and the partition is
``hash % partitions``. It is stable across processes, machines and Python versions
(unlike ``hash()``), simple enough to reimplement in any language, and computed two
ways that always agree: ``fnv1a_32`` for one key (``send``), and ``fnv1a_32_array`` for
a whole Arrow column (the bulk path), which loops over byte *positions* with numpy, never
over records. Keys of equal length (the common case) are hashed as one 2-D byte matrix.

``default`` hashes keyed records and spreads keyless ones round robin, as Fluvio's
default partitioner does; ``hash`` sends keyless records to partition 0; ``round_robin``
ignores keys.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pyarrow as pa

from spark_stream.errors import InvalidConfigError

__all__ = [
    "FNV_OFFSET",
    "FNV_PRIME",
    "fnv1a_32",
    "fnv1a_32_array",
    "Partitioner",
    "make_partitioner",
]

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193
_MASK = 0xFFFFFFFF


def fnv1a_32(data: bytes | str) -> int:
    """32-bit FNV-1a of one key (``str`` is hashed as its UTF-8 bytes)."""
    if isinstance(data, str):
        data = data.encode()
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & _MASK
    return h


def _binary_parts(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(start offsets with one extra end entry, data bytes) of a binary-like array."""
    if pa.types.is_string(keys.type):
        keys = keys.cast(pa.binary())
    elif any(
        check(keys.type)
        for check in (pa.types.is_large_string, pa.types.is_binary_view, pa.types.is_string_view)
    ):
        keys = keys.cast(pa.large_binary())
    if pa.types.is_binary(keys.type):
        dtype: type[np.integer] = np.int32
    elif pa.types.is_large_binary(keys.type):
        dtype = np.int64
    else:
        raise InvalidConfigError(f"key column must be binary or string, got {keys.type}")
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=dtype)[keys.offset : keys.offset + len(keys) + 1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)
        if data_buf is not None
        else np.zeros(0, dtype=np.uint8)
    )
    return offsets.astype(np.int64, copy=False), data


def fnv1a_32_array(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """FNV-1a of every key of a binary/string column, as ``uint32``; nulls hash as empty.

    Work is ``O(rows x longest key)`` numpy element operations in ``O(longest key)``
    vectorised steps; there is no per-record Python code.
    """
    if isinstance(keys, pa.ChunkedArray):
        parts = [fnv1a_32_array(chunk) for chunk in keys.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    n = len(keys)
    h = np.full(n, FNV_OFFSET, dtype=np.uint32)
    if n == 0:
        return h
    offsets, data = _binary_parts(keys)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if keys.null_count:
        lengths = np.where(np.asarray(keys.is_null()), 0, lengths)
    prime = np.uint32(FNV_PRIME)
    width = int(lengths.max())
    if width == 0:
        return h
    first = int(starts[0])
    if bool((lengths == width).all()) and int(offsets[-1]) - first == n * width:
        # Equal-length keys stored back to back: one byte matrix, one column per step.
        matrix = data[first : first + n * width].reshape(n, width)
        for j in range(width):
            h ^= matrix[:, j]
            h *= prime
        return h
    order = np.argsort(-lengths, kind="stable")
    sorted_neg = -lengths[order]
    for j in range(width):
        active = int(np.searchsorted(sorted_neg, -j, side="left"))  # rows longer than j
        rows = order[:active]
        h[rows] = (h[rows] ^ data[starts[rows] + j]) * prime
    return h


class Partitioner:
    """Maps records to partitions; thread-safe (its round-robin counter is locked).

    Args:
        strategy: ``default``, ``hash`` or ``round_robin`` (see the module docstring).
    """

    def __init__(self, strategy: str = "default") -> None:
        if strategy not in ("default", "hash", "round_robin"):
            raise InvalidConfigError(f"partitioner: unknown strategy {strategy!r}")
        self.strategy = strategy
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def _next_rr(self, n: int = 1) -> int:
        with self._lock:
            start = next(self._counter)
            if n > 1:
                self._counter = itertools.count(start + n)
        return start

    def partition(self, key: bytes | str | None, num_partitions: int) -> int:
        """The partition of one record."""
        _check_count(num_partitions)
        if self.strategy != "round_robin" and key is not None:
            return fnv1a_32(key) % num_partitions
        if self.strategy == "hash":
            return 0
        return self._next_rr() % num_partitions

    def partitions(
        self, keys: pa.Array | pa.ChunkedArray | None, num_rows: int, num_partitions: int
    ) -> np.ndarray:
        """The partition of every row of a bulk write, as ``int32`` (vectorised).

        Args:
            keys: the key column, or None for keyless rows.
            num_rows: rows in the write (must equal ``len(keys)`` when keys are given).
            num_partitions: partitions of the topic.
        """
        _check_count(num_partitions)
        if keys is not None and len(keys) != num_rows:
            raise InvalidConfigError(f"key column has {len(keys)} rows, expected {num_rows}")
        if num_partitions == 1:
            return np.zeros(num_rows, dtype=np.int32)
        if keys is None or self.strategy == "round_robin":
            if self.strategy == "hash":
                return np.zeros(num_rows, dtype=np.int32)
            start = self._next_rr(num_rows)
            return ((np.arange(num_rows, dtype=np.int64) + start) % num_partitions).astype(np.int32)
        hashed = (fnv1a_32_array(keys) % np.uint32(num_partitions)).astype(np.int32)
        null_count = keys.null_count
        if null_count:
            nulls = np.asarray(keys.is_null())
            if self.strategy == "hash":
                hashed[nulls] = 0
            else:
                start = self._next_rr(null_count)
                hashed[nulls] = (np.arange(null_count, dtype=np.int64) + start) % num_partitions
        return hashed


def make_partitioner(strategy: str | Partitioner) -> Partitioner:
    """A ``Partitioner`` from a strategy name, or the instance itself."""
    return strategy if isinstance(strategy, Partitioner) else Partitioner(strategy)


def _check_count(num_partitions: int) -> None:
    if num_partitions < 1:
        raise InvalidConfigError(f"a topic has at least one partition, got {num_partitions}")
