"""Temporary names in a tier and which of them a partition's leader removes: pure table
tests, no files."""

from __future__ import annotations

import pytest

from spark_stream.tier.layout import stale_temps, temp_name, temp_target

DATA = "00000000000000000042.parquet"


@pytest.mark.parametrize(
    ("target", "epoch", "name"),
    [
        (DATA, 3, f".{DATA}.e3.ab12.tmp"),
        (DATA, None, f".{DATA}.ab12.tmp"),
        ("partition=0.json", 0, ".partition=0.json.e0.ab12.tmp"),
        ("x.e7", 2, ".x.e7.e2.ab12.tmp"),  # a target that looks tagged keeps its tag
    ],
)
def test_temp_names_round_trip(target: str, epoch: int | None, name: str) -> None:
    assert temp_name(target, epoch, "ab12") == name
    assert temp_target(name) == (target, epoch)


@pytest.mark.parametrize(
    "name",
    [DATA, f"{DATA}.e3.ab12.tmp", f".{DATA}", ".tmp", "..tmp", ".ab12.tmp", "x.tmp"],
)
def test_other_names_are_not_temporary(name: str) -> None:
    assert temp_target(name) is None


NAMES = [
    DATA,  # a data file: never
    f".{DATA}.e2.aaaa.tmp",  # an older leader's
    f".{DATA}.e3.bbbb.tmp",  # a writer of the same epoch: an earlier life of this SPU
    f".{DATA}.e4.cccc.tmp",  # a newer leader's: it may be writing now
    f".{DATA}.dddd.tmp",  # no epoch (no leader wrote it): whoever leads next
    ".partition=0.json.e1.eeee.tmp",
    ".partition=1.json.e1.ffff.tmp",  # another partition's manifest
]


@pytest.mark.parametrize(
    ("epoch", "target", "expected"),
    [
        (
            3,
            None,
            [
                f".{DATA}.e2.aaaa.tmp",
                f".{DATA}.e3.bbbb.tmp",
                f".{DATA}.dddd.tmp",
                ".partition=0.json.e1.eeee.tmp",
                ".partition=1.json.e1.ffff.tmp",
            ],
        ),
        (3, "partition=0.json", [".partition=0.json.e1.eeee.tmp"]),
        (0, "partition=0.json", []),
        (0, None, [f".{DATA}.dddd.tmp"]),
        (9, DATA, [n for n in NAMES if n.startswith(f".{DATA}")]),
    ],
)
def test_stale_temps(epoch: int, target: str | None, expected: list[str]) -> None:
    assert stale_temps(NAMES, epoch, target) == expected
