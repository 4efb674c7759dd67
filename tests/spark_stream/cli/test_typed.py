"""Typed topics through the ``fluvio`` CLI (in process, against a real cluster)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_stream.cli import main
from spark_stream.local.cluster import LocalCluster
from tests.integration.helpers import running_cluster, unique

pytestmark = pytest.mark.integration

COLUMNS = [
    {"name": "id", "type": "int64", "nullable": False},
    {"name": "name", "type": "string"},
    {"name": "at", "type": "timestamp[us, tz=UTC]"},
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster"), spus=1) as running:
        yield running


def cli(
    cluster: LocalCluster,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    stdin: str = "",
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> tuple[int, str, str]:
    if monkeypatch is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(["--endpoint", cluster.endpoint, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_create_produce_consume_a_typed_topic(
    cluster: LocalCluster,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = unique()
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(COLUMNS))
    assert cli(cluster, capsys, "topic", "create", topic, "--schema", str(schema_file))[0] == 0
    _, out, _ = cli(cluster, capsys, "topic", "list", "-O", "json")
    row = next(t for t in json.loads(out) if t["name"] == topic)
    assert row["schema"] == "v1: id int64!, name string, at timestamp[us, tz=UTC]"
    _, out, _ = cli(cluster, capsys, "topic", "describe", topic, "-O", "json")
    described = json.loads(out)["spec"]["topicSchema"]
    full = [{"nullable": True, **column} for column in COLUMNS]  # nullable always written
    assert (described["version"], described["columns"]) == (1, full)

    lines = '{"id": 1, "name": "a", "at": "2024-05-01T12:00:00+00:00"}\n{"id": 2}\n'
    code, _, err = cli(
        cluster, capsys, "produce", topic, "--acks", "all", stdin=lines, monkeypatch=monkeypatch
    )
    assert code == 0, err
    code, out, err = cli(cluster, capsys, "consume", topic, "-B", "-d")
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": 1, "name": "a", "at": "2024-05-01T12:00:00+00:00"},
        {"id": 2, "name": None, "at": None},
    ]
    _, out, _ = cli(cluster, capsys, "consume", topic, "-B", "-d", "-O", "json")
    assert [json.loads(line)["value"]["id"] for line in out.splitlines()] == [1, 2]

    code, _, err = cli(
        cluster, capsys, "produce", topic, stdin='{"id": "x"}\n', monkeypatch=monkeypatch
    )
    assert code == 1 and "column 'id' (int64)" in err


def test_a_parquet_file_gives_the_schema_and_update_schema_adds_a_column(
    cluster: LocalCluster,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = unique()
    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "city": ["x"]}), source)
    assert cli(cluster, capsys, "topic", "create", topic, "--schema", str(source))[0] == 0
    cli(
        cluster,
        capsys,
        "produce",
        topic,
        stdin='{"id": 1, "city": "Oslo"}\n',
        monkeypatch=monkeypatch,
    )
    wider = tmp_path / "v2.json"
    wider.write_text(
        json.dumps(
            [
                {"name": "id", "type": "int64"},
                {"name": "city", "type": "string"},
                {"name": "zip", "type": "string"},
            ]
        )
    )
    code, out, err = cli(cluster, capsys, "topic", "update-schema", topic, "--schema", str(wider))
    assert code == 0, err
    assert "schema updated to version 2" in out
    code, out, _ = cli(cluster, capsys, "consume", topic, "-B", "-d")
    assert json.loads(out) == {"id": 1, "city": "Oslo", "zip": None}

    narrower = tmp_path / "bad.json"
    narrower.write_text(json.dumps([{"name": "id", "type": "int64"}]))
    code, _, err = cli(cluster, capsys, "topic", "update-schema", topic, "--schema", str(narrower))
    assert code == 1 and "'city' (string) is missing: columns can only be added" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ("[]", "non-empty JSON list"),
        ('[{"name": "id", "type": "int65"}]', "unknown column type 'int65'"),
        ('[{"name": "offset", "type": "int64"}]', "column 'offset' is reserved"),
        ('[{"name": "a", "type": "int64"}, {"name": "a", "type": "string"}]', "appears twice"),
        ('[{"name": "a", "type": "int64", "nullable": "yes"}]', "nullable must be true/false"),
    ],
)
def test_bad_schema_files_are_refused_by_name(
    cluster: LocalCluster,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    message: str,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code, _, err = cli(cluster, capsys, "topic", "create", unique(), "--schema", str(bad))
    assert code == 1
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_a_missing_schema_file_is_named(
    cluster: LocalCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.json"
    code, _, err = cli(cluster, capsys, "topic", "create", unique(), "--schema", str(missing))
    assert code == 1 and "cannot read schema file" in err and "nope.json" in err


def test_table_delta_is_a_topic_setting_checked_against_the_columns(
    cluster: LocalCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, typed, bad = unique(), unique(), unique()
    assert cli(cluster, capsys, "topic", "create", plain, "--table", "delta")[0] == 0
    _, out, _ = cli(cluster, capsys, "topic", "list", "-O", "json")
    rows = {t["name"]: t for t in json.loads(out)}
    assert rows[plain]["table"] == "delta"
    _, out, _ = cli(cluster, capsys, "topic", "describe", plain, "-O", "json")
    assert json.loads(out)["spec"]["table"] == "delta"

    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(COLUMNS))
    code, _, err = cli(
        cluster, capsys, "topic", "create", typed, "--schema", str(schema_file), "--table", "delta"
    )
    assert code == 0, err
    _, out, _ = cli(cluster, capsys, "topic", "list", "-O", "json")
    assert {t["name"]: t["table"] for t in json.loads(out)}[typed] == "delta"

    unsigned = tmp_path / "unsigned.json"
    unsigned.write_text(json.dumps([{"name": "n", "type": "uint32"}]))
    code, _, err = cli(
        cluster, capsys, "topic", "create", bad, "--schema", str(unsigned), "--table", "delta"
    )
    assert code == 1
    assert "column 'n' (uint32) cannot be in a Delta table: Delta has no unsigned" in err
    wider = tmp_path / "wider.json"
    wider.write_text(json.dumps([*COLUMNS, {"name": "ns", "type": "timestamp[ns]"}]))
    code, _, err = cli(cluster, capsys, "topic", "update-schema", typed, "--schema", str(wider))
    assert code == 1
    assert "column 'ns' (timestamp[ns]) cannot be in a Delta table" in err
    # Without a Delta table the same columns are fine.
    code, _, err = cli(cluster, capsys, "topic", "create", bad, "--schema", str(unsigned))
    assert code == 0, err
