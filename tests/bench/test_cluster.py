"""``bench.cluster``'s pure helpers: which round a bulk figure is taken from."""

from __future__ import annotations

import pytest

from bench.cluster import Round, _median_round


@pytest.mark.parametrize(
    ("seconds", "median"),
    [
        ([0.4], 0.4),
        ([0.9, 0.3, 0.5], 0.5),
        ([0.6, 0.2, 0.4, 0.8], 0.4),  # an even count: the faster of the middle two
        ([0.5, 0.5, 0.1, 2.0, 0.45], 0.5),
    ],
)
def test_the_median_round_by_wall_time(seconds: list[float], median: float) -> None:
    rounds = [Round(s, spu_user=s / 10, spu_system=0.0) for s in seconds]
    picked = _median_round(rounds)
    assert picked.seconds == median
    assert picked.spu_user == median / 10  # the whole round, not a mix of rounds
