"""``SessionClock``: when a member must confirm its session before handing out records;
``heartbeat_pause``: when it beats next."""

from __future__ import annotations

import pytest

from spark_stream.client.consumer._group_session import SessionClock, heartbeat_pause


@pytest.mark.parametrize(
    ("confirmed", "now", "expired"),
    [
        (100.0, 100.0, False),  # just confirmed
        (100.0, 102.4, False),  # inside session - margin
        (100.0, 102.5, True),  # at session - margin: confirm first
        (100.0, 160.0, True),  # stopped for a minute
    ],
)
def test_may_have_expired(confirmed: float, now: float, expired: bool) -> None:
    clock = SessionClock(session_s=3.0, margin_s=0.5, confirmed_at=confirmed)
    assert clock.may_have_expired(now) is expired


def test_confirm_keeps_the_latest_send_time() -> None:
    clock = SessionClock(session_s=3.0, margin_s=0.5, confirmed_at=0.0)
    assert clock.may_have_expired(10.0)
    clock.confirm(9.0)
    clock.confirm(8.0)  # an older request answered late moves nothing back
    assert clock.confirmed_at == 9.0
    assert not clock.may_have_expired(10.0)


@pytest.mark.parametrize(
    ("u", "pause"),
    [(0.0, 1.0), (0.5, 0.95), (0.999999, 0.9000001)],
)
def test_a_heartbeat_pause_is_shortened_by_at_most_a_tenth(u: float, pause: float) -> None:
    assert heartbeat_pause(1.0, u) == pytest.approx(pause)


def test_members_beating_in_step_drift_apart() -> None:
    """Ten members a stall left in step are spread over most of a tenth of the interval
    after a few beats (fixed draws stand for the random ones)."""
    draws = [i / 10 for i in range(10)]
    times = [0.0] * 10
    for _ in range(3):
        times = [t + heartbeat_pause(1.0, u) for t, u in zip(times, draws, strict=True)]
    assert max(times) - min(times) == pytest.approx(0.27)
