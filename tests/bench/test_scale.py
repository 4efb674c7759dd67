"""The pure parts of the scale benchmark (``bench.scale``): growth, goals, rebasing."""

from __future__ import annotations

from typing import Any

import pytest

from bench._scale_math import cpu_percent, flat, goal, growth, latency_summary, per_unit
from bench._scale_recovery import rebase_frames
from bench.scale import SIZES, summarize
from spark_stream.records import iter_frames, with_base_offset
from spark_stream.small_frame import encode_small


@pytest.mark.parametrize(
    ("costs", "per", "expected"),
    [
        ({10: 1.0, 100: 10.0}, True, 1.0),  # linear
        ({10: 1.0, 100: 1.0}, True, 0.1),  # a fixed cost spread over more units
        ({10: 1.0, 100: 100.0}, True, 10.0),  # quadratic
        ({10: 1.0, 100: 5.0, 1000: 100.0}, True, 1.0),  # smallest against largest only
        ({100: 10.0, 10: 1.0}, True, 1.0),  # order of the mapping does not matter
        ({10: 2.0, 100: 3.0}, False, 1.5),  # already per unit: the plain ratio
        ({10: 1.0, 100: None, 1000: 10.0}, True, 0.1),  # unmeasured sizes skipped
        ({10: 1.0, 100: None}, True, None),  # one size: no curve
        ({}, True, None),
        ({10: 0.0, 100: 3.0}, True, None),  # nothing to divide by
    ],
)
def test_growth(costs: dict[int, float | None], per: bool, expected: float | None) -> None:
    assert growth(costs, per=per) == expected


@pytest.mark.parametrize(
    ("costs", "expected"),
    [
        ({1: 1.0, 10: 1.0, 100: 1.2}, True),
        ({1: 1.0, 100: 1.5}, True),  # at the tolerance
        ({1: 1.0, 100: 1.51}, False),
        ({1: 2.0, 100: 1.0}, True),  # faster at the largest size is flat too
        ({1: 1.0}, None),
        ({1: 1.0, 10: None}, None),
    ],
)
def test_flat(costs: dict[int, float | None], expected: bool | None) -> None:
    assert flat(costs) is expected


@pytest.mark.parametrize(
    ("before", "after", "wall", "expected"),
    [(1.0, 1.2, 10.0, 2.0), (0.0, 0.0, 10.0, 0.0), (3.0, 5.0, 1.0, 200.0)],
)
def test_cpu_percent(before: float, after: float, wall: float, expected: float) -> None:
    assert cpu_percent(before, after, wall) == pytest.approx(expected)


def test_cpu_percent_needs_an_interval() -> None:
    with pytest.raises(ValueError, match="wall_s must be positive"):
        cpu_percent(0.0, 1.0, 0.0)


@pytest.mark.parametrize(
    ("total", "baseline", "units", "expected"),
    [(150.0, 100.0, 100, 0.5), (100.0, 100.0, 10, 0.0), (90.0, 100.0, 10, -1.0)],
)
def test_per_unit(total: float, baseline: float, units: int, expected: float) -> None:
    assert per_unit(total, baseline, units) == pytest.approx(expected)


def test_per_unit_needs_units() -> None:
    with pytest.raises(ValueError, match="units must be positive"):
        per_unit(1.0, 0.0, 0)


def test_latency_summary() -> None:
    assert latency_summary([float(i) for i in range(1, 101)]) == {
        "p50": 50.5,
        "p99": 99.01,
        "max": 100.0,
    }
    assert latency_summary([]) == {"p50": None, "p99": None, "max": None}


@pytest.mark.parametrize(
    ("value", "limit", "strict", "expected"),
    [
        (1.9, 2.0, True, True),
        (2.0, 2.0, True, False),
        (2.0, 2.0, False, True),
        (2.1, 2.0, False, False),
        (None, 2.0, True, None),
    ],
)
def test_goal(value: float | None, limit: float, strict: bool, expected: bool | None) -> None:
    assert goal(value, limit, strict=strict) is expected


