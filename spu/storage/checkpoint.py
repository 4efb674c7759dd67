"""The high-watermark checkpoint ``replication.chk``: a tiny text file, replaced atomically.

Format (text, like Kafka's checkpoint files): a version line ``0`` and one line
``high_watermark <n>``. It is written to a temporary file, fsynced, renamed over the old
one and the directory fsynced, so a crash leaves either the old or the new value.
Writers of one path are serialized by ``checkpoint_lock(path)`` (an owner may write the
checkpoint from a worker thread while the log checkpoints on truncation or close).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from spark_stream.errors import StorageError

__all__ = ["CHECKPOINT_VERSION", "checkpoint_lock", "read_checkpoint", "write_checkpoint"]

CHECKPOINT_VERSION = 0

_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def checkpoint_lock(path: Path) -> threading.RLock:
    """The lock ``write_checkpoint`` holds for ``path`` (reentrant: hold it to read a value
    and write it in one step)."""
    key = os.path.abspath(path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


def write_checkpoint(path: Path, high_watermark: int) -> None:
    """Durably replace ``path`` with ``high_watermark``."""
    with checkpoint_lock(path):
        _write(path, high_watermark)


def _write(path: Path, high_watermark: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    data = f"{CHECKPOINT_VERSION}\nhigh_watermark {high_watermark}\n".encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_checkpoint(path: Path) -> int | None:
    """The checkpointed high watermark, or ``None`` when there is no checkpoint.

    Raises:
        StorageError: the file exists but does not hold a checkpoint of this version.
    """
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"{path.name} is unreadable: {exc}") from exc
    lines = text.split("\n")
    if len(lines) < 2 or lines[0] != str(CHECKPOINT_VERSION):
        raise StorageError(f"{path.name}: unknown checkpoint version {lines[0]!r}")
    key, _, value = lines[1].partition(" ")
    if key != "high_watermark" or not value.isdigit():
        raise StorageError(f"{path.name}: malformed line {lines[1]!r}")
    return int(value)
