"""The lease rules (``sc.lease``) on a fake clock: claims, renewals, the keeper's pace."""

from __future__ import annotations

import pytest

from sc.lease import LeaseClaim, LeaseConfig, LeaseRecord, Step, StepKind, claim, next_step, renew
from spark_stream.errors import InvalidConfigError

A, B = "a:1,a:2", "b:1,b:2"
TTL = 5.0

CLAIMS = [
    # (record, last token, claimant, now) -> (answer, record after, last token after)
    pytest.param(
        None, 0, A, 0.0, LeaseClaim(True, 1, A), LeaseRecord(1, A, 5.0), 1, id="free: token 1"
    ),
    pytest.param(
        LeaseRecord(3, B, 10.0),
        3,
        A,
        9.9,
        LeaseClaim(False, 3, B),
        LeaseRecord(3, B, 10.0),
        3,
        id="held by another: refused, names it",
    ),
    pytest.param(
        LeaseRecord(3, B, 10.0),
        3,
        A,
        10.0,
        LeaseClaim(True, 4, A),
        LeaseRecord(4, A, 15.0),
        4,
        id="expired: taken with the next token",
    ),
    pytest.param(
        LeaseRecord(3, A, 10.0),
        3,
        A,
        1.0,
        LeaseClaim(True, 4, A),
        LeaseRecord(4, A, 6.0),
        4,
        id="held by the claimant itself (restarted): new token at once",
    ),
    pytest.param(
        None,
        7,
        B,
        2.0,
        LeaseClaim(True, 8, B),
        LeaseRecord(8, B, 7.0),
        8,
        id="released: tokens keep counting",
    ),
]


@pytest.mark.parametrize(("record", "last", "who", "now", "answer", "after", "last_after"), CLAIMS)
def test_claim(
    record: LeaseRecord | None,
    last: int,
    who: str,
    now: float,
    answer: LeaseClaim,
    after: LeaseRecord | None,
    last_after: int,
) -> None:
    assert claim(record, last, who, now, TTL) == (answer, after, last_after)


RENEWALS = [
    # (record, last token, token, holder, now) -> (answer, record after)
    pytest.param(
        LeaseRecord(2, A, 5.0),
        2,
        2,
        A,
        4.0,
        LeaseClaim(True, 2, A),
        LeaseRecord(2, A, 9.0),
        id="held: extended",
    ),
    pytest.param(
        LeaseRecord(2, A, 5.0),
        2,
        2,
        A,
        8.0,
        LeaseClaim(True, 2, A),
        LeaseRecord(2, A, 13.0),
        id="expired but nobody claimed: set again",
    ),
    pytest.param(
        None,
        2,
        2,
        A,
        8.0,
        LeaseClaim(True, 2, A),
        LeaseRecord(2, A, 13.0),
        id="record gone, token still the last: set again",
    ),
    pytest.param(
        LeaseRecord(3, B, 10.0),
        3,
        2,
        A,
        8.0,
        LeaseClaim(False, 3, B),
        LeaseRecord(3, B, 10.0),
        id="another holds it: lost, names it",
    ),
    pytest.param(
        None,
        3,
        2,
        A,
        8.0,
        LeaseClaim(False, 3, ""),
        None,
        id="another held it meanwhile and released it: lost",
    ),
    pytest.param(
        None,
        0,
        2,
        A,
        8.0,
        LeaseClaim(False, 0, ""),
        None,
        id="the store lost its data (last token below ours): lost, token 0",
    ),
    pytest.param(
        LeaseRecord(3, B, 10.0),
        3,
        3,
        A,
        8.0,
        LeaseClaim(False, 3, B),
        LeaseRecord(3, B, 10.0),
        id="right token, wrong holder: lost",
    ),
]


@pytest.mark.parametrize(("record", "last", "token", "who", "now", "answer", "after"), RENEWALS)
def test_renew(
    record: LeaseRecord | None,
    last: int,
    token: int,
    who: str,
    now: float,
    answer: LeaseClaim,
    after: LeaseRecord | None,
) -> None:
    assert renew(record, last, token, who, now, TTL) == (answer, after)


def test_a_paused_holder_is_replaced_and_cannot_renew() -> None:
    """SC A pauses past its TTL on a fake clock; B takes over; A's renewal is refused."""
    record, last = None, 0
    answer, record, last = claim(record, last, A, 0.0, TTL)
    token_a = answer.token
    for now in (1.0, 2.0, 3.0):  # B polls while A renews in time
        answer, record, last = claim(record, last, B, now, TTL)
        assert not answer.granted
        answer, record = renew(record, last, token_a, A, now, TTL)
        assert answer.granted
    answer, record, last = claim(record, last, B, 7.9, TTL)  # A paused at 3.0
    assert not answer.granted
    answer, record, last = claim(record, last, B, 8.0, TTL)
    assert answer.granted and answer.token == token_a + 1 == last
    woke, record = renew(record, last, token_a, A, 8.5, TTL)
    assert not woke.granted and woke.holder == B


PACE = [
    # (active, last attempt, now) -> step
    pytest.param(False, None, 0.0, Step(StepKind.CLAIM), id="standby, never tried: claim"),
    pytest.param(False, 1.0, 1.2, Step(StepKind.WAIT, 0.3), id="standby polls every 0.5 s"),
    pytest.param(False, 1.0, 1.5, Step(StepKind.CLAIM), id="standby, poll due"),
    pytest.param(True, 3.0, 4.0, Step(StepKind.WAIT, 1.0), id="active renews every ttl/3"),
    pytest.param(True, 3.0, 5.0, Step(StepKind.RENEW), id="active, renewal due"),
    pytest.param(True, None, 0.0, Step(StepKind.RENEW), id="active, never renewed"),
]


@pytest.mark.parametrize(("active", "last", "now", "step"), PACE)
def test_next_step(active: bool, last: float | None, now: float, step: Step) -> None:
    got = next_step(active, last, now, LeaseConfig(ttl_s=6.0, poll_s=0.5))
    assert got.kind is step.kind and got.delay == pytest.approx(step.delay)


@pytest.mark.parametrize(
    "kwargs",
    [{"ttl_s": 0}, {"poll_s": 0}, {"ttl_s": 3, "renew_s": 3}, {"ttl_s": 3, "renew_s": -1}],
)
def test_bad_config_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidConfigError):
        LeaseConfig(**kwargs)
