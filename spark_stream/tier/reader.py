"""Records of an offset range read back from a partition's tier, as Arrow batches.

The one tier reader of the user side (the client's consumers and the Python Spark
source): ``covering_entries`` plans which files hold the range, this module reads them
(column-pruned to what the caller decodes) and cuts the first and last to the range.
Every batch has the materialised ``offset`` column first, then ``schema``'s columns; a
file written under an older schema version reads the columns added since as null.
"""

from __future__ import annotations

from collections.abc import Iterator

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from spark_stream.errors import CorruptFrameError, StorageError
from spark_stream.records import OFFSET_FIELD, widen
from spark_stream.tier.layout import join
from spark_stream.tier.manifest import TierEntry, TierManifest
from spark_stream.tier.plan import covering_entries

__all__ = ["read_entry", "read_tier_batches"]


def read_entry(tier_url: str, entry: TierEntry, schema: pa.Schema) -> pa.Table:
    """The whole file of ``entry``: ``offset`` then ``schema``'s columns.

    Raises:
        StorageError: the file cannot be read.
        CorruptFrameError: it does not hold the entry's offsets, or a column has another
            type than ``schema`` says.
    """
    url = join(tier_url, entry.file)
    try:
        fs, path = fsspec.core.url_to_fs(url)
        with fs.open(path, "rb") as source:
            table = pq.read_table(source)
    except (OSError, pa.ArrowException) as exc:
        raise StorageError(f"cannot read {url}: {exc}") from exc
    if table.num_rows != entry.records:
        raise CorruptFrameError(
            f"{url} has {table.num_rows} rows, its manifest says {entry.records}"
        )
    target = pa.schema([OFFSET_FIELD, *schema])
    try:
        batches = [widen(b, target) for b in table.combine_chunks().to_batches()]
    except ValueError as exc:
        raise CorruptFrameError(f"{url}: {exc}") from exc
    return pa.Table.from_batches(batches, schema=target)


def read_tier_batches(
    tier_url: str, manifest: TierManifest, start: int, end: int, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """Exactly the records ``[start, end)`` from the tier, in offset order.

    Args:
        tier_url: the topic's tier directory.
        manifest: the partition's manifest (``store.load_manifest``).
        start: first offset wanted.
        end: offset after the last one wanted.
        schema: the record columns to return after ``offset`` (``RECORD_SCHEMA`` for an
            untyped topic, the latest storage schema for a typed one).

    Raises:
        OffsetOutOfRangeError: the tier does not hold the range.
        StorageError, CorruptFrameError: as ``read_entry``.
    """
    for entry in covering_entries(manifest, start, end):
        table = read_entry(tier_url, entry, schema)
        lo = max(0, start - entry.base_offset)
        hi = min(entry.records, end - entry.base_offset)
        for batch in table.slice(lo, hi - lo).to_batches():
            if batch.num_rows:
                yield batch
