"""Idempotent producer state: table-driven classification, commit, rebuild from headers."""

from __future__ import annotations

import pytest

from spark_stream.errors import (
    DuplicateSequenceError,
    InvalidRequestError,
    OutOfOrderSequenceError,
)
from spark_stream.records import BatchHeader
from spu.producers import ProducerTable


def hdr(pid: int, seq: int, count: int, base: int = 0) -> BatchHeader:
    return BatchHeader(base, count, 0, 0, 10, 0, pid, seq)


def table_with(*frames: tuple[int, int, int, int], window: int = 4) -> ProducerTable:
    """A table that saw frames ``(pid, seq, count, base)`` in the log."""
    return ProducerTable.rebuild([hdr(p, s, c, b) for p, s, c, b in frames], window=window)


# (case, log frames (pid, seq, count, base), request frames (pid, seq, count), leo,
#  expected offsets, expected appended indices)
PLAN_ROWS = [
    ("not idempotent", [], [(-1, -1, 3)], 10, [10], [0]),
    ("unknown producer starts anywhere", [], [(7, 40, 2)], 5, [5], [0]),
    ("next expected sequence appends", [(7, 0, 3, 0)], [(7, 3, 2)], 3, [3], [0]),
    ("exact retry answers the original offset", [(7, 0, 3, 0), (7, 3, 2, 3)], [(7, 3, 2)], 5,
     [3], []),
    ("retry split differently: offset of its first record", [(7, 0, 4, 10)], [(7, 2, 2)], 14,
     [12], []),
    ("retry then new in one request", [(7, 0, 3, 0)], [(7, 0, 3), (7, 3, 1)], 3, [0, 3], [1]),
    ("two new frames chain within a request", [(7, 0, 1, 0)], [(7, 1, 2), (7, 3, 2)], 1,
     [1, 3], [0, 1]),
    ("frame repeated within one request", [], [(7, 0, 2), (7, 0, 2)], 0, [0, 0], [0]),
    ("producers are independent", [(7, 0, 2, 0), (8, 0, 1, 2)], [(8, 1, 1), (7, 0, 2)], 3,
     [3, 0], [0]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("log", "request_frames", "leo", "offsets", "append"),
    [row[1:] for row in PLAN_ROWS],
    ids=[row[0] for row in PLAN_ROWS],
)
def test_plan(
    log: list[tuple[int, int, int, int]],
    request_frames: list[tuple[int, int, int]],
    leo: int,
    offsets: list[int],
    append: list[int],
) -> None:
    plan = table_with(*log).plan([hdr(*f) for f in request_frames], leo)
    assert plan.offsets == offsets
    assert plan.append == append


ERROR_ROWS = [
    ("gap", [(7, 0, 3, 0)], [(7, 4, 1)], OutOfOrderSequenceError, "skips"),
    ("straddles the expected sequence", [(7, 0, 3, 0)], [(7, 2, 2)], OutOfOrderSequenceError,
     "straddles"),
    ("gap after a new frame of the same request", [(7, 0, 1, 0)], [(7, 1, 1), (7, 5, 1)],
     OutOfOrderSequenceError, "skips"),
    ("duplicate older than the window", [(7, i, 1, i) for i in range(10)], [(7, 1, 1)],
     DuplicateSequenceError, "remembered"),
    ("idempotent frame without a sequence", [], [(7, -1, 1)], InvalidRequestError, "sequence"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("log", "request_frames", "error", "match"),
    [row[1:] for row in ERROR_ROWS],
    ids=[row[0] for row in ERROR_ROWS],
)
def test_plan_errors(
    log: list[tuple[int, int, int, int]],
    request_frames: list[tuple[int, int, int]],
    error: type[Exception],
    match: str,
) -> None:
    with pytest.raises(error, match=match):
        table_with(*log).plan([hdr(*f) for f in request_frames], 100)


def test_plan_changes_nothing_until_commit() -> None:
    table = ProducerTable()
    plan = table.plan([hdr(7, 0, 2)], 0)
    assert table.next_sequence(7) is None
    assert table.plan([hdr(7, 0, 2)], 0).append == [0]  # still new: nothing committed
    table.commit(plan)
    assert table.next_sequence(7) == 2
    retry = table.plan([hdr(7, 0, 2)], 2)
    assert retry.append == [] and retry.offsets == [0] and retry.end_offset == 2


def test_end_offset_covers_duplicates_and_new_frames() -> None:
    table = table_with((7, 0, 3, 5))
    plan = table.plan([hdr(7, 0, 3), hdr(-1, -1, 4)], 8)
    assert plan.end_offset == 12
    assert plan.duplicates == 1


def test_least_recently_used_producer_is_forgotten() -> None:
    table = ProducerTable(window=2, max_producers=2)
    for pid in (1, 2, 3):
        table.observe(hdr(pid, 0, 1, pid))
    assert len(table) == 2
    assert table.next_sequence(1) is None  # forgotten: any sequence starts it again
    assert table.next_sequence(3) == 1


def test_rebuild_matches_incremental_commits() -> None:
    incremental = ProducerTable()
    headers = []
    leo = 0
    for pid, count in [(1, 2), (2, 1), (1, 3), (-1, 5), (2, 2)]:
        seq = incremental.next_sequence(pid) or 0 if pid >= 0 else -1
        plan = incremental.plan([hdr(pid, seq, count)], leo)
        incremental.commit(plan)
        headers.append(hdr(pid, seq, count, plan.offsets[0]))
        leo += count
    rebuilt = ProducerTable.rebuild(headers)
    for pid in (1, 2):
        assert rebuilt.next_sequence(pid) == incremental.next_sequence(pid)
    retry = rebuilt.plan([hdr(1, 2, 3)], leo)
    assert retry.append == [] and retry.offsets == [3]
