"""Small file helpers of the storage engine: vectored positional writes, copies, fsyncs,
and the versioned one-line text files (the HW checkpoint, the partition uid)."""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from spark_stream.errors import StorageError

__all__ = [
    "pwrite_all",
    "copy_range",
    "fsync_dir",
    "read_key_file",
    "write_key_file",
    "write_atomic",
]

_IOV_MAX = 1024


def fsync_dir(directory: Path) -> None:
    """fsync a directory so that file creations, renames and removals in it are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_key_file(path: Path, version: int, key: str) -> str | None:
    """The value of a ``{version}\n{key} {value}\n`` file, or None when it does not exist.

    Raises:
        StorageError: the file is unreadable, of another version, or names another key.
    """
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"{path} is unreadable: {exc}") from exc
    lines = text.split("\n")
    if len(lines) < 2 or lines[0] != str(version):
        raise StorageError(f"{path}: unknown version {lines[0]!r}")
    found, _, value = lines[1].partition(" ")
    if found != key:
        raise StorageError(f"{path}: malformed line {lines[1]!r}")
    return value


def write_key_file(path: Path, version: int, key: str, value: str) -> None:
    """Durably replace ``path`` with ``{version}\n{key} {value}\n``.

    Written to a temporary file, fsynced, renamed over ``path`` and the directory fsynced:
    a crash leaves the old or the new value, never a torn one.

    Raises:
        OSError: the file cannot be written.
    """
    write_atomic(path, f"{version}\n{key} {value}\n".encode("ascii"))


def write_atomic(path: Path, data: bytes) -> None:
    """Durably replace ``path`` with ``data``: a crash leaves the old or the new file.

    Written to ``{path}.tmp``, fsynced, renamed over ``path`` and the directory fsynced.

    Raises:
        OSError: the file cannot be written.
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


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
