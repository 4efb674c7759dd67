"""Pure index math: the indexing policy, the searches and the sanity checks."""

from __future__ import annotations

import numpy as np
import pytest

from spu.storage.index import (
    NO_TIMESTAMP,
    OFFSET_ENTRY,
    TIME_ENTRY,
    IndexCursor,
    count_below_pos,
    count_below_rel,
    floor_by_pos,
    floor_by_rel,
    last_below_ts,
    offset_index_problem,
    time_index_problem,
)

OFFSETS = np.array([(10, 1000), (20, 2000), (35, 3500)], OFFSET_ENTRY)
TIMES = np.array([(100, 10), (150, 20), (300, 35)], TIME_ENTRY)


@pytest.mark.parametrize(
    "rel, expected", [(0, -1), (9, -1), (10, 0), (19, 0), (20, 1), (34, 1), (35, 2), (10**6, 2)]
)
def test_floor_by_rel(rel: int, expected: int) -> None:
    assert floor_by_rel(OFFSETS, rel) == expected


@pytest.mark.parametrize(
    "pos, expected", [(0, -1), (999, -1), (1000, 0), (3499, 1), (3500, 2), (1 << 40, 2)]
)
def test_floor_by_pos(pos: int, expected: int) -> None:
    assert floor_by_pos(OFFSETS, pos) == expected


@pytest.mark.parametrize(
    "ts, expected", [(50, -1), (100, -1), (101, 0), (150, 0), (151, 1), (300, 1), (301, 2)]
)
def test_last_below_ts(ts: int, expected: int) -> None:
    assert last_below_ts(TIMES, ts) == expected


def test_counts_for_cuts() -> None:
    assert [count_below_pos(OFFSETS, p) for p in (0, 1000, 1001, 3500, 9999)] == [0, 0, 1, 2, 3]
    assert [count_below_rel(TIMES, r) for r in (0, 10, 11, 35, 36)] == [0, 0, 1, 2, 3]


def test_searches_on_empty_indexes() -> None:
    assert floor_by_rel(np.empty(0, OFFSET_ENTRY), 5) == -1
    assert last_below_ts(np.empty(0, TIME_ENTRY), 5) == -1


def test_cursor_follows_kafkas_policy() -> None:
    cursor = IndexCursor(interval=100)
    # (rel, pos, length, max_ts) -> (offset entry, time entry)
    steps = [
        ((0, 0, 60, 500), (None, None)),  # first batch: never indexed
        ((3, 60, 60, 400), (None, None)),  # 60 bytes since: not > 100
        ((6, 120, 60, 450), ((6, 120), (500, 6))),  # 120 > 100: entry; max so far 500
        ((9, 180, 200, 480), (None, None)),
        ((12, 380, 60, 490), ((12, 380), None)),  # max did not grow: no time entry
        ((15, 440, 200, 900), (None, None)),
    ]
    for args, expected in steps:
        assert cursor.on_batch(*args) == expected
    assert cursor.max_timestamp == 900
    assert cursor.seal_entry() == (900, 15)
    assert cursor.seal_entry() is None


def test_cursor_with_interval_zero_indexes_every_batch_but_the_first() -> None:
    cursor = IndexCursor(interval=0)
    entries = [cursor.on_batch(i, i * 10, 10, i)[0] for i in range(4)]
    assert entries == [None, (1, 10), (2, 20), (3, 30)]


def test_empty_cursor_has_no_seal_entry() -> None:
    cursor = IndexCursor(interval=0)
    assert cursor.seal_entry() is None
    assert cursor.max_timestamp == NO_TIMESTAMP


@pytest.mark.parametrize(
    "entries, size, bases, problem",
    [
        ([(10, 1000), (20, 2000)], 5000, None, None),
        ([(10, 1000), (20, 2000)], 5000, [110, 120], None),
        ([(10, 1000), (20, 2000)], 5000, [110, 121], "does not point"),
        ([(20, 1000), (10, 2000)], 5000, None, "not strictly increasing"),
        ([(10, 1000), (20, 1000)], 5000, None, "not strictly increasing"),
        ([(0, 0), (20, 2000)], 5000, None, "first batch"),
        ([(10, 1000), (20, 4990)], 5000, None, "past the last batch"),
        ([], 0, None, None),
    ],
)
def test_offset_index_problem(
    entries: list[tuple[int, int]], size: int, bases: list[int] | None, problem: str | None
) -> None:
    found = offset_index_problem(
        np.array(entries, OFFSET_ENTRY),
        size,
        None if bases is None else np.array(bases, np.int64),
        100,
    )
    assert (found is None) if problem is None else (problem in (found or ""))


@pytest.mark.parametrize(
    "entries, last_rel, problem",
    [
        ([(100, 10), (300, 35)], 40, None),
        ([(100, 10), (300, 40)], 40, None),  # closing entry at the last batch
        ([(300, 10), (100, 35)], 40, "not strictly increasing"),
        ([(100, 10), (300, 50)], 40, "past the last batch"),
        ([(100, 11)], 40, "does not start an indexed batch"),
    ],
)
def test_time_index_problem(
    entries: list[tuple[int, int]], last_rel: int, problem: str | None
) -> None:
    found = time_index_problem(
        np.array(entries, TIME_ENTRY), last_rel, np.array([10, 20, 35], np.uint32)
    )
    assert (found is None) if problem is None else (problem in (found or ""))
