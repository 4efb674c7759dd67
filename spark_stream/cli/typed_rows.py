"""JSON lines to a typed topic's Arrow table: what ``fluvio produce`` sends to a typed topic.

Each input line is one JSON object of the topic's user columns (the form ``consume``
prints): missing keys are null, times are ISO 8601 strings (or integers in the column's
unit), binary columns are base64 strings.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from spark_stream.errors import SchemaMismatchError

__all__ = ["rows_table"]


def rows_table(lines: Sequence[bytes], user: pa.Schema, key: bytes | None = None) -> pa.Table:
    """The table of ``lines`` (JSON objects) with ``user``'s columns, plus a ``key``.

    Raises:
        SchemaMismatchError: a line that is not a JSON object, a name the topic does not
            have, or a value of the wrong type (naming the line or column and the type).
    """
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SchemaMismatchError(f"line {number} is not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise SchemaMismatchError(f"line {number} is not a JSON object of the columns")
        unknown = [name for name in row if user.get_field_index(name) < 0]
        if unknown:
            raise SchemaMismatchError(
                f"line {number}: column(s) {', '.join(map(repr, unknown))} are not in the "
                f"topic's schema ({', '.join(user.names)})"
            )
        rows.append(row)
    columns = {field.name: _column(field, [r.get(field.name) for r in rows]) for field in user}
    if key is not None:
        columns["key"] = pa.array([key] * len(rows), pa.binary())
    return pa.table(columns)


def _column(field: pa.Field, values: list[Any]) -> pa.Array:
    kind = field.type
    try:
        if pa.types.is_timestamp(kind) and any(isinstance(v, str) for v in values):
            return pa.array(values, pa.string()).cast(kind)
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            return pa.array([None if v is None else base64.b64decode(v) for v in values], kind)
        return pa.array(values, kind)
    except (pa.ArrowException, TypeError, ValueError, binascii.Error) as exc:
        raise SchemaMismatchError(f"column {field.name!r} ({kind}): {exc}") from None
