"""The schema of a typed topic: Arrow user columns with a version, and how they evolve.

Theory of operation. A typed topic's spec carries a ``TopicSchema``: the Arrow schema of
its *user columns* (``arrow``: the Arrow IPC schema message, base64, the one source of
truth, which Python and Java both read), the same columns described for humans
(``columns``: ``[{name, type, nullable}]``, derived and checked to agree), its
``version`` and ``history``, the number of user columns of each version. Evolution only
appends nullable columns, so version ``v``'s columns are the first ``history[v - 1]``
columns of the latest schema: every version is known from the latest one.

Stored frames of a typed topic hold the user columns of the producer's version followed
by the system columns ``key``, ``timestamp``, ``headers`` (``RECORD_SCHEMA`` without
``value``): ``storage_schema`` builds that schema for a version. The batch frame header
names the version (``records.BatchHeader.schema_version``).

The JSON description format (``fluvio topic create T --schema FILE``)::

    [{"name": "id", "type": "int64", "nullable": false},
     {"name": "name", "type": "string"}]

``type`` is one of ``SCALAR_TYPES``, ``timestamp[UNIT]`` or ``timestamp[UNIT, tz=ZONE]``
(UNIT: s, ms, us, ns), or ``decimal128(P, S)``; ``nullable`` defaults to true.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Self

import pyarrow as pa
import pyarrow.ipc as ipc
from pydantic import Field, model_validator

from spark_stream.errors import InvalidConfigError, SchemaMismatchError
from spark_stream.models._base import FrozenModel
from spark_stream.records import RECORD_SCHEMA

__all__ = [
    "SCALAR_TYPES",
    "RESERVED_COLUMNS",
    "SYSTEM_FIELDS",
    "SchemaColumn",
    "TopicSchema",
    "parse_type",
    "schema_from_json",
    "schema_from_file",
    "storage_schema",
    "check_columns",
    "encode_arrow",
    "decode_arrow",
    "check_user_schema",
    "describe_fields",
    "untyped_with_records",
]

#: Type names of the JSON description, as Arrow prints them (plus a few aliases).
SCALAR_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "date32[day]": pa.date32(),
}
_ALIASES = {
    "boolean": "bool",
    "float32": "float",
    "float64": "double",
    "utf8": "string",
    "date32": "date32[day]",
}
_TIMESTAMP = re.compile(r"^timestamp\[(s|ms|us|ns)(?:, tz=([^\]]+))?\]$")
_DECIMAL = re.compile(r"^decimal128\((\d+), ?(\d+)\)$")

#: Columns a typed topic adds itself (stored, or materialised by readers), and ``value``
#: (the column of untyped records, so a table with one is never taken for typed rows):
#: user columns must not use these names.
RESERVED_COLUMNS = frozenset(
    {"key", "value", "timestamp", "headers", "offset", "topic", "partition"}
)

#: The system columns stored after the user columns of every typed frame.
SYSTEM_FIELDS: tuple[pa.Field, ...] = tuple(
    RECORD_SCHEMA.field(name) for name in ("key", "timestamp", "headers")
)


def parse_type(name: str) -> pa.DataType:
    """The Arrow type a JSON description names.

    Raises:
        InvalidConfigError: an unknown type name (the message lists the known ones).
    """
    text = _ALIASES.get(name.strip(), name.strip())
    if text in SCALAR_TYPES:
        return SCALAR_TYPES[text]
    if match := _TIMESTAMP.match(text):
        return pa.timestamp(match.group(1), tz=match.group(2))
    if match := _DECIMAL.match(text):
        try:
            return pa.decimal128(int(match.group(1)), int(match.group(2)))
        except (ValueError, pa.ArrowInvalid) as exc:
            raise InvalidConfigError(f"bad decimal type {name!r}: {exc}") from None
    known = ", ".join([*SCALAR_TYPES, "timestamp[us]", "timestamp[us, tz=UTC]", "decimal128(P, S)"])
    raise InvalidConfigError(f"unknown column type {name!r}; known types: {known}")


def schema_from_json(text: str, source: str = "the schema") -> pa.Schema:
    """Parse a JSON description ``[{"name", "type", "nullable"?}, ...]`` to an Arrow schema.

    Raises:
        InvalidConfigError: not JSON, not a list of columns, a bad name or type.
    """
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidConfigError(f"{source} is not JSON: {exc}") from None
    if not isinstance(rows, list) or not rows:
        raise InvalidConfigError(
            f'{source} must be a non-empty JSON list of {{"name", "type", "nullable"}} objects'
        )
    fields: list[pa.Field] = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) - {"name", "type", "nullable"}:
            raise InvalidConfigError(
                f'{source}: column {index} must be an object with "name", "type" and '
                f'optionally "nullable", got {row!r}'
            )
        name, kind, nullable = row.get("name"), row.get("type"), row.get("nullable", True)
        if not isinstance(name, str) or not isinstance(kind, str):
            raise InvalidConfigError(f"{source}: column {index} needs a string name and type")
        if not isinstance(nullable, bool):
            raise InvalidConfigError(f"{source}: column {name!r}: nullable must be true/false")
        fields.append(pa.field(name, parse_type(kind), nullable=nullable))
    return check_user_schema(pa.schema(fields))


def schema_from_file(path: str | Path) -> pa.Schema:
    """The user schema a file describes: JSON (``.json``), or a Parquet or Arrow file's own.

    Raises:
        InvalidConfigError: the file is missing, unreadable, or its schema is not usable.
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidConfigError(f"cannot read schema file {str(file)!r}: {exc}") from None
    if data[:4] == b"PAR1":
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(pa.BufferReader(data))
        except (pa.ArrowException, OSError) as exc:
            raise InvalidConfigError(f"{file} is not a readable Parquet file: {exc}") from None
    elif data[:6] == b"ARROW1" or data[:4] == b"\xff\xff\xff\xff":
        try:
            reader = ipc.open_file(data) if data[:6] == b"ARROW1" else ipc.open_stream(data)
            schema = reader.schema
        except (pa.ArrowException, OSError) as exc:
            raise InvalidConfigError(f"{file} is not a readable Arrow file: {exc}") from None
    else:
        return schema_from_json(data.decode("utf-8", "replace"), str(file))
    return check_user_schema(schema.remove_metadata())


