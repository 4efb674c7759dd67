"""Pure planning: ranges, minPartitions splits, and read-limit shares."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from datasource.offsets import TopicPartition
from datasource.planning import OffsetRange, limit_rows, plan_ranges, prorate, split_range

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_one_range_per_partition_with_data_in_stable_order() -> None:
    ranges = plan_ranges({B0: 5, A0: 0, A1: 7}, {A1: 7, B0: 9, A0: 3})
    assert ranges == [OffsetRange("a", 0, 0, 3), OffsetRange("b", 0, 5, 9)]


def test_partition_missing_from_start_begins_at_zero_and_missing_end_is_not_read() -> None:
    assert plan_ranges({A0: 4}, {A1: 2}) == [OffsetRange("a", 1, 0, 2)]


def test_min_partitions_splits_proportionally() -> None:
    ranges = plan_ranges({A0: 0, B0: 0}, {A0: 900, B0: 100}, min_partitions=10)
    assert [r for r in ranges if r.topic == "a"] == split_range(OffsetRange("a", 0, 0, 900), 9)
    assert [r for r in ranges if r.topic == "b"] == [OffsetRange("b", 0, 0, 100)]
    assert len(ranges) == 10


def test_min_partitions_already_met_keeps_ranges_whole() -> None:
    assert len(plan_ranges({A0: 0, B0: 0}, {A0: 10, B0: 10}, min_partitions=2)) == 2


def test_split_never_makes_empty_ranges() -> None:
    assert split_range(OffsetRange("a", 0, 10, 13), 8) == [
        OffsetRange("a", 0, 10, 11),
        OffsetRange("a", 0, 11, 12),
        OffsetRange("a", 0, 12, 13),
    ]


@given(st.integers(0, 10**6), st.integers(1, 10**5), st.integers(1, 64))
def test_split_covers_the_range_exactly(start: int, size: int, parts: int) -> None:
    pieces = split_range(OffsetRange("t", 0, start, start + size), parts)
    assert pieces[0].start == start and pieces[-1].end == start + size
    assert all(a.end == b.start for a, b in zip(pieces, pieces[1:], strict=False))
    sizes = [p.size for p in pieces]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_prorate_is_proportional_and_exact() -> None:
    assert prorate(10, {A0: 30, A1: 10, B0: 0}) == {A0: 8, A1: 2, B0: 0}  # 7.5 + 2.5
    assert sum(prorate(7, {A0: 1, A1: 1, B0: 1}).values()) == 7
    assert prorate(5, {A0: 0}) == {A0: 0}


@given(
    st.integers(0, 10**6),
    st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 10**6), min_size=1),
)
def test_prorate_sums_to_budget_when_there_is_weight(total: int, weights: dict) -> None:
    shares = prorate(total, weights)
    assert set(shares) == set(weights)
    if sum(weights.values()):
        assert sum(shares.values()) == total
    assert all(shares[tp] == 0 for tp, w in weights.items() if w == 0)


def test_limit_rows_caps_the_total_and_splits_by_backlog() -> None:
    ends = limit_rows({A0: 100, A1: 0}, {A0: 400, A1: 100}, 40)
    assert ends == {A0: 130, A1: 10}


def test_limit_rows_with_room_reads_everything() -> None:
    assert limit_rows({A0: 0, A1: 5}, {A0: 3, A1: 5}, 100) == {A0: 3, A1: 5}


@given(
    st.dictionaries(
        st.sampled_from([A0, A1, B0]),
        st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
        min_size=1,
    ),
    st.integers(1, 5000),
)
def test_limit_rows_properties(ranges: dict, max_rows: int) -> None:
    start = {tp: s for tp, (s, _) in ranges.items()}
    latest = {tp: s + n for tp, (s, n) in ranges.items()}
    ends = limit_rows(start, latest, max_rows)
    admitted = sum(ends[tp] - start[tp] for tp in ends)
    backlog = sum(latest[tp] - start[tp] for tp in latest)
    assert admitted == min(max_rows, backlog)  # never more, and always progress
    assert all(start[tp] <= ends[tp] <= latest[tp] for tp in ends)
