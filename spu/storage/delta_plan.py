"""What a Delta commit of tiered Parquet files holds: the pure half of ``delta_table``.

Theory of operation. A topic with ``table: delta`` has a Delta table at the root of its
tier directory ``T``; every tiered segment file ``T/partition={p}/{base:020}.parquet`` is
committed to it as it is (a blind append of one ``add`` action, no data rewritten), the
table partitioned by ``partition`` (the Hive directory value). Idempotency uses Delta
*application transactions*: each topic partition is one application (``app_id``) whose
version is the base offset of the last segment committed, written in the same atomic
commit as the ``add``. Files of a partition are committed in ascending base offsets (the
tier manifest's order), so a file is already in the table exactly when its base offset is
at most the partition's transaction version (``pending``): a crash after the commit and
a retry find it there; two committers of one partition at once collide on the
transaction and the loser re-reads and finds its file committed.

Everything here is data in, data out: the I/O lives in ``spu.storage.delta_table``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from deltalake import Schema as DeltaSchema

from spark_stream.errors import InvalidConfigError
from spark_stream.records import OFFSET_FIELD
from spu.storage.layout import segment_stem

__all__ = [
    "PARTITION_COLUMN",
    "PARTITION_FIELD",
    "TieredFile",
    "app_id",
    "file_path",
    "pending",
    "add_stats",
    "table_schema",
    "missing_columns",
    "delta_schema",
]

#: The partition column of every topic's Delta table: the Hive directory ``partition=N``.
PARTITION_COLUMN = "partition"
PARTITION_FIELD = pa.field(PARTITION_COLUMN, pa.int32(), nullable=False)
_APP_PREFIX = "fluvio-partition-"


@dataclass(frozen=True, slots=True)
class TieredFile:
    """One tiered Parquet file, as the Delta commit needs it.

    Attributes:
        partition: the topic partition (the Hive directory value).
        base_offset: the segment's base offset (names the file; the transaction version).
        records: rows in the file (``numRecords``).
        min_offset: smallest ``offset`` in the file.
        max_offset: largest ``offset`` in the file.
        size: the file's bytes.
    """

    partition: int
    base_offset: int
    records: int
    min_offset: int
    max_offset: int
    size: int

    @property
    def path(self) -> str:
        """The file's path relative to the table root (the LAYOUT of the tier)."""
        return file_path(self.partition, self.base_offset)


def file_path(partition: int, base_offset: int) -> str:
    """``partition={p}/{base_offset:020}.parquet``: a segment file relative to ``T``."""
    return f"{PARTITION_COLUMN}={partition}/{segment_stem(base_offset)}.parquet"


def app_id(partition: int) -> str:
    """The Delta application id whose version tracks ``partition``'s committed files."""
    return f"{_APP_PREFIX}{partition}"


def pending(files: Sequence[TieredFile], committed: int | None) -> list[TieredFile]:
    """The files a commit still has to add, in ascending base offsets.

    Args:
        files: one partition's tiered files (any order, repeats allowed).
        committed: the partition's transaction version in the table (``None``: none yet).

    Returns:
        The files whose base offset is above ``committed``, each once, sorted.
    """
    by_base = {f.base_offset: f for f in files}
    return [by_base[b] for b in sorted(by_base) if committed is None or b > committed]


def add_stats(file: TieredFile) -> str:
    """The ``stats`` JSON of an add action: record count and the ``offset`` bounds.

    Engines skip files by these (``where offset >= N``) and may answer ``count(*)`` from
    ``numRecords``, so they must be exact: they come from the file's own footer.
    """
    return json.dumps(
        {
            "numRecords": file.records,
            "minValues": {OFFSET_FIELD.name: file.min_offset},
            "maxValues": {OFFSET_FIELD.name: file.max_offset},
            "nullCount": {OFFSET_FIELD.name: 0},
        },
        separators=(",", ":"),
    )


def table_schema(file_schema: pa.Schema) -> pa.Schema:
    """The Delta table's schema for files of ``file_schema``: its columns, then ``partition``.

    ``file_schema`` is the Parquet file's (``offset`` then the topic's record columns);
    schema metadata is dropped (the offsets it names are per file).
    """
    fields = [f for f in file_schema.remove_metadata() if f.name != PARTITION_COLUMN]
    return pa.schema([*fields, PARTITION_FIELD])


def missing_columns(table: pa.Schema, wanted: pa.Schema) -> list[pa.Field]:
    """Columns of ``wanted`` that ``table`` lacks (a typed topic's evolution), in order.

    Raises:
        InvalidConfigError: a column the table has changed type, or a new column is not
            nullable (older files could not read it as null).
    """
    have = {f.name: f for f in table}
    added: list[pa.Field] = []
    for field in wanted:
        old = have.get(field.name)
        if old is None:
            if not field.nullable:
                raise InvalidConfigError(
                    f"new column {field.name!r} ({field.type}) is not nullable; the Delta "
                    "table's older files could not read it as null"
                )
            added.append(field)
        elif not _same_type(old.type, field.type):
            raise InvalidConfigError(
                f"column {field.name!r} is {field.type} in the new files but {old.type} in "
                "the Delta table"
            )
    return added


def _same_type(table: pa.DataType, file: pa.DataType) -> bool:
    # The table's schema comes back from Delta with its own spellings (large types,
    # field names of lists), so compare the way Delta would read the file.
    return bool(_delta_form(table) == _delta_form(file))


def _delta_form(kind: pa.DataType) -> str:
    return str(delta_schema(pa.schema([pa.field("c", kind)])))


def delta_schema(schema: pa.Schema) -> DeltaSchema:
    """``schema`` as a Delta schema.

    Raises:
        InvalidConfigError: a column type Delta has no type for (delta-rs's message).
    """
    try:
        return DeltaSchema.from_arrow(schema)
    except Exception as exc:  # delta-rs raises a bare Exception for an unmappable type
        cause = str(exc).splitlines()[0]
        raise InvalidConfigError(f"the columns cannot be a Delta table's: {cause}") from None