def _sc(create: float, moved: int, election: float) -> dict[str, Any]:
    return {
        "create_s": create,
        "sc_rss_per_partition_kb": 2.0,
        "redis_per_partition_kb": 1.0,
        "watch_p99_ms": 10.0,
        "election_partitions": moved,
        "election_s": election,
    }


def _spu(rss: float, cpu: float, fds: int, rps: float) -> dict[str, Any]:
    return {
        "rss_mb": rss,
        "rss_per_partition_mb": 0.1,
        "idle_cpu_pct": cpu,
        "fds_before": 10,
        "fds": fds,
        "produce_rps": rps,
        "catch_up_s": 1.0,
    }


def _conn(refused: int) -> dict[str, Any]:
    return {"refused": refused, "rss_per_conn_kb": 8.0, "seq_p99_ms": 1.0, "burst_p99_ms": 5.0}


def test_summarize_goals_and_growth() -> None:
    out = summarize(
        {100: _sc(1.0, 30, 0.1), 1000: _sc(20.0, 333, 1.5)},
        {10: _spu(110.0, 0.5, 40, 1000.0), 1000: _spu(400.0, 2.5, 3010, 500.0)},
        {10: _conn(0), 1000: _conn(0)},
        {1: {"recovery_s": 1.0}, 100: {"recovery_s": 1.2}},
    )
    assert out["sc_1000p_create_s"] == 20.0
    assert out["sc_create_growth"] == 2.0  # 20 ms a partition against 10 ms
    assert out["spu_fds_growth"] == 1.0  # 3 fds a partition at both sizes
    assert out["spu_produce_growth"] == 2.0  # half the throughput
    assert out["recovery_1gb_recovery_s"] == 1.0
    assert out["conn_refused_total"] == 0
    assert out["goals"] == {
        "spu_1000p_idle_cpu_pct": False,  # 2.5% of a core
        "spu_1000p_rss_mb": True,
        "election_1000p_s": True,
        "recovery_flat": True,
        "no_connection_refused": True,
    }


def test_an_election_that_leaves_partitions_offline_misses_its_goal() -> None:
    fast_but_offline = _sc(20.0, 333, 0.4) | {"election_offline": 5}
    out = summarize({1000: fast_but_offline}, {}, {}, {})
    assert out["goals"]["election_1000p_s"] is False


def test_summarize_without_the_goal_sizes() -> None:
    out = summarize(
        {100: _sc(1.0, 30, 0.1)}, {10: _spu(110.0, 0.5, 40, 1000.0)}, {10: _conn(2)}, {}
    )
    assert out["sc_create_growth"] is None  # one size: no curve
    assert out["goals"]["spu_1000p_idle_cpu_pct"] is None
    assert out["goals"]["election_1000p_s"] is None
    assert out["goals"]["recovery_flat"] is None
    assert out["goals"]["no_connection_refused"] is False


def test_sizes_grow_from_quick_to_full() -> None:
    quick, default, full = SIZES["quick"], SIZES["default"], SIZES["full"]
    assert max(quick.sc) <= max(default.sc) < max(full.sc)
    assert 1000 in full.spu and 1000 in full.sc and 1000 in default.sc


def test_rebase_frames_moves_every_base_offset_and_keeps_the_crc() -> None:
    frames = [
        with_base_offset(encode_small([b"a", b"b"], None, [1, 2]) or b"", 0),
        with_base_offset(encode_small([b"c"], None, [3]) or b"", 2),
    ]
    log = b"".join(frames)
    moved = rebase_frames(log, 1000)
    headers = [h for h, _ in iter_frames(moved, check_crc=True)]  # crc still valid
    assert [h.base_offset for h in headers] == [1000, 1002]
    assert [h.record_count for h in headers] == [2, 1]
    assert len(moved) == len(log)
