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
from spu.storage._fileio import read_key_file, write_key_file

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
    write_key_file(path, CHECKPOINT_VERSION, "high_watermark", str(high_watermark))


def read_checkpoint(path: Path) -> int | None:
    """The checkpointed high watermark, or ``None`` when there is no checkpoint.

    Raises:
        StorageError: the file exists but does not hold a checkpoint of this version.
    """
    value = read_key_file(path, CHECKPOINT_VERSION, "high_watermark")
    if value is None:
        return None
    if not value.isdigit():
        raise StorageError(f"{path}: malformed high watermark {value!r}")
    return int(value)
