"""The pure figures of the tier benchmark (``bench.tier``): backlog and keep-up."""

from __future__ import annotations

import pytest

from bench.tier import backlog_max, keeps_up


@pytest.mark.parametrize(
    ("segments", "expected"),
    [
        ([], 0),
        ([(0.0, 1.0, 10)], 10),
        # committed before the next seals: never more than one segment behind
        ([(0.0, 0.5, 10), (1.0, 1.5, 10), (2.0, 2.5, 10)], 10),
        # a commit at the instant of the next seal counts first
        ([(0.0, 1.0, 10), (1.0, 2.0, 10)], 10),
        # falling behind: each waits longer, the backlog grows
        ([(0.0, 1.5, 10), (1.0, 3.0, 10), (2.0, 4.5, 10)], 20),
        ([(0.0, 9.0, 10), (1.0, 9.0, 20), (2.0, 9.0, 30)], 60),
    ],
)
def test_backlog_max(segments: list[tuple[float, float, int]], expected: int) -> None:
    assert backlog_max(segments) == expected


@pytest.mark.parametrize(
    ("produce_mbps", "latencies", "expected"),
    [
        (120.0, [1.0, 1.2, 2.9], True),
        (100.0, [3.0], True),
        (120.0, [1.0, 3.1], False),  # one segment waited too long
        (99.9, [0.5], False),  # the produce never reached the goal: no evidence
        (150.0, [], False),  # nothing sealed: no evidence
    ],
)
def test_keeps_up(produce_mbps: float, latencies: list[float], expected: bool) -> None:
    assert keeps_up(produce_mbps, latencies, 100.0, 3.0) is expected
