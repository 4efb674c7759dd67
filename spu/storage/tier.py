"""Writing a sealed segment as a Parquet file into a tier directory given by an fsspec URL.

The file is ``{base_offset:020}.parquet`` with the ``offset`` column materialised in front
of the topic's columns, so ``pyarrow.parquet.read_table`` (or Spark) reads it as is. The
segment's offset range is also stored in the schema metadata. The file is written under a
temporary name and moved into place, so a reader never sees a half-written file
(``spark_stream.tier.store.write_atomic``). The SPU's tiering (``spu.tiering``) names the
file itself (``file_url``), in the topic tier's layout (``spark_stream.tier.layout``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from spark_stream.records import OFFSET_FIELD, decode_frames
from spark_stream.tier.store import write_atomic
from spu.storage.layout import segment_stem

__all__ = ["PARQUET_SUFFIX", "tier_path", "write_parquet"]

PARQUET_SUFFIX = ".parquet"


def tier_path(tier_url: str | Path, base_offset: int) -> str:
    """The URL of the Parquet file of the segment at ``base_offset`` in ``tier_url``."""
    return f"{str(tier_url).rstrip('/')}/{segment_stem(base_offset)}{PARQUET_SUFFIX}"


def write_parquet(
    frames: memoryview,
    *,
    base_offset: int,
    next_offset: int,
    schema: pa.Schema,
    tier_url: str | Path,
    compression: str = "zstd",
    file_url: str | None = None,
) -> str:
    """Decode a segment's frames (crc and Arrow validation on) and write them as Parquet.

    Args:
        frames: the segment's frame bytes.
        base_offset: the segment's base offset (names the file).
        next_offset: offset after the segment's last record (stored as metadata).
        schema: the topic's schema.
        tier_url: fsspec URL (or local path) of the tier directory; created if missing.
        compression: Parquet column compression.
        file_url: write exactly this file instead of ``tier_path(tier_url, base_offset)``.

    Returns:
        The URL of the written file.

    Raises:
        CorruptFrameError: a frame fails its crc or Arrow validation.
        StorageError: the file system refused the write.
    """
    out_schema = pa.schema([OFFSET_FIELD, *schema]).with_metadata(
        {"fluvio.base_offset": str(base_offset), "fluvio.next_offset": str(next_offset)}
    )
    batches = decode_frames(frames, schema=schema, with_offsets=True)
    table = pa.Table.from_batches(batches, schema=out_schema.remove_metadata())
    table = table.replace_schema_metadata(out_schema.metadata)
    url = file_url or tier_path(tier_url, base_offset)
    write_atomic(url, lambda sink: pq.write_table(table, sink, compression=compression))
    return url
