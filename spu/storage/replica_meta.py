"""The metadata an SPU keeps of each replica it holds: ``replica.json`` in its directory.

Why. The SC's desired state lives in Redis; when Redis loses it (flushed, a new empty
server) the SPUs still hold the data. Each replica directory therefore keeps the replica
as the SC last handed it over (topic settings, partition, replica set, leader, leader
epoch, uid, revision) and the identity of the store it came from (``ReplicaMeta``); the
SPU reports these when it connects and an SC whose store forgot them rebuilds topics and
partitions from them (``sc.rebuild``), as Kafka rebuilds from what brokers hold.

The file is ``{"version": 1, "meta": ReplicaMeta.to_wire()}`` as JSON, replaced
atomically (temporary file, fsync, rename, directory fsync): a crash leaves the old or the
new record. It is written only when its content changes (a handover, an election, a
changed spec), never on the data path.
"""

from __future__ import annotations

import json
from pathlib import Path

from spark_stream.errors import FluvioError, StorageError
from spark_stream.protocol.control import ReplicaMeta
from spu.storage._fileio import write_atomic
from spu.storage.identity import list_replica_dirs
from spu.storage.layout import REPLICA_META_NAME

__all__ = ["META_VERSION", "read_replica_meta", "write_replica_meta", "list_replica_meta"]

#: ``version`` of a ``replica.json`` file.
META_VERSION = 1


def encode_meta(meta: ReplicaMeta) -> bytes:
    """The file's bytes for ``meta`` (sorted keys: equal records, equal bytes)."""
    return json.dumps({"version": META_VERSION, "meta": meta.to_wire()}, sort_keys=True).encode()


def decode_meta(data: bytes, where: str) -> ReplicaMeta:
    """The record in a file's bytes.

    Raises:
        StorageError: not JSON, another version, or a malformed record (names ``where``).
    """
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise StorageError(f"{where}: not JSON: {exc}") from exc
    version = doc.get("version") if isinstance(doc, dict) else None
    if version != META_VERSION:
        raise StorageError(f"{where}: unknown version {version!r}")
    try:
        return ReplicaMeta.from_wire(doc.get("meta"))
    except (FluvioError, ValueError) as exc:
        raise StorageError(f"{where}: {exc}") from exc


def read_replica_meta(directory: Path) -> ReplicaMeta | None:
    """The record kept in ``directory``, or None when it has none.

    Raises:
        StorageError: the file exists but is unreadable or malformed.
    """
    path = directory / REPLICA_META_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"{path} is unreadable: {exc}") from exc
    return decode_meta(data, str(path))


def write_replica_meta(directory: Path, meta: ReplicaMeta) -> None:
    """Durably replace the record kept in ``directory`` (which must exist).

    Raises:
        StorageError: the file cannot be written.
    """
    path = directory / REPLICA_META_NAME
    try:
        write_atomic(path, encode_meta(meta))
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc


def list_replica_meta(root: Path) -> list[ReplicaMeta]:
    """The records of every replica directory under ``root`` that has a valid one.

    A record whose uid is not the one the directory holds (``partition.uid``) is left
    out: it describes an incarnation whose data is not there. So is an unreadable one
    (the directory's ``stored`` entry is still reported, and opening it names the error).
    """
    found = []
    for name, uid in list_replica_dirs(root):
        try:
            meta = read_replica_meta(root / name)
        except StorageError:
            continue
        if meta is not None and meta.replica.name == name and meta.replica.uid == uid:
            found.append(meta)
    return found
