"""CLI argument helpers: durations, sizes, assignment files, record templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_stream.cli.parsing import load_assignment, parse_bytes, parse_duration, record_template
from spark_stream.errors import InvalidConfigError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 30),
        ("30s", 30),
        ("2m", 120),
        ("12h", 43200),
        ("7d", 604800),
        ("1w", 604800),
        ("1500ms", 1),
    ],
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text, "--retention-time") == seconds


@pytest.mark.parametrize("text", ["", "abc", "10y", "-5s", "100ms"])
def test_bad_durations_name_the_flag(text: str) -> None:
    with pytest.raises(InvalidConfigError, match="--retention-time"):
        parse_duration(text, "--retention-time")


def test_sizes() -> None:
    assert parse_bytes("1Gi", "--segment-size") == 2**30
    assert parse_bytes("500M", "--segment-size") == 500 * 10**6
    with pytest.raises(InvalidConfigError, match="--segment-size"):
        parse_bytes("big", "--segment-size")
    with pytest.raises(InvalidConfigError):
        parse_bytes("0", "--segment-size")


def test_assignment_files_in_three_shapes(tmp_path: Path) -> None:
    rows = [{"partition": 0, "replicas": [1, 2]}, {"partition": 1, "replicas": [2, 1]}]
    plain = tmp_path / "a.json"
    plain.write_text(json.dumps(rows))
    fluvio_style = tmp_path / "b.json"
    fluvio_style.write_text(
        json.dumps({"partitions": [{"id": 0, "replicas": [1, 2]}, {"id": 1, "replicas": [2, 1]}]})
    )
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text(
        "replicaAssignment:\n- {partition: 0, replicas: [1, 2]}\n"
        "- {partition: 1, replicas: [2, 1]}\n"
    )
    for path in (plain, fluvio_style, yaml_file):
        assert load_assignment(str(path)) == rows


@pytest.mark.parametrize("content", ["[]", "{}", "[1, 2]", '[{"partition": 0}]', ": : :"])
def test_bad_assignment_files(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InvalidConfigError, match="--replica-assignment"):
        load_assignment(str(path))
    with pytest.raises(InvalidConfigError, match="cannot read"):
        load_assignment(str(tmp_path / "missing.json"))


def test_record_templates() -> None:
    assert record_template("{{offset}} {{ key }}={{value}}") == "{offset} {key}={value}"
    assert record_template("{partition}:{time}") == "{partition}:{time}"
    with pytest.raises(InvalidConfigError, match="unknown field"):
        record_template("{{bogus}}")
