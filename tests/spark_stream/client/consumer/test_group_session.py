"""``SessionClock``: when a member must confirm its session before handing out records."""

from __future__ import annotations

import pytest

from spark_stream.client.consumer._group_session import SessionClock


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
