"""The typed topic schema: the JSON description, files, the spec form, evolution rules."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_stream.errors import InvalidConfigError, SchemaMismatchError
from spark_stream.models import TopicSpec
from spark_stream.models.topic_schema import (
    TopicSchema,
    check_columns,
    parse_type,
    schema_from_file,
    schema_from_json,
    storage_schema,
)

USER = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("int64", pa.int64()),
        ("string", pa.string()),
        ("utf8", pa.string()),
        ("double", pa.float64()),
        ("bool", pa.bool_()),
        ("binary", pa.binary()),
        ("date32", pa.date32()),
        ("timestamp[us]", pa.timestamp("us")),
        ("timestamp[ms, tz=UTC]", pa.timestamp("ms", tz="UTC")),
        ("decimal128(10, 2)", pa.decimal128(10, 2)),
    ],
)
def test_json_type_names(name: str, kind: pa.DataType) -> None:
    assert parse_type(name) == kind
    assert parse_type(str(kind)) == kind  # what `columns` shows parses back


def test_the_json_description_and_its_spec_form_round_trip() -> None:
    text = (
        '[{"name": "id", "type": "int64", "nullable": false}, {"name": "name", "type": "string"}]'
    )
    schema = TopicSchema.of(schema_from_json(text))
    assert schema.arrow_schema.equals(USER)
    assert schema.describe() == [
        {"name": "id", "type": "int64", "nullable": False},
        {"name": "name", "type": "string", "nullable": True},
    ]
    spec = TopicSpec(topic_schema=schema)
    assert TopicSpec.from_dict(spec.to_dict()) == spec
    assert spec.to_dict()["topicSchema"]["history"] == [2]


def test_a_spec_whose_columns_disagree_with_its_arrow_is_refused() -> None:
    data = TopicSchema.of(USER).to_dict()
    data["columns"][0]["type"] = "string"
    with pytest.raises(InvalidConfigError, match="columns must describe the arrow schema"):
        TopicSpec.from_dict({"topicSchema": data})


def test_parquet_and_arrow_files_give_their_schema(tmp_path: Path) -> None:
    table = pa.table({"id": pa.array([1], pa.int64()), "name": ["x"]})
    pq.write_table(table, tmp_path / "t.parquet")
    assert schema_from_file(tmp_path / "t.parquet").names == ["id", "name"]
    with (
        pa.OSFile(str(tmp_path / "t.arrow"), "wb") as sink,
        pa.ipc.new_file(sink, table.schema) as writer,
    ):
        writer.write_table(table)
    assert schema_from_file(tmp_path / "t.arrow").equals(table.schema)


def test_evolution_appends_nullable_columns_only() -> None:
    v1 = TopicSchema.of(USER)
    v2 = v1.evolve(USER.append(pa.field("score", pa.float64())))
    assert (v2.version, v2.history) == (2, (2, 3))
    assert v2.user_schema(1).equals(USER)
    assert v2.user_schema().names == ["id", "name", "score"]
    with pytest.raises(InvalidConfigError, match="must be nullable"):
        v1.evolve(USER.append(pa.field("x", pa.int8(), nullable=False)))
    with pytest.raises(InvalidConfigError, match="new nullable columns go after them"):
        v1.evolve(pa.schema([pa.field("x", pa.int8()), *USER]))
    with pytest.raises(InvalidConfigError, match="version 3 is not 1..2"):
        v2.user_schema(3)


def test_check_columns_names_the_column_and_types() -> None:
    expected = storage_schema(USER)
    check_columns(expected, expected, "b")
    other = storage_schema(pa.schema([USER.field("id"), pa.field("name", pa.large_string())]))
    with pytest.raises(SchemaMismatchError, match="b: column 'name' is large_string.*string"):
        check_columns(expected, other, "b")
    nullable_id = storage_schema(pa.schema([pa.field("id", pa.int64()), USER.field("name")]))
    with pytest.raises(SchemaMismatchError, match="'id' is nullable, the topic's schema says not"):
        check_columns(expected, nullable_id, "b")
