"""Replica assignment: golden examples, validation tables and properties over cluster shapes."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sc.assignment import (
    Assignment,
    InsufficientSpus,
    InvalidAssignment,
    SpuInfo,
    check_manual_assignment,
    compute_assignment,
    parse_assignment,
    spu_sequence,
)
from spark_stream.errors import InsufficientResourcesError, InvalidConfigError

PROPS = settings(max_examples=150, deadline=None)


def _assigned(result: object) -> Assignment:
    assert isinstance(result, Assignment), result
    return result


def _spread(counts: Counter[int], ids: list[int]) -> int:
    values = [counts.get(spu, 0) for spu in ids]
    return max(values) - min(values)


# --- golden examples (the ones docs/assignment.md shows) -------------------------------


def test_seed_example_six_partitions_rf3_on_three_spus() -> None:
    got = _assigned(compute_assignment([0, 1, 2], 6, 3)).replica_map()
    assert got == {
        0: (0, 1, 2),
        1: (1, 0, 2),
        2: (2, 0, 1),
        3: (0, 2, 1),
        4: (1, 0, 2),
        5: (2, 1, 0),
    }


def test_docs_example_fifteen_partitions_rf3_on_five_spus() -> None:
    got = _assigned(compute_assignment(range(5), 15, 3))
    assert got.leaders == (0, 3, 1, 4, 2, 0, 1, 2, 3, 4, 0, 1, 2, 4, 3)
    assert Counter(got.leaders) == {0: 3, 1: 3, 2: 3, 3: 3, 4: 3}
    assert Counter(s for reps in got.replicas for s in reps) == dict.fromkeys(range(5), 9)


def test_docs_example_unbalanced_racks_keeps_racks_distinct() -> None:
    spus = [SpuInfo(0, "a"), SpuInfo(1, "b"), SpuInfo(2, "b")]
    spus += [SpuInfo(3, "c"), SpuInfo(4, "c"), SpuInfo(5, "c")]
    assert spu_sequence(spus) == (0, 1, 3, 2, 4, 5)
    got = _assigned(compute_assignment(spus, 6, 3))
    assert got.replica_map() == {
        0: (0, 1, 3),
        1: (2, 4, 0),
        2: (5, 2, 0),
        3: (1, 5, 0),
        4: (3, 2, 0),
        5: (4, 1, 0),
    }
    rack = {s.id: s.rack for s in spus}
    assert all(len({rack[s] for s in reps}) == 3 for reps in got.replicas)


def test_start_index_rotates_the_first_leader() -> None:
    leaders = [
        _assigned(compute_assignment([10, 20, 30], 1, 1, start_index=k)).leaders[0]
        for k in range(6)
    ]
    assert leaders == [10, 20, 30, 10, 20, 30]


def test_rack_alternating_sequence() -> None:
    spus = [SpuInfo(i, rack) for i, rack in enumerate("aabbcc")]
    assert spu_sequence(spus) == (0, 2, 4, 1, 3, 5)
    assert spu_sequence(spus, ignore_rack=True) == (0, 1, 2, 3, 4, 5)
    partial = [SpuInfo(0, "a"), SpuInfo(1), SpuInfo(2, "b")]
    assert spu_sequence(partial) == (0, 1, 2)  # partial labelling: racks ignored


# --- outcomes other than an assignment --------------------------------------------------


@pytest.mark.parametrize(
    ("spus", "partitions", "factor", "expected"),
    [
        ([0, 1], 3, 3, InsufficientSpus(needed=3, available=2)),
        ([], 1, 1, InsufficientSpus(needed=1, available=0)),
        ([0, 1, 2], 0, 1, InvalidAssignment("partitions must be at least 1, got 0")),
        ([0, 1, 2], 1, 0, InvalidAssignment("replication factor must be at least 1, got 0")),
    ],
)
def test_compute_refusals(spus: list[int], partitions: int, factor: int, expected: object) -> None:
    assert compute_assignment(spus, partitions, factor) == expected


def test_refusals_carry_typed_errors() -> None:
    short = InsufficientSpus(needed=3, available=1)
    assert "3 SPUs" in short.reason and "1 registered" in short.reason
    assert isinstance(short.error(), InsufficientResourcesError)
    assert not short.error().retriable  # retrying cannot add SPUs
    assert isinstance(InvalidAssignment("bad").error(), InvalidConfigError)


def test_duplicate_spu_ids_are_rejected() -> None:
    with pytest.raises(InvalidConfigError, match="duplicate SPU id"):
        compute_assignment([1, 2, 2], 3, 1)


# --- manual assignment ------------------------------------------------------------------

KNOWN = {0, 1, 2, 3}


@pytest.mark.parametrize(
    ("rows", "kwargs", "reason"),
    [
        ({0: [0, 1], 1: [1, 2]}, {}, None),
        ({0: [0, 1], 1: [1, 2]}, {"partitions": 2, "replication_factor": 2}, None),
        ({}, {}, "lists no partitions"),
        ({0: [0, 1], 2: [1, 2]}, {}, "must be 0..1 without gaps"),
        ({1: [0, 1]}, {}, "must be 0..0 without gaps"),
        ({0: [0, 1], 1: [1, 2]}, {"partitions": 3}, "has 2 partitions, the topic has 3"),
        ({0: [0, 1], 1: [1, 2, 3]}, {}, "partition 1 has 3 replicas, expected 2"),
        ({0: [0, 1], 1: [1, 2]}, {"replication_factor": 3}, "partition 0 has 2 replicas"),
        ({0: [0, 0]}, {}, "partition 0 lists an SPU twice"),
        ({0: [0, 9]}, {}, "partition 0: unknown SPU 9"),
        ({0: [0, -1]}, {}, "not a non-negative integer"),
        ({0: []}, {}, "partition 0 has no replicas"),
    ],
)
def test_manual_assignment_table(
    rows: dict[int, list[int]], kwargs: dict[str, int], reason: str | None
) -> None:
    result = check_manual_assignment(rows, KNOWN, **kwargs)
    if reason is None:
        assert result == Assignment(tuple(tuple(rows[p]) for p in sorted(rows)))
    else:
        assert isinstance(result, InvalidAssignment)
        assert reason in result.reason


@pytest.mark.parametrize(
    "data",
    [
        json.dumps({"partitions": [{"id": 0, "replicas": [0, 1]}, {"id": 1, "replicas": [1, 2]}]}),
        [{"partition": 0, "replicas": [0, 1]}, {"partition": 1, "replicas": [1, 2]}],
        {"0": [0, 1], "1": [1, 2]},
        b'{"partitions": [{"id": 1, "replicas": [1, 2]}, {"id": 0, "replicas": [0, 1]}]}',
    ],
)
def test_parse_assignment_shapes(data: object) -> None:
    assert parse_assignment(data) == {0: (0, 1), 1: (1, 2)}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "not valid JSON"),
        (42, "expected a list"),
        ([[0, 1]], "each row must be"),
        ([{"id": 0}], "needs 'id' and 'replicas'"),
        ([{"id": 0, "replicas": 3}], "needs a list"),
        ([{"id": 0, "replicas": [0]}, {"id": 0, "replicas": [1]}], "listed twice"),
        ([{"id": "x", "replicas": [0]}], "partition id 'x' is not an integer"),
        ([{"id": 0, "replicas": [True]}], "SPU id True is not an integer"),
    ],
)
def test_parse_assignment_rejects(data: object, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        parse_assignment(data)


# --- properties over many cluster shapes ------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[int], int, int, int]:
    count = draw(st.integers(1, 16))
    ids = draw(st.lists(st.integers(0, 500), min_size=count, max_size=count, unique=True))
    factor = draw(st.integers(1, count))
    partitions = draw(st.integers(1, 60))
    start = draw(st.integers(-5, 100))
    return ids, partitions, factor, start


@PROPS
@given(clusters())
def test_computed_assignment_is_balanced(shape: tuple[list[int], int, int, int]) -> None:
    ids, partitions, factor, start = shape
    got = _assigned(compute_assignment(ids, partitions, factor, start_index=start))
    assert len(got.replicas) == partitions
    for reps in got.replicas:
        assert len(reps) == factor
        assert len(set(reps)) == factor
        assert set(reps) <= set(ids)
    assert _spread(Counter(got.leaders), ids) <= 1
    assert _spread(Counter(s for reps in got.replicas for s in reps), ids) <= 1


@PROPS
@given(clusters(), st.randoms(use_true_random=False))
def test_computed_assignment_is_deterministic(
    shape: tuple[list[int], int, int, int], rnd: random.Random
) -> None:
    ids, partitions, factor, start = shape
    first = compute_assignment(ids, partitions, factor, start_index=start)
    shuffled = list(ids)
    rnd.shuffle(shuffled)
    assert compute_assignment(shuffled, partitions, factor, start_index=start) == first


@st.composite
def racked_clusters(draw: st.DrawFn, equal: bool) -> tuple[list[SpuInfo], int, int]:
    racks = draw(st.integers(1, 5))
    if equal:
        per_rack = draw(st.integers(1, 4))
        sizes = [per_rack] * racks
    else:
        sizes = draw(st.lists(st.integers(1, 4), min_size=racks, max_size=racks))
    spus, next_id = [], 0
    for rack, size in enumerate(sizes):
        for _ in range(size):
            spus.append(SpuInfo(next_id, f"rack-{rack}"))
            next_id += draw(st.integers(1, 3))
    factor = draw(st.integers(1, len(spus)))
    partitions = draw(st.integers(1, 40))
    return spus, partitions, factor


def _check_racks(spus: list[SpuInfo], got: Assignment) -> None:
    rack = {s.id: s.rack for s in spus}
    size = Counter(rack.values())
    n_racks = len(size)
    for reps in got.replicas:
        per_rack = Counter(rack[s] for s in reps)
        if n_racks >= len(reps):
            assert len(per_rack) == len(reps), reps  # one replica per rack
        else:
            # more replicas than racks: every rack used, as evenly as rack sizes allow
            assert len(per_rack) == n_racks
            top = max(per_rack.values())
            for name, used in per_rack.items():
                if used < top - 1:
                    assert used == size[name], (reps, per_rack)  # only a full rack lags


@PROPS
@given(racked_clusters(equal=True))
def test_equal_racks_are_distinct_and_balanced(shape: tuple[list[SpuInfo], int, int]) -> None:
    spus, partitions, factor = shape
    got = _assigned(compute_assignment(spus, partitions, factor))
    ids = [s.id for s in spus]
    _check_racks(spus, got)
    assert _spread(Counter(got.leaders), ids) <= 1
    assert _spread(Counter(s for reps in got.replicas for s in reps), ids) <= 1


@PROPS
@given(racked_clusters(equal=False))
def test_unequal_racks_stay_distinct(shape: tuple[list[SpuInfo], int, int]) -> None:
    spus, partitions, factor = shape
    got = _assigned(compute_assignment(spus, partitions, factor))
    _check_racks(spus, got)
    assert _spread(Counter(got.leaders), [s.id for s in spus]) <= 1


# --- growth: partitions added to an existing topic --------------------------------------


@PROPS
@given(clusters(), st.integers(0, 30))
def test_growth_equals_creation_with_the_new_count(
    shape: tuple[list[int], int, int, int], more: int
) -> None:
    # Growing keeps the existing rows and places the new ones as a topic created with
    # the larger count would have had them (same SPUs, same rotation).
    ids, partitions, factor, start = shape
    before = _assigned(compute_assignment(ids, partitions, factor, start_index=start))
    grown = compute_assignment(
        ids, partitions + more, factor, start_index=start, existing=before.replicas
    )
    assert grown == compute_assignment(ids, partitions + more, factor, start_index=start)


def test_growth_balances_against_existing_rows_and_ignores_gone_spus() -> None:
    # Two partitions led by SPU 0 (one replica on SPU 9, which is gone): the new ones go
    # to the SPUs that lead and hold least.
    existing = ((0, 1), (0, 9))
    got = _assigned(compute_assignment([0, 1, 2], 4, 2, existing=existing))
    assert got.replicas[:2] == existing
    assert got.replicas[2:] == ((2, 1), (1, 2))
    assert Counter(s for reps in got.replicas for s in reps if s != 9) == {0: 2, 1: 3, 2: 2}


def test_growth_never_shrinks() -> None:
    result = compute_assignment([0, 1], 1, 1, existing=((0,), (1,)))
    assert result == InvalidAssignment("partitions can only be added: 1 is below the 2 existing")
