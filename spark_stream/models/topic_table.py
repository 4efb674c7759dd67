"""A topic's table setting (``--table delta``) and the column types a Delta table keeps.

With ``table: delta`` every tiered Parquet file of the topic is also committed to a Delta
table at the root of the topic's tier (``spu.storage.delta_table``). A typed topic's
columns must then have Delta types that hold their values as they are: the check runs
when the topic is created and when its schema evolves, so a commit never meets a column
Delta cannot hold.
"""

from __future__ import annotations

import pyarrow as pa

from spark_stream.errors import InvalidConfigError
from spark_stream.models._base import CaseInsensitiveEnum

__all__ = ["TableFormat", "check_delta_types"]


class TableFormat(CaseInsensitiveEnum):
    """The table format a topic's tiered files are committed to (``None``: no table)."""

    DELTA = "delta"


def check_delta_types(schema: pa.Schema) -> pa.Schema:
    """``schema`` if every column has a Delta Lake type that keeps its values.

    Delta has no unsigned integers and stores timestamps in microseconds (nanoseconds need
    a table feature few readers have), so those are refused for a ``--table delta`` topic
    rather than silently changed.

    Raises:
        InvalidConfigError: names the first column that has no faithful Delta type.
    """
    for field in schema:
        problem = _type_problem(field.type)
        if problem:
            raise InvalidConfigError(
                f"column {field.name!r} ({field.type}) cannot be in a Delta table: {problem}"
            )
    return schema


def _type_problem(kind: pa.DataType) -> str | None:
    if pa.types.is_unsigned_integer(kind):
        return "Delta has no unsigned integers (use a signed type one size up)"
    if pa.types.is_timestamp(kind) and kind.unit != "us":
        return "Delta timestamps are microseconds (use timestamp[us] or timestamp[us, tz=UTC])"
    if pa.types.is_time(kind) or pa.types.is_duration(kind) or pa.types.is_date64(kind):
        return "Delta has no such type"
    for i in range(kind.num_fields):
        inner = _type_problem(kind.field(i).type)
        if inner:
            return inner
    return None
