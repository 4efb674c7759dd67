"""CLI output: tables, JSON, YAML, and the progress bar."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from spark_stream.cli.admin_cmds import PARTITION_COLUMNS, partition_lags, partition_row
from spark_stream.cli.output import ProgressBar, emit, render_table
from spark_stream.models import Partition, PartitionSpec, PartitionStatus, ReplicaStatus


def test_table_aligns_columns_and_marks_missing_values() -> None:
    text = render_table(
        [{"name": "a", "replicas": [1, 2], "reason": None}, {"name": "long-name", "replicas": []}],
        ["name", "replicas", "reason"],
    )
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "REPLICAS", "REASON"]
    assert lines[1].split() == ["a", "[1,", "2]", "-"]
    assert lines[2].startswith("long-name  []")
    assert render_table([], ["x"]) == "X"


def test_json_and_yaml_carry_the_same_rows() -> None:
    rows = [{"name": "t", "partitions": 3}]
    out = io.StringIO()
    emit(rows, "json", out=out)
    assert json.loads(out.getvalue()) == rows
    out = io.StringIO()
    emit(rows, "yaml", out=out)
    assert yaml.safe_load(out.getvalue()) == rows


def test_progress_draws_only_when_enabled() -> None:
    quiet = io.StringIO()
    bar = ProgressBar(100, "f", stream=quiet)
    bar.advance(100)
    bar.close()
    assert quiet.getvalue() == ""  # not a terminal
    shown = io.StringIO()
    bar = ProgressBar(100, "file.txt", enabled=True, stream=shown)
    bar.advance(50)
    bar.close()
    assert "file.txt" in shown.getvalue() and " 50.0%" in shown.getvalue()
    assert shown.getvalue().endswith("\n")


def test_partition_list_shows_the_leader_epoch_in_tables_and_json() -> None:
    spec = PartitionSpec(initial_leader=1, replicas=(1, 2))
    part = Partition.new("orders", 0, spec, PartitionStatus(leader=2, leader_epoch=3))
    out = io.StringIO()
    emit([partition_row(part)], "json", out=out)
    (row,) = json.loads(out.getvalue())
    assert (row["leader"], row["leader_epoch"]) == (2, 3)
    header, line = render_table([partition_row(part)], PARTITION_COLUMNS).splitlines()
    assert header.split()[:4] == ["TOPIC", "PARTITION", "LEADER", "LEADER_EPOCH"]
    assert line.split()[:4] == ["orders", "0", "2", "3"]


def test_partition_rows_show_size_and_log_start_once_reported() -> None:
    spec = PartitionSpec(initial_leader=1, replicas=(1,))
    fresh = Partition.new("orders", 0, spec, PartitionStatus(leader=1))
    row = partition_row(fresh, human=True)
    assert (row["size"], row["log-start"]) == (None, None)  # shown as '-'
    reported = PartitionStatus(leader=1, leo=40, hw=40, log_start_offset=10, size=3 * 2**20)
    part = Partition.new("orders", 1, spec, reported)
    assert (partition_row(part)["size"], partition_row(part)["log-start"]) == (3 * 2**20, 10)
    header, line = render_table([partition_row(part, human=True)], PARTITION_COLUMNS).splitlines()
    cells = dict(zip(header.split(), line.replace("3.0 MiB", "3.0MiB").split(), strict=False))
    assert (cells["SIZE"], cells["LOG-START"]) == ("3.0MiB", "10")


def test_partition_rows_mark_damaged_replicas_and_their_repair() -> None:
    spec = PartitionSpec(initial_leader=1, replicas=(1, 2, 3))
    lrs = (
        ReplicaStatus(spu_id=2, leo=40, hw=40),
        ReplicaStatus(spu_id=1, leo=3, hw=3, in_sync=False, damaged=True,
                      repair="repairing from offset 3"),
        ReplicaStatus(spu_id=3, leo=40, hw=40, repair="repaired from offset 7"),
    )  # fmt: skip
    part = Partition.new("orders", 0, spec, PartitionStatus(leader=2, lrs=lrs, leo=40, hw=40))
    row = partition_row(part)
    assert row["lrs"] == ["2:40/40", "1:3/3*!", "3:40/40"]
    assert row["repair"] == ["1: repairing from offset 3", "3: repaired from offset 7"]
    healthy = Partition.new("orders", 1, spec, PartitionStatus(leader=2, lrs=lrs[:1]))
    assert partition_row(healthy)["repair"] is None  # shown as '-'


@pytest.mark.parametrize(
    ("groups", "lags"),
    [
        ([], {}),
        ([[{"topic": "t", "partition": 0, "lag": 5}]], {("t", 0): 5}),
        # the group furthest behind
        (
            [
                [{"topic": "t", "partition": 0, "lag": 5}],
                [{"topic": "t", "partition": 0, "lag": 9}],
            ],
            {("t", 0): 9},
        ),
        # no committed offset: no lag (Kafka's '-'), another group's still counts
        (
            [
                [{"topic": "t", "partition": 1, "lag": None}],
                [{"topic": "u", "partition": 0, "lag": 0}],
            ],
            {("u", 0): 0},
        ),
    ],
)
def test_partition_lags(
    groups: list[list[dict[str, object]]], lags: dict[tuple[str, int], int]
) -> None:
    assert partition_lags(groups) == lags
