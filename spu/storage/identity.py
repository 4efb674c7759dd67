"""Which incarnation of a partition a replica directory holds: its ``partition.uid`` file.

A topic deleted and created again has partitions of the same names, hence the same
replica directories (``replica_dir``); only the partition's uid (``metadata.uid``, given
by the SC's KV store when the partition is created) tells the two apart. The SPU writes
the uid into the directory before the log first opens there and compares it whenever
it opens the directory again, so the storage of one incarnation is never attached to
another (Kafka keeps a topic id in ``partition.metadata`` for the same reason). A
directory without the file was written for a partition created before uids existed
(uid ``None``).

Also here: listing a data directory's replica directories with their uids (what an SPU
reports to the SC when it connects) and removing one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from spark_stream.errors import StorageError
from spu.storage._fileio import fsync_dir, read_key_file, write_key_file
from spu.storage.layout import UID_NAME

__all__ = ["UID_VERSION", "read_uid", "write_uid", "list_replica_dirs", "remove_replica_dir"]

#: First line of a ``partition.uid`` file.
UID_VERSION = 0

_UID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_REPLICA_DIR = re.compile(r"^.+-(0|[1-9][0-9]*)$")


def read_uid(directory: Path) -> str | None:
    """The uid stored in ``directory``, or ``None`` when it has no ``partition.uid``.

    Raises:
        StorageError: the file exists but does not hold a uid of this version.
    """
    path = directory / UID_NAME
    value = read_key_file(path, UID_VERSION, "uid")
    if value is not None and not _UID.match(value):
        raise StorageError(f"{path}: malformed uid {value!r}")
    return value


def write_uid(directory: Path, uid: str) -> None:
    """Durably record ``uid`` in ``directory`` (created if missing).

    Raises:
        StorageError: ``uid`` is not 1-64 characters of letters, digits, ``.``, ``_``,
            ``-``; or the file cannot be written.
    """
    if not _UID.match(uid):
        raise StorageError(f"partition uid {uid!r} cannot be stored")
    path = directory / UID_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_key_file(path, UID_VERSION, "uid", uid)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc


def list_replica_dirs(root: Path) -> list[tuple[str, str | None]]:
    """The replica directories under ``root`` (named ``{topic}-{partition}``), by name.

    Returns:
        ``(directory name, uid)`` pairs, sorted by name. A directory whose uid file is
        unreadable is left out: it is neither reported nor ever purged (opening it
        reports the error).
    """
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.iterdir()):
        if not path.is_dir() or not _REPLICA_DIR.match(path.name):
            continue
        try:
            found.append((path.name, read_uid(path)))
        except StorageError:
            continue
    return found


def remove_replica_dir(directory: Path) -> None:
    """Delete a (closed) replica directory and everything in it; a missing one is fine.

    Raises:
        StorageError: the directory cannot be removed.
    """
    try:
        shutil.rmtree(directory)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot remove {directory}: {exc}") from exc
    try:
        fsync_dir(directory.parent)
    except OSError as exc:
        raise StorageError(f"cannot sync {directory.parent}: {exc}") from exc
