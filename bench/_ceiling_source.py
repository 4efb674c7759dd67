"""The ceiling of Spark's Python data source path: a source that yields ready Arrow batches.

``fluvio_ceiling`` has exactly the output schema of ``format("fluvio")`` and yields
batches of the same shape (100-byte values, null keys) that it builds once per worker
process and keeps in memory, so a read measures only what Spark's Python data source
machinery costs (pickling partitions, the Python worker, Arrow IPC to the JVM), not any
storage or network. ``format("fluvio")`` can at best match it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from datasource.schema import arrow_schema, spark_schema

__all__ = ["CeilingDataSource", "build_batch"]


@dataclass(frozen=True)
class CeilingPartition(InputPartition):
    """``records`` rows in batches of ``batch_rows``, as one fluvio partition would give."""

    index: int
    records: int
    batch_rows: int
    value_bytes: int


def build_batch(rows: int, value_bytes: int, partition: int, first_offset: int) -> pa.RecordBatch:
    """One output-schema batch of ``rows`` records with ``value_bytes``-byte values."""
    offsets = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * value_bytes).tobytes())
    data = pa.py_buffer(np.full(rows * value_bytes, ord("x"), dtype=np.uint8).tobytes())
    value = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, data])
    ts = pa.array(np.full(rows, 1_700_000_000_000_000, dtype=np.int64)).cast(
        pa.timestamp("us", tz="UTC")
    )
    columns = [
        pa.nulls(rows, pa.binary()),
        value,
        pa.repeat(pa.scalar("bench", pa.string()), rows),
        pa.array(np.full(rows, partition, dtype=np.int32)),
        pa.array(np.arange(first_offset, first_offset + rows, dtype=np.int64)),
        ts,
        pa.array(np.zeros(rows, dtype=np.int32)),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(False))


@cache
def _batches(part: CeilingPartition) -> tuple[pa.RecordBatch, ...]:
    out = []
    for start in range(0, part.records, part.batch_rows):
        rows = min(part.batch_rows, part.records - start)
        out.append(build_batch(rows, part.value_bytes, part.index, start))
    return tuple(out)


class CeilingReader(DataSourceReader):
    """Plans ``partitions`` partitions of ``records / partitions`` rows each."""

    def __init__(self, records: int, partitions: int, batch_rows: int, value_bytes: int) -> None:
        self.records = records
        self.partitions_count = partitions
        self.batch_rows = batch_rows
        self.value_bytes = value_bytes

    def partitions(self) -> list[CeilingPartition]:
        """Equal shares of the records."""
        share = self.records // self.partitions_count
        return [
            CeilingPartition(i, share, self.batch_rows, self.value_bytes)
            for i in range(self.partitions_count)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Yield the cached batches of this partition."""
        assert isinstance(partition, CeilingPartition)
        return iter(_batches(partition))


class CeilingDataSource(DataSource):
    """``format("fluvio_ceiling")``; options ``records``, ``partitions``, ``batchRows``,
    ``valueBytes``."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "fluvio_ceiling"

    def schema(self) -> StructType:
        """The same schema as ``format("fluvio")``."""
        return spark_schema(False)

    def reader(self, schema: StructType) -> CeilingReader:
        """A reader over in-memory batches."""
        return CeilingReader(
            int(self.options.get("records", 1_000_000)),
            int(self.options.get("partitions", 4)),
            int(self.options.get("batchRows", 10_000)),
            int(self.options.get("valueBytes", 100)),
        )
