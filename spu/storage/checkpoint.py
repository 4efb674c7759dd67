"""The high-watermark checkpoint ``replication.chk``: a tiny text file, replaced atomically.

Format (text, like Kafka's checkpoint files): a version line ``0`` and one line
``high_watermark <n>``. It is written to a temporary file, fsynced, renamed over the old
one and the directory fsynced, so a crash leaves either the old or the new value.
"""

from __future__ import annotations

import os
from pathlib import Path

from spark_stream.errors import StorageError

__all__ = ["CHECKPOINT_VERSION", "read_checkpoint", "write_checkpoint"]

CHECKPOINT_VERSION = 0


def write_checkpoint(path: Path, high_watermark: int) -> None:
    """Durably replace ``path`` with ``high_watermark``."""
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
