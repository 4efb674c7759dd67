"""``bench.cluster``'s pure helpers: which round a bulk figure is taken from, and the
payload check's share of a round."""

from __future__ import annotations

import pytest

from bench.cluster import CHECK_FRAME_ROWS, Round, _median_round, check_shares, paired_order


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


def test_check_shares_scale_one_frame_to_a_round_and_to_the_spus_cpu() -> None:
    shares = check_shares({"full": 250.0}, records=CHECK_FRAME_ROWS * 40, spu_cpu_s=0.5)
    assert shares == {"check_full_ms_per_round": 10.0, "check_full_share_of_spu_cpu": 0.02}


def test_paired_rounds_alternate_which_side_runs_first() -> None:
    assert paired_order(4) == [
        ("plain", "tls"),
        ("tls", "plain"),
        ("plain", "tls"),
        ("tls", "plain"),
    ]
    assert paired_order(0) == []