def untyped_with_records(topic: str) -> str:
    """Why an untyped topic that holds records cannot take a schema (the SC's and both
    Spark writers' message)."""
    return (
        f"topic {topic!r} is untyped and holds records: a schema would make them "
        "unreadable (they have no columns); write typed rows to a new topic created "
        "with a schema, or to an empty one"
    )


def check_user_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` if it can be a typed topic's user columns.

    Raises:
        InvalidConfigError: no columns, duplicate or reserved names, dictionary types.
    """
    if len(schema) == 0:
        raise InvalidConfigError("a topic schema needs at least one column")
    seen: set[str] = set()
    for field in schema:
        if not field.name:
            raise InvalidConfigError("a schema column needs a name")
        if field.name in seen:
            raise InvalidConfigError(f"column {field.name!r} appears twice in the schema")
        seen.add(field.name)
        if field.name in RESERVED_COLUMNS:
            raise InvalidConfigError(
                f"column {field.name!r} is reserved (a typed topic adds "
                f"{', '.join(sorted(RESERVED_COLUMNS))} itself)"
            )
        if _has_dictionary(field.type):
            raise InvalidConfigError(
                f"column {field.name!r} is dictionary-encoded ({field.type}); use its value type"
            )
    return schema


def _has_dictionary(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        return True
    return any(_has_dictionary(kind.field(i).type) for i in range(kind.num_fields))


class SchemaColumn(FrozenModel):
    """One user column as humans read it: name, Arrow type name, nullability."""

    name: str
    type: str
    nullable: bool = True


class TopicSchema(FrozenModel):
    """A typed topic's user columns, with the version and the history of their evolution.

    Build one with ``TopicSchema.of(schema)``; ``evolve`` makes the next version.
    """

    version: int = Field(default=1, ge=1, le=65535)
    arrow: str = Field(min_length=1)
    columns: tuple[SchemaColumn, ...] = ()
    history: tuple[int, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        schema = self.arrow_schema  # raises ValueError when it does not decode
        try:
            check_user_schema(schema)
        except InvalidConfigError as exc:
            raise ValueError(str(exc)) from None
        if self.columns != _describe(schema):
            raise ValueError("columns must describe the arrow schema (they are derived from it)")
        if len(self.history) != self.version:
            raise ValueError(f"history must list {self.version} column counts, one a version")
        if list(self.history) != sorted(self.history) or self.history[-1] != len(schema):
            raise ValueError("history must grow to the schema's column count")
        return self

    @classmethod
    def of(cls, schema: pa.Schema) -> TopicSchema:
        """Version 1 of a topic schema of ``schema``'s columns (metadata dropped).

        Raises:
            InvalidConfigError: the schema cannot be a topic's (see ``check_user_schema``).
        """
        schema = check_user_schema(schema.remove_metadata())
        return cls(
            version=1,
            arrow=_encode(schema),
            columns=_describe(schema),
            history=(len(schema),),
        )

    @property
    def arrow_schema(self) -> pa.Schema:
        """The latest user columns as an Arrow schema."""
        return _decode(self.arrow)

    def user_schema(self, version: int | None = None) -> pa.Schema:
        """The user columns of ``version`` (default: the latest).

        Raises:
            InvalidConfigError: a version this schema never had.
        """
        version = self.version if version is None else version
        if not 1 <= version <= self.version:
            raise InvalidConfigError(f"schema version {version} is not 1..{self.version}")
        schema = self.arrow_schema
        return pa.schema(list(schema)[: self.history[version - 1]])

    def evolve(self, schema: pa.Schema) -> TopicSchema:
        """The next version, if ``schema`` only appends nullable columns to this one.

        Raises:
            InvalidConfigError: a column removed, renamed, retyped, reordered or made
                non-nullable, a new column that is not nullable, or nothing added.
        """
        schema = check_user_schema(schema.remove_metadata())
        old = list(self.arrow_schema)
        new = list(schema)
        for index, field in enumerate(old):
            if index >= len(new):
                raise InvalidConfigError(
                    f"column {field.name!r} ({field.type}) is missing: columns can only be "
                    "added, never removed"
                )
            if not new[index].equals(field):
                raise InvalidConfigError(
                    f"column {index} is {_show(new[index])}, version {self.version} has "
                    f"{_show(field)}: existing columns keep their name, type, nullability "
                    "and place; new nullable columns go after them"
                )
        added = new[len(old) :]
        if not added:
            raise InvalidConfigError(
                f"the schema adds no column to version {self.version}; nothing to change"
            )
        for field in added:
            if not field.nullable:
                raise InvalidConfigError(
                    f"new column {_show(field)} must be nullable: frames written before "
                    "it read it as null"
                )
        return TopicSchema(
            version=self.version + 1,
            arrow=_encode(schema),
            columns=_describe(schema),
            history=(*self.history, len(schema)),
        )

    def describe(self) -> list[dict[str, Any]]:
        """The JSON description of the latest columns (the ``--schema`` file format)."""
        return [c.model_dump() for c in self.columns]


def storage_schema(user: pa.Schema) -> pa.Schema:
    """The schema of a typed frame: the user columns, then ``key``, ``timestamp``,
    ``headers``."""
    return _storage_schema(user)


@lru_cache(maxsize=64)
def _storage_schema(user: pa.Schema) -> pa.Schema:
    return pa.schema([*user, *SYSTEM_FIELDS])


def encode_arrow(schema: pa.Schema) -> str:
    """``schema`` as ``TopicSchema.arrow`` holds it: its Arrow IPC message, base64."""
    return _encode(schema)


def decode_arrow(text: str) -> pa.Schema:
    """The Arrow schema of a base64 IPC schema message.

    Raises:
        InvalidConfigError: ``text`` is not one.
    """
    try:
        return _decode(text)
    except ValueError as exc:
        raise InvalidConfigError(str(exc)) from None


def _show(field: pa.Field) -> str:
    return f"{field.name!r} ({field.type}{'' if field.nullable else ', not null'})"


def _describe(schema: pa.Schema) -> tuple[SchemaColumn, ...]:
    return tuple(SchemaColumn(name=f.name, type=str(f.type), nullable=f.nullable) for f in schema)


def _encode(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


@lru_cache(maxsize=256)
def _decode(text: str) -> pa.Schema:
    try:
        return ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
    except (ValueError, pa.ArrowException) as exc:
        raise ValueError(f"arrow is not a base64 Arrow IPC schema: {exc}") from None


def describe_fields(fields: Sequence[pa.Field]) -> str:
    """``name (type)`` of each field, comma-separated, for error messages."""
    return ", ".join(_show(f) for f in fields)


def check_columns(expected: pa.Schema, actual: pa.Schema, where: str) -> None:
    """Refuse ``actual`` unless it has exactly ``expected``'s columns, in order.

    Metadata is ignored. The message names the first column that differs and both types.

    Raises:
        SchemaMismatchError: a column missing, extra, renamed, retyped, or nullable where
            the topic says not null.
    """
    if actual.equals(expected, check_metadata=False):
        return
    names = set(actual.names)
    for index, field in enumerate(expected):
        if field.name not in names:
            raise SchemaMismatchError(
                f"{where}: column {_show(field)} is missing (the batch has "
                f"{', '.join(actual.names)})"
            )
        got = actual.field(field.name)
        if got.type != field.type:
            raise SchemaMismatchError(
                f"{where}: column {field.name!r} is {got.type}, the topic's schema says "
                f"{field.type}"
            )
        if got.nullable and not field.nullable:
            raise SchemaMismatchError(
                f"{where}: column {field.name!r} is nullable, the topic's schema says not null"
            )
        if actual.get_field_index(field.name) != index:
            raise SchemaMismatchError(
                f"{where}: column {field.name!r} is at position "
                f"{actual.get_field_index(field.name)}, the topic's schema has it at {index}"
            )
    extra = [name for name in actual.names if expected.get_field_index(name) < 0]
    raise SchemaMismatchError(
        f"{where}: column(s) {', '.join(map(repr, extra)) or '?'} are not in the topic's "
        f"schema ({describe_fields(list(expected))})"
    )
