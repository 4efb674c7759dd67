"""The tier manifest and read planning: pure table tests, no files, no servers."""

from __future__ import annotations

import pytest

from spark_stream.errors import OffsetOutOfRangeError, StorageError
from spark_stream.tier import TierEntry, TierManifest, covering_entries, data_file, tier_start
from spark_stream.tier.layout import manifest_file, topic_tier_url


def entry(base: int, end: int, ts: int = 0, p: int = 0) -> TierEntry:
    return TierEntry(
        base_offset=base,
        next_offset=end,
        records=end - base,
        bytes=100,
        file=data_file(p, base),
        max_timestamp=ts,
    )


def manifest(*ranges: tuple[int, int]) -> TierManifest:
    return TierManifest(partition=0, files=tuple(entry(a, b, ts=a) for a, b in ranges))


def test_layout_is_hive_style_with_the_manifest_beside() -> None:
    assert data_file(3, 42) == "partition=3/00000000000000000042.parquet"
    assert manifest_file(3) == "_fluvio/partition=3.json"
    assert topic_tier_url("s3://b/tier/", "orders") == "s3://b/tier/orders"


@pytest.mark.parametrize(
    ("held", "new", "expected"),
    [
        ((), (0, 10), [(0, 10)]),  # first file
        ((), (50, 60), [(50, 60)]),  # a first file may start anywhere (retention)
        (((0, 10),), (10, 25), [(0, 10), (10, 25)]),  # continues
        (((0, 10), (10, 25)), (10, 25), [(0, 10), (10, 25)]),  # repeated: unchanged
    ],
)
def test_with_entry_appends_once(
    held: tuple[tuple[int, int], ...], new: tuple[int, int], expected: list[tuple[int, int]]
) -> None:
    before = manifest(*held)
    after = before.with_entry(entry(*new, ts=new[0]))
    assert [(e.base_offset, e.next_offset) for e in after.files] == expected
    assert after.with_entry(entry(*new, ts=new[0])) == after  # idempotent


@pytest.mark.parametrize(
    ("held", "new", "message"),
    [
        (((0, 10),), (11, 20), "does not continue the tier, which ends at 10"),
        (((0, 10),), (5, 20), "does not continue"),
        (((0, 10),), (0, 12), "already holds a different file at offset 0"),
    ],
)
def test_with_entry_refuses_what_does_not_continue(
    held: tuple[tuple[int, int], ...], new: tuple[int, int], message: str
) -> None:
    with pytest.raises(StorageError, match=message):
        manifest(*held).with_entry(entry(*new))


def test_json_round_trip_and_bad_files() -> None:
    m = manifest((0, 10), (10, 30))
    assert TierManifest.from_json(m.to_json()) == m
    with pytest.raises(StorageError, match="x.json is not a valid tier manifest"):
        TierManifest.from_json('{"partition": 0, "files": [{"base_offset": 1}]}', "x.json")
    files = ",".join(e.model_dump_json() for e in (entry(0, 5), entry(6, 9)))
    gap = '{"partition": 0, "files": [' + files + "]}"
    with pytest.raises(StorageError, match="does not continue"):
        TierManifest.from_json(gap)


@pytest.mark.parametrize(
    ("ranges", "cutoff", "expired"),
    [
        (((0, 10), (10, 20), (20, 30)), 0, []),  # ts = base: nothing older than 0
        (((0, 10), (10, 20), (20, 30)), 15, [0, 10]),  # a prefix
        (((0, 10), (10, 20), (20, 30)), 100, [0, 10, 20]),
        ((), 100, []),
    ],
)
def test_expired_is_a_prefix(
    ranges: tuple[tuple[int, int], ...], cutoff: int, expired: list[int]
) -> None:
    m = manifest(*ranges)
    gone = m.expired(cutoff)
    assert [e.base_offset for e in gone] == expired
    assert m.without(gone).files == m.files[len(gone) :]


@pytest.mark.parametrize(
    ("ranges", "log_start", "expected"),
    [
        ((), 40, 40),  # nothing tiered
        (((0, 10), (10, 40)), 40, 0),  # the tier reaches the log start
        (((0, 10), (10, 50)), 40, 0),  # overlaps it
        (((0, 10),), 40, 40),  # a hole between them: not readable through the tier
        (((30, 50),), 10, 10),  # the SPU holds more than the tier
    ],
)
def test_tier_start(ranges: tuple[tuple[int, int], ...], log_start: int, expected: int) -> None:
    assert tier_start(manifest(*ranges), log_start) == expected


@pytest.mark.parametrize(
    ("start", "end", "bases"),
    [
        (0, 10, [0]),
        (5, 15, [0, 10]),
        (10, 11, [10]),
        (12, 30, [10, 25]),
        (7, 7, []),
    ],
)
def test_covering_entries(start: int, end: int, bases: list[int]) -> None:
    m = manifest((0, 10), (10, 25), (25, 30))
    assert [e.base_offset for e in covering_entries(m, start, end)] == bases


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (0, 5, "offset 0 is not in the tier, which holds \\[10, 30\\)"),
        (10, 31, "the tier ends at 30, before 31"),
        (30, 31, "offset 30 is not in the tier"),
    ],
)
def test_covering_entries_out_of_range(start: int, end: int, message: str) -> None:
    with pytest.raises(OffsetOutOfRangeError, match=message):
        covering_entries(manifest((10, 25), (25, 30)), start, end)
