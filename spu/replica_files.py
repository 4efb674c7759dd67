"""Replica directories on disk: open one incarnation, remove, keep metadata, list.

The blocking file work of the SPU dispatcher (``spu.dispatcher``), kept apart so the
dispatcher holds only its state and its reconcile loop. Every function here may fsync,
so the dispatcher runs them in worker threads (a push of 1,000 replicas would otherwise
hold the event loop for seconds); none touches the dispatcher's state.

Storage and partition incarnations. A replica directory holds one incarnation of its
partition, named by the partition's uid (``spu.storage.identity``). Opening a replica
whose directory holds another uid (the topic was deleted and created again while this
SPU kept the old data) empties the directory first: a re-created topic starts at offset
0. A replica that merely moved away keeps its directory, reattached if it comes back.
A purged (deleted) partition's directory is deleted only if it holds that incarnation;
``stored_replicas`` lists the directories for the SC, which purges the ones deleted
while this SPU was away.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from spark_stream.errors import FluvioError
from spark_stream.models import parse_partition_name
from spark_stream.protocol.control import Replica, ReplicaId, ReplicaMeta
from spu.storage import (
    LogConfig,
    ReplicaLog,
    list_replica_dirs,
    read_uid,
    remove_replica_dir,
    replica_dir,
    write_uid,
)
from spu.storage.replica_meta import write_replica_meta

__all__ = ["open_replica", "remove_replica", "stored_replicas", "write_meta"]

logger = logging.getLogger(__name__)


def open_replica(data_dir: Path | str, replica: Replica, config: LogConfig) -> ReplicaLog | None:
    """The replica's log, opened in its directory under ``data_dir``.

    A directory that holds another incarnation of the partition is emptied first; a new
    directory gets the uid before the log opens in it.

    Returns:
        The open log, or None (logged) when the storage cannot be used: one bad replica
        must not keep the others down.
    """
    path = replica_dir(data_dir, replica.topic, replica.partition)
    try:
        if path.exists() and read_uid(path) != replica.uid:
            remove_replica_dir(path)
            logger.info(
                "replica storage of an earlier incarnation removed partition=%s dir=%s",
                replica.name,
                path,
            )
        if replica.uid is not None and not path.exists():
            write_uid(path, replica.uid)
        return ReplicaLog.open(path, config)
    except FluvioError as exc:
        logger.error("cannot open replica partition=%s dir=%s: %s", replica.name, path, exc)
        return None


def remove_replica(data_dir: Path | str, replica: ReplicaId) -> None:
    """Delete the directory of a deleted partition if it holds that incarnation.

    A failure is logged, not raised: the SC purges the directory again on a later
    connect.
    """
    topic, partition = parse_partition_name(replica.name)
    path = replica_dir(data_dir, topic, partition)
    try:
        if not path.exists() or read_uid(path) != replica.uid:
            return  # gone already, or another incarnation's
        remove_replica_dir(path)
    except FluvioError as exc:
        logger.error("cannot remove replica partition=%s dir=%s: %s", replica.name, path, exc)
        return
    logger.info("replica storage removed partition=%s uid=%s", replica.name, replica.uid)


def write_meta(data_dir: Path | str, records: Iterable[ReplicaMeta]) -> list[ReplicaMeta]:
    """Write ``replica.json`` of each record's replica; a failed write is logged.

    Returns:
        The records written, so the caller remembers only what is on disk.
    """
    written = []
    for meta in records:
        replica = meta.replica
        path = replica_dir(data_dir, replica.topic, replica.partition)
        try:
            write_replica_meta(path, meta)
        except FluvioError as exc:
            logger.error("cannot keep replica metadata partition=%s: %s", replica.name, exc)
            continue
        written.append(meta)
    return written


def stored_replicas(data_dir: Path | str) -> list[ReplicaId]:
    """Every replica directory in ``data_dir``, with the uid it holds.

    A directory whose name is not a partition name is not listed.
    """
    stored = []
    for name, uid in list_replica_dirs(Path(data_dir)):
        try:
            parse_partition_name(name)
        except ValueError:
            continue
        stored.append(ReplicaId(name, uid))
    return stored
