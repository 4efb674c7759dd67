"""A typed topic's rows as JSON: what ``Record.value`` holds and what ``consume`` prints.

A typed topic's batches have no ``value`` column; its user columns are the value. Each
row becomes one JSON object of those columns, with times and dates in ISO 8601, decimals
as strings and binary as base64 (JSON has no bytes).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

import pyarrow as pa

__all__ = ["SYSTEM_COLUMNS", "user_columns", "rows_json"]

#: Columns a consumer batch of a typed topic holds besides the user columns.
SYSTEM_COLUMNS = frozenset({"topic", "partition", "offset", "key", "timestamp", "headers"})


def user_columns(batch: pa.RecordBatch) -> list[str]:
    """Names of the user columns of a typed consumer batch, in order."""
    return [name for name in batch.schema.names if name not in SYSTEM_COLUMNS]


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | dt.timedelta):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def rows_json(batch: pa.RecordBatch) -> list[bytes]:
    """Each row's user columns as one compact JSON object (UTF-8 bytes)."""
    names = user_columns(batch)
    rows = batch.select(names).to_pylist()
    return [
        json.dumps(row, default=_plain, ensure_ascii=False, separators=(",", ":")).encode()
        for row in rows
    ]
