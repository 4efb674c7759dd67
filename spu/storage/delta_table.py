"""Committing tiered Parquet files to the topic's Delta table (``--table delta``).

The table lives at the topic's tier directory ``T`` (so ``spark.read.format("delta")
.load(T)`` reads it) and is written with ``deltalake`` (delta-rs), never by hand. A commit
adds files that already exist under ``T``: blind appends, nothing rewritten. The rules
(transaction per partition, which files are pending, the schema) are in
``spu.storage.delta_plan``; this module reads Parquet footers, loads the table, commits,
and retries when another committer won the race:

* files of other partitions committed meanwhile: delta-rs rebases the append itself;
* the same partition committed meanwhile (a retry after a crash, an old and a new leader
  at once): the commit fails on the application transaction, and the next attempt
  re-reads the table and finds the files there (``pending`` is empty);
* the table created meanwhile by another partition's first commit: the next attempt
  appends to it.

The first commit creates the table with the files' schema and ``delta.checkpointInterval``
= ``CHECKPOINT_INTERVAL``: delta-rs's post-commit hook then writes a Parquet checkpoint of
the log every that many commits (one commit per tiered segment), so a reader loads the
last checkpoint and at most ``CHECKPOINT_INTERVAL - 1`` JSON commits instead of replaying
every commit since the table began. A typed topic's evolution
(new nullable columns) is a metadata commit adding the columns before the files that
have them, so older files read them as null.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, Field
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import (
    AddAction,
    CommitProperties,
    RemoveAction,
    Transaction,
    create_table_with_add_actions,
)

from spark_stream.backoff import BackoffPolicy
from spark_stream.errors import StorageError
from spu.storage.delta_plan import (
    PARTITION_COLUMN,
    TieredFile,
    add_stats,
    app_id,
    delta_schema,
    file_path,
    missing_columns,
    pending,
    table_schema,
)

__all__ = [
    "CHECKPOINT_INTERVAL",
    "DELTA_LOG_DIR",
    "MAX_ATTEMPTS",
    "commit_segments",
    "committed_version",
    "load",
    "remove_segments",
]

#: The Delta log directory under the table root (its presence makes ``T`` a table).
DELTA_LOG_DIR = "_delta_log"
#: Commits between two checkpoints of the log (the table property ``delta.checkpointInterval``
#: set at creation; Delta Spark's default, delta-rs's is 100). A checkpoint rewrites the
#: table's whole state (one row per live file, a few hundred bytes each), so it costs
#: writers O(files) every 10 commits; it spares every reader that builds a new snapshot
#: (each query after a commit) opening one JSON file per commit since the last one.
CHECKPOINT_INTERVAL = 10
CHECKPOINT_PROPERTY = "delta.checkpointInterval"
#: Attempts of one commit before giving up (each lost race costs one).
MAX_ATTEMPTS = 30
_RETRY = BackoffPolicy(initial=0.01, maximum=0.5)


def load(table_url: str, storage_options: dict[str, str] | None = None) -> DeltaTable | None:
    """The Delta table at ``table_url``, or None when there is none (yet)."""
    if not DeltaTable.is_deltatable(table_url, storage_options):
        return None
    return DeltaTable(table_url, storage_options=storage_options)


def committed_version(
    table_url: str, partition: int, storage_options: dict[str, str] | None = None
) -> int | None:
    """Base offset of the last segment of ``partition`` committed to the table, if any."""
    table = load(table_url, storage_options)
    return None if table is None else table.transaction_version(app_id(partition))


def commit_segments(
    table_url: str,
    partition: int,
    base_offsets: Sequence[int],
    *,
    storage_options: dict[str, str] | None = None,
) -> list[int]:
    """Commit the tiered files of ``partition`` at ``base_offsets`` to the Delta table.

    Idempotent: files already committed are skipped, so a caller may pass every file of
    the partition's tier manifest after a crash, or the same file twice. Files must be
    committed in ascending base offsets (the manifest's order): a file below one already
    committed counts as committed.

    Args:
        table_url: the table root, the topic's tier directory ``T`` (a path or a URL
            delta-rs reads: ``file://``, ``s3://``, ``gs://``, ``az://``...).
        partition: the topic partition.
        base_offsets: base offsets of tiered files ``T/partition={p}/{base:020}.parquet``.
        storage_options: object store options for delta-rs (credentials, endpoint).

    Returns:
        The base offsets this call committed (empty when all were already there).

    Raises:
        StorageError: a file cannot be read, the table refused the commit, or the commit
            lost the race ``MAX_ATTEMPTS`` times.
        InvalidConfigError: the files change a column's type or add a non-nullable one.
    """
    root = table_url.rstrip("/")
    footers: dict[int, tuple[TieredFile, pa.Schema]] = {}
    last: Exception | None = None
    for attempt in range(MAX_ATTEMPTS):
        table = load(root, storage_options)
        version = None if table is None else table.transaction_version(app_id(partition))
        todo = pending([_stub(partition, b) for b in base_offsets], version)
        if not todo:
            return []
        for stub in todo:
            if stub.base_offset not in footers:
                footers[stub.base_offset] = _read_footer(root, partition, stub.base_offset)
        files = [footers[stub.base_offset][0] for stub in todo]
        schema = table_schema(footers[todo[-1].base_offset][1])
        try:
            if table is None:
                _create(root, files, schema, storage_options)
            elif _evolve(table, schema):
                continue  # a metadata commit made: add the files to the new snapshot
            else:
                table.create_write_transaction(
                    [_add(f) for f in files],
                    "append",
                    table.schema(),
                    partition_by=[PARTITION_COLUMN],
                    commit_properties=_commit(files),
                )
        except CommitFailedError as exc:
            last = exc  # lost a race; the next attempt re-reads the table
        except DeltaError as exc:
            if table is None and "already exists" in str(exc).lower():
                last = exc  # another partition created the table first
            else:
                raise StorageError(f"cannot commit to the Delta table {root}: {exc}") from exc
        else:
            return [f.base_offset for f in files]
        time.sleep(_RETRY.delay(attempt))
    raise StorageError(
        f"cannot commit partition {partition} to the Delta table {root} after "
        f"{MAX_ATTEMPTS} attempts: {last}"
    )


def remove_segments(
    table_url: str,
    partition: int,
    base_offsets: Sequence[int],
    *,
    storage_options: dict[str, str] | None = None,
) -> list[int]:
    """Remove the files of ``partition`` at ``base_offsets`` from the table (tier retention).

    Call it before the files are deleted from the tier, so the table's current version
    never names a missing file (older versions do: time travel reaches back only as far
    as the tier keeps files). Idempotent: files not in the table are skipped.

    Returns:
        The base offsets this call removed.

    Raises:
        StorageError: the table refused the commit, or it lost the race ``MAX_ATTEMPTS``
            times.
    """
    root = table_url.rstrip("/")
    last: Exception | None = None
    for attempt in range(MAX_ATTEMPTS):
        table = load(root, storage_options)
        if table is None:
            return []
        sizes = _file_sizes(table)
        todo = sorted(b for b in set(base_offsets) if file_path(partition, b) in sizes)
        if not todo:
            return []
        now = int(time.time() * 1000)
        actions: list[AddAction | RemoveAction] = [
            RemoveAction(
                file_path(partition, b),
                True,
                now,
                sizes[file_path(partition, b)],
                {PARTITION_COLUMN: str(partition)},
            )
            for b in todo
        ]
        try:
            table.create_write_transaction(
                actions, "append", table.schema(), partition_by=[PARTITION_COLUMN]
            )
        except CommitFailedError as exc:
            last = exc  # removed (or changed) meanwhile; look again
        except DeltaError as exc:
            raise StorageError(f"cannot remove files from the Delta table {root}: {exc}") from exc
        else:
            return todo
        time.sleep(_RETRY.delay(attempt))
    raise StorageError(
        f"cannot remove partition {partition}'s files from the Delta table {root} after "
        f"{MAX_ATTEMPTS} attempts: {last}"
    )


def _file_sizes(table: DeltaTable) -> dict[str, int]:
    actions = pa.table(table.get_add_actions(flatten=True))
    paths = actions.column("path").to_pylist()
    sizes = actions.column("size_bytes").to_pylist()
    return dict(zip(paths, sizes, strict=True))


def _stub(partition: int, base_offset: int) -> TieredFile:
    return TieredFile(partition, base_offset, 0, 0, 0, 0)


def _read_footer(root: str, partition: int, base_offset: int) -> tuple[TieredFile, pa.Schema]:
    """The file's record count, exact offset bounds and size, from its Parquet footer."""
    url = f"{root}/{file_path(partition, base_offset)}"
    try:
        fs, path = fsspec.core.url_to_fs(url)
        size = int(fs.size(path))
        with fs.open(path, "rb") as source:
            meta = pq.ParquetFile(source).metadata
            schema = meta.schema.to_arrow_schema()
            column = schema.get_field_index("offset")
            if column < 0:
                raise StorageError(f"tiered file {url} has no offset column")
            bounds = [
                _bounds(meta.row_group(i).column(column))
                for i in range(meta.num_row_groups)
                if meta.row_group(i).num_rows
            ]
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise StorageError(f"cannot read the tiered file {url}: {exc}") from exc
    rows = int(meta.num_rows)
    exact = [b for b in bounds if b is not None]
    if len(exact) != len(bounds):
        raise StorageError(f"tiered file {url} has no statistics of its offset column")
    low = min((b[0] for b in exact), default=base_offset)
    high = max((b[1] for b in exact), default=base_offset)
    return TieredFile(partition, base_offset, rows, low, high, size), schema


def _bounds(chunk: pq.ColumnChunkMetaData) -> tuple[int, int] | None:
    stats = chunk.statistics
    if stats is None or not stats.has_min_max:
        return None
    return int(stats.min), int(stats.max)


def _add(file: TieredFile) -> AddAction:
    return AddAction(
        path=file.path,
        size=file.size,
        partition_values={PARTITION_COLUMN: str(file.partition)},
        modification_time=int(time.time() * 1000),
        data_change=True,
        stats=add_stats(file),
    )


def _commit(files: Sequence[TieredFile]) -> CommitProperties:
    # The transaction version is the newest base offset: every file up to it is in.
    partition = files[0].partition
    return CommitProperties(
        app_transactions=[Transaction(app_id(partition), files[-1].base_offset)],
        custom_metadata={"isBlindAppend": True},
    )


def _create(
    root: str,
    files: Sequence[TieredFile],
    schema: pa.Schema,
    storage_options: dict[str, str] | None,
) -> None:
    create_table_with_add_actions(
        root,
        delta_schema(schema),
        [_add(f) for f in files],
        mode="error",
        partition_by=[PARTITION_COLUMN],
        configuration={CHECKPOINT_PROPERTY: str(CHECKPOINT_INTERVAL)},
        storage_options=storage_options,
        commit_properties=_commit(files),
    )


def _evolve(table: DeltaTable, schema: pa.Schema) -> bool:
    """Add the columns of ``schema`` the table lacks; True when a commit was made."""
    current = pa.schema(table.schema().to_arrow())
    added = missing_columns(current, schema)
    if not added:
        return False
    table.alter.add_columns([Field.from_arrow(f) for f in added])
    return True
