"""Small file helpers of the storage engine: vectored positional writes, copies, fsyncs."""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Sequence
from pathlib import Path

__all__ = ["pwrite_all", "copy_range", "fsync_dir"]

_IOV_MAX = 1024


def fsync_dir(directory: Path) -> None:
    """fsync a directory so that file creations, renames and removals in it are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pwrite_all(fd: int, buffers: Sequence[bytes | memoryview], offset: int) -> None:
    """Write ``buffers`` back to back at ``offset``, resuming after short writes."""
    pending: deque[memoryview] = deque(memoryview(b) for b in buffers)
    while pending:
        chunk = list(itertools.islice(pending, _IOV_MAX))
        written = os.pwritev(fd, chunk, offset)
        if written <= 0:
            raise OSError(f"pwritev wrote {written} bytes")
        offset += written
        while written:
            head = pending[0]
            if written >= len(head):
                written -= len(head)
                pending.popleft()
            else:
                pending[0] = head[written:]
                written = 0


def copy_range(src: int, dst: int, count: int) -> None:
    """Copy the first ``count`` bytes of ``src`` to ``dst`` (in the kernel when it can)."""
    copied = 0
    try:
        while copied < count:
            n = os.copy_file_range(src, dst, count - copied, copied, copied)
            if n == 0:
                break
            copied += n
    except OSError:
        pass
    while copied < count:
        chunk = os.pread(src, min(8 << 20, count - copied), copied)
        if not chunk:
            raise OSError(f"short read copying a segment at byte {copied}")
        os.pwrite(dst, chunk, copied)
        copied += len(chunk)
