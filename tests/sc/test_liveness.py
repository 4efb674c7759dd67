"""The watchdog's rule: the SC's own stalls are not counted as SPU silence (pure)."""

from __future__ import annotations

import pytest

from sc.liveness import excuse, sweep_interval_s, sweep_overrun


@pytest.mark.parametrize(
    ("timeout_s", "interval_s"),
    [
        (6.0, 1.0),  # the default timeout: at most one second between sweeps
        (2.0, 0.5),
        (0.4, 0.1),
    ],
)
def test_sweep_interval_is_a_quarter_of_the_timeout_at_most_a_second(
    timeout_s: float, interval_s: float
) -> None:
    assert sweep_interval_s(timeout_s) == interval_s


@pytest.mark.parametrize(
    ("previous", "now", "interval_s", "tolerance_s", "overrun"),
    [
        (None, 50.0, 1.0, None, 0.0),  # the first sweep has nothing to compare with
        (10.0, 11.0, 1.0, None, 0.0),  # on time
        (10.0, 11.2, 1.0, None, 0.0),  # jitter within the default tolerance (0.25)
        (10.0, 11.5, 1.0, None, 0.5),  # late past the tolerance: all the lateness
        (10.0, 19.0, 1.0, None, 8.0),  # the loop blocked 8 s past the due sweep
        (10.0, 11.5, 1.0, 1.0, 0.0),  # a wider tolerance
        (10.0, 11.5, 1.0, 0.0, 0.5),
        (10.0, 10.3, 1.0, None, 0.0),  # early (a restarted watchdog): nothing
    ],
)
def test_sweep_overrun_is_the_lateness_past_the_interval(
    previous: float | None, now: float, interval_s: float, tolerance_s: float | None, overrun: float
) -> None:
    assert sweep_overrun(previous, now, interval_s, tolerance_s) == pytest.approx(overrun)


@pytest.mark.parametrize(
    ("last_seen", "overrun", "now", "excused"),
    [
        (10.0, 0.0, 20.0, 10.0),  # nothing to excuse
        (10.0, 8.0, 20.0, 18.0),  # the stall is not silence
        (15.0, 8.0, 20.0, 20.0),  # never past now (heard during the stall's tail)
        (19.5, 8.0, 20.0, 20.0),
    ],
)
def test_excuse_moves_the_last_sign_of_life_by_the_stall_never_past_now(
    last_seen: float, overrun: float, now: float, excused: float
) -> None:
    assert excuse(last_seen, overrun, now) == excused
