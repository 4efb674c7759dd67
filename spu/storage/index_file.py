"""An index file: fixed-size entries in a memory-mapped file, appended or read-only.

A writable index (the active segment's) is over-allocated: the file is grown in doubling
steps with ``ftruncate`` and re-mapped, and ``count`` says how many entries are real. It is
trimmed to ``count`` entries when the segment is sealed or closed. A sealed segment's
index is mapped read-only and its file size is exactly ``count`` entries, which is what
the sanity checks at open rely on. The active segment's indexes are rebuilt from the log
at every open, so a crash that leaves zero padding behind is harmless.

Every numpy view over the map is private and short-lived (searches return plain ints):
a live export would stop the map from being closed or resized.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path

import numpy as np

__all__ = ["IndexFile"]

_MIN_CAPACITY = 256


class IndexFile:
    """A sorted array of ``dtype`` entries backed by a memory-mapped file."""

    def __init__(self, path: Path, dtype: np.dtype, *, writable: bool) -> None:
        """Map ``path`` (created if missing); use ``open_*``/``write_*`` constructors."""
        self.path = path
        self.dtype = dtype
        self.writable = writable
        self._fd = -1
        self._count = self._capacity = 0
        self._map: mmap.mmap | None = None
        self._array: np.ndarray = np.empty(0, dtype)
        self.reopen()

    @classmethod
    def open_read_only(cls, path: Path, dtype: np.dtype) -> IndexFile:
        """Map an existing index read-only.

        Raises:
            FileNotFoundError: the file is missing.
            ValueError: its size is not a whole number of entries.
        """
        return cls(path, dtype, writable=False)

    @classmethod
    def write(
        cls, path: Path, dtype: np.dtype, entries: np.ndarray, *, writable: bool
    ) -> IndexFile:
        """Replace ``path`` with exactly ``entries`` (crash-safe) and map it."""
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as out:
            out.write(np.ascontiguousarray(entries, dtype=dtype).tobytes())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        return cls(path, dtype, writable=writable)

    @property
    def count(self) -> int:
        """Number of entries."""
        return self._count

    @property
    def entries(self) -> np.ndarray:
        """The entries; a view for immediate use only (do not keep it)."""
        return self._array[: self._count]

    def last(self) -> tuple[int, ...] | None:
        """The last entry as plain ints, or ``None``."""
        return tuple(self._array[self._count - 1].tolist()) if self._count else None

    def append(self, *fields: int) -> None:
        """Append one entry (fields in dtype order); grows the file when full."""
        if not self.writable:
            raise ValueError(f"{self.path.name} is read-only")
        if self._count == self._capacity:
            self._grow(max(_MIN_CAPACITY, self._capacity * 2))
        self._array[self._count] = fields
        self._count += 1

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` entries."""
        if not self.writable:
            raise ValueError(f"{self.path.name} is read-only")
        if not 0 <= count <= self._count:
            raise ValueError(f"cannot truncate {self._count} entries to {count}")
        self._array[count : self._count] = np.zeros(self._count - count, self.dtype)
        self._count = count

    def seal(self) -> None:
        """Trim the file to its entries, fsync it and map it read-only."""
        self._resize_file(self._count)
        os.fsync(self._fd)
        self.writable = False

    def make_writable(self) -> None:
        """Reopen a sealed index for appends (a truncated log made its segment active)."""
        if self.writable:
            return
        self._release_map()
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR)
        self.writable = True
        self._remap()

    def flush(self) -> None:
        """Write dirty pages of the map and fsync the file."""
        if self._map is not None and self.writable:
            self._map.flush()
        os.fsync(self._fd)

    def close(self, *, trim: bool = True) -> None:
        """Trim a writable index to its entries (unless ``trim`` is false) and unmap it."""
        if self._fd < 0:
            return
        if self.writable and trim:
            self._resize_file(self._count)
        self._release_map()
        os.close(self._fd)
        self._fd = -1

    def delete(self) -> None:
        """Close without trimming and remove the file."""
        self.close(trim=False)
        self.path.unlink(missing_ok=True)

    @property
    def is_open(self) -> bool:
        """False after ``close`` (until ``reopen``)."""
        return self._fd >= 0

    def reopen(self) -> None:
        """Open and map the file again after ``close`` (a released segment used again).

        Raises:
            FileNotFoundError: the file is gone (a read-only one; writable ones are made).
            ValueError: its size is not a whole number of entries.
        """
        if self._fd >= 0:
            return
        flags = os.O_RDWR | os.O_CREAT if self.writable else os.O_RDONLY
        fd = os.open(self.path, flags, 0o644)
        size = os.fstat(fd).st_size
        if size % self.dtype.itemsize:
            os.close(fd)
            raise ValueError(f"{self.path.name}: {size} bytes is not a whole number of entries")
        self._fd = fd
        self._count = self._capacity = size // self.dtype.itemsize
        try:
            self._remap()
        except BaseException:
            os.close(fd)
            self._fd = -1
            raise

    def _grow(self, capacity: int) -> None:
        self._release_map()
        os.ftruncate(self._fd, capacity * self.dtype.itemsize)
        self._capacity = capacity
        self._remap()

    def _resize_file(self, count: int) -> None:
        self._release_map()
        os.ftruncate(self._fd, count * self.dtype.itemsize)
        self._capacity = count
        self._remap()

    def _release_map(self) -> None:
        self._array = np.empty(0, self.dtype)
        if self._map is not None:
            if self.writable:
                self._map.flush()
            with contextlib.suppress(BufferError):  # a stray view: unmapped when it goes
                self._map.close()
            self._map = None

    def _remap(self) -> None:
        size = os.fstat(self._fd).st_size
        self._capacity = size // self.dtype.itemsize
        if size == 0:
            self._map = None
            self._array = np.empty(0, self.dtype)
            return
        access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
        self._map = mmap.mmap(self._fd, size, access=access)
        self._array = np.frombuffer(self._map, dtype=self.dtype)
