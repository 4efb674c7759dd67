"""The bulk produce path, pure: Arrow data in, per-partition record batches out.

``normalize`` turns a user table or batch into record batches of ``RECORD_SCHEMA``
(casting string columns to binary, integer timestamps to ``timestamp[us, UTC]``, filling
a missing key, timestamp or headers column), or, for a typed topic, of its storage
schema (the user columns exactly as the topic types them, missing nullable ones null,
then key, timestamp and headers, filled the same way), ``split_by_partition`` routes rows with the
vectorised partitioner (one stable sort and one ``take``, then zero-copy slices), and
``chunk_rows`` cuts a partition's rows into frames of about ``batch_size`` bytes from
the column offsets. Nothing here loops over records in Python.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_stream.client.producer.accumulator import RECORD_OVERHEAD
from spark_stream.client.producer.partitioner import Partitioner
from spark_stream.client.timestamps import to_timestamp_us
from spark_stream.errors import (
    InvalidConfigError,
    RecordTooLargeError,
    SchemaMismatchError,
    UnknownPartitionError,
)
from spark_stream.models.topic_schema import TopicSchema, storage_schema
from spark_stream.records import HEADERS_TYPE, RECORD_SCHEMA, null_headers

__all__ = ["normalize", "split_by_partition", "chunk_rows", "row_sizes"]

_TS_TYPE = RECORD_SCHEMA.field("timestamp").type


def _binary_column(column: pa.Array, name: str) -> pa.Array:
    t = column.type
    if pa.types.is_binary(t):
        return column
    if pa.types.is_string(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return column.cast(pa.binary())
    if pa.types.is_binary_view(t) or pa.types.is_string_view(t):
        return column.cast(pa.binary())
    raise InvalidConfigError(f"column {name!r} must be binary or string, got {t}")


def _timestamp_column(column: pa.Array, name: str) -> pa.Array:
    t = column.type
    if pa.types.is_timestamp(t):
        return column.cast(_TS_TYPE)  # a naive timestamp is read as UTC
    if pa.types.is_integer(t):
        # µs since the epoch: check the extremes (one min/max pass), so a column of
        # nanoseconds or negative times fails here instead of being stored.
        lo_hi = pc.min_max(column)
        for bound in (lo_hi["min"].as_py(), lo_hi["max"].as_py()):
            if bound is not None:
                to_timestamp_us(bound, "us", f"column {name!r} (int64)")
        return column.cast(pa.int64()).cast(_TS_TYPE)
    raise InvalidConfigError(f"column {name!r} must be a timestamp or int64 µs, got {t}")


def _column(
    batch: pa.RecordBatch, name: str | None, default_name: str, *, required: bool
) -> pa.Array | None:
    if name is None:
        return None
    index = batch.schema.get_field_index(name)
    if index < 0:
        if required or name != default_name:
            raise InvalidConfigError(
                f"column {name!r} not found (columns: {', '.join(batch.schema.names)})"
            )
        return None
    return batch.column(index)


def normalize(
    data: pa.Table | pa.RecordBatch,
    *,
    key_column: str | None = "key",
    value_column: str = "value",
    timestamp_column: str | None = "timestamp",
    headers_column: str | None = "headers",
    now_us: int,
    schema: TopicSchema | None = None,
    ignore: tuple[str | None, ...] = (),
) -> Iterator[pa.RecordBatch]:
    """Yield ``data`` as record batches of ``RECORD_SCHEMA`` (one per input chunk).

    With a typed topic's ``schema`` the batches have its latest storage schema instead,
    and ``value_column`` is not used.

    Args:
        ignore: columns a typed batch may hold besides the topic's (a partition column).

    Raises:
        InvalidConfigError: a named column is missing or has an unusable type, or a
            value is null.
        SchemaMismatchError: a typed topic's column missing, retyped, null where the
            topic says not null, or a column the topic does not have.
    """
    if isinstance(data, pa.Table):
        batches = data.to_batches()
    elif isinstance(data, pa.RecordBatch):
        batches = [data]
    else:
        raise InvalidConfigError(
            f"send_batch takes a pyarrow Table or RecordBatch, got {type(data).__name__}"
        )
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        if schema is None:
            values = _column(batch, value_column, "value", required=True)
            assert values is not None
            if values.null_count:
                raise InvalidConfigError(f"column {value_column!r} has {values.null_count} nulls")
            data_columns = [_binary_column(values, value_column)]
        else:
            system = (key_column, timestamp_column, headers_column, *ignore)
            data_columns = _user_columns(batch, schema, {c for c in system if c})
        keys = _column(batch, key_column, "key", required=False)
        ts = _column(batch, timestamp_column, "timestamp", required=False)
        hdrs = _column(batch, headers_column, "headers", required=False)
        key_arr = (
            pa.nulls(n, pa.binary()) if keys is None else _binary_column(keys, str(key_column))
        )
        if ts is None:
            ts_arr = pa.array(np.full(n, now_us, dtype=np.int64)).cast(_TS_TYPE)
        else:
            ts_arr = _timestamp_column(ts, str(timestamp_column))
        if hdrs is None:
            hdr_arr = null_headers(n)
        elif hdrs.type == HEADERS_TYPE:
            hdr_arr = hdrs
        else:
            try:
                hdr_arr = hdrs.cast(HEADERS_TYPE)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise InvalidConfigError(
                    f"column {headers_column!r} must be {HEADERS_TYPE}, got {hdrs.type}"
                ) from exc
        if schema is None:
            yield pa.RecordBatch.from_arrays(
                [key_arr, *data_columns, ts_arr, hdr_arr], schema=RECORD_SCHEMA
            )
        else:
            yield pa.RecordBatch.from_arrays(
                [*data_columns, key_arr, ts_arr, hdr_arr],
                schema=storage_schema(schema.user_schema()),
            )


def _user_columns(batch: pa.RecordBatch, schema: TopicSchema, system: set[str]) -> list[pa.Array]:
    """The typed topic's user columns from ``batch``, checked, in the topic's order."""
    user = schema.user_schema()
    where = f"schema version {schema.version}"
    extra = [n for n in batch.schema.names if user.get_field_index(n) < 0 and n not in system]
    if extra:
        raise SchemaMismatchError(
            f"column(s) {', '.join(map(repr, extra))} are not in the topic's {where} "
            f"({', '.join(c.name + ' ' + c.type for c in schema.columns)})"
        )
    out: list[pa.Array] = []
    for field in user:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            if not field.nullable:
                raise SchemaMismatchError(
                    f"column {field.name!r} ({field.type}, not null) is missing; the topic's "
                    f"{where} requires it"
                )
            out.append(pa.nulls(batch.num_rows, field.type))
            continue
        column = batch.column(index)
        if column.type != field.type:
            raise SchemaMismatchError(
                f"column {field.name!r} is {column.type}, the topic's {where} says {field.type}"
            )
        if column.null_count and not field.nullable:
            raise SchemaMismatchError(
                f"column {field.name!r} has {column.null_count} nulls, the topic's {where} "
                "says not null"
            )
        out.append(column)
    return out


def split_by_partition(
    batch: pa.RecordBatch,
    num_partitions: int,
    partitioner: Partitioner,
    *,
    partition: int | None = None,
    partition_ids: pa.Array | None = None,
) -> list[tuple[int, pa.RecordBatch]]:
    """Route the rows of a ``RECORD_SCHEMA`` batch to partitions, keeping row order.

    Args:
        partition: every row goes here.
        partition_ids: an integer column giving each row's partition.

    Raises:
        UnknownPartitionError: a partition outside ``0 .. num_partitions - 1``.
    """
    n = batch.num_rows
    if partition is not None:
        _check_partition(partition, num_partitions)
        return [(partition, batch)]
    if partition_ids is not None:
        if not pa.types.is_integer(partition_ids.type) or partition_ids.null_count:
            raise InvalidConfigError("partition column must be integers without nulls")
        parts = np.asarray(partition_ids.to_numpy(zero_copy_only=False), dtype=np.int64)
        if n and (parts.min() < 0 or parts.max() >= num_partitions):
            raise UnknownPartitionError(
                f"partition column holds values outside 0..{num_partitions - 1}"
            )
    else:
        keys = batch.column(batch.schema.get_field_index("key"))
        keys_or_none = None if keys.null_count == n else keys
        parts = partitioner.partitions(keys_or_none, n, num_partitions).astype(np.int64)
    if n == 0:
        return []
    first = int(parts[0])
    if bool((parts == first).all()):
        return [(first, batch)]
    order = np.argsort(parts, kind="stable")
    counts = np.bincount(parts, minlength=num_partitions)
    ordered = batch.take(pa.array(order))
    out: list[tuple[int, pa.RecordBatch]] = []
    start = 0
    for part, count in enumerate(counts.tolist()):
        if count:
            out.append((part, ordered.slice(start, count)))
            start += count
    return out


def row_sizes(batch: pa.RecordBatch) -> np.ndarray:
    """Approximate encoded bytes per row (key + value + fixed overhead), as int64.

    A typed batch has no value column: its bytes are spread evenly over its rows.
    """
    sizes = np.full(batch.num_rows, RECORD_OVERHEAD, dtype=np.int64)
    if batch.schema.names[:2] != ["key", "value"]:
        return sizes + (batch.nbytes // max(batch.num_rows, 1))
    for index in (0, 1):
        column = batch.column(index)
        _, offsets_buf, _ = column.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int32)[
            column.offset : column.offset + len(column) + 1
        ]
        sizes += np.diff(offsets).astype(np.int64)
    return sizes


def chunk_rows(batch: pa.RecordBatch, batch_size: int, max_bytes: int) -> list[pa.RecordBatch]:
    """Cut ``batch`` into consecutive slices of about ``batch_size`` bytes each.

    Raises:
        RecordTooLargeError: one row alone passes ``max_bytes``.
    """
    sizes = row_sizes(batch)
    if sizes.size and int(sizes.max()) > max_bytes:
        raise RecordTooLargeError(
            f"a record of {int(sizes.max())} bytes passes max_request_bytes {max_bytes}"
        )
    cumulative = np.cumsum(sizes)
    total = int(cumulative[-1]) if cumulative.size else 0
    if total <= batch_size:
        return [batch]
    marks = np.arange(batch_size, total, batch_size, dtype=np.int64)
    cuts = np.unique(np.searchsorted(cumulative, marks, side="right"))
    bounds = [0, *[int(c) for c in cuts if 0 < c < batch.num_rows], batch.num_rows]
    return [batch.slice(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _check_partition(partition: int, num_partitions: int) -> None:
    if not 0 <= partition < num_partitions:
        raise UnknownPartitionError(f"partition {partition} is outside 0..{num_partitions - 1}")
