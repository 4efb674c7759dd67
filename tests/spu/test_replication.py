"""Replication math: tables for HW, catch-up tracking, the in-sync set and acks=all."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_stream.errors import InvalidRequestError, NotEnoughReplicasError
from spu.replication import (
    FollowerProgress,
    LagPolicy,
    after_shrink_accepted,
    can_ack_all,
    check_ack_all,
    high_watermark,
    in_sync_change,
    is_committed,
    is_lagging,
    lag_deadline,
    new_follower,
    next_in_sync_set,
    record_follower_report,
)

POLICY = LagPolicy(max_lag_ms=1_000)


def _fp(leo: int, caught: int | None, report: int = 0, leader_at: int = 0) -> FollowerProgress:
    return FollowerProgress(leo, caught, report, leader_at)


# --- high watermark ---------------------------------------------------------------------

HW_ROWS = [
    # (case, leader_leo, in-sync follower LEOs, previous, min_in_sync_replicas, expected)
    ("leader alone: HW = leader LEO", 10, [], 0, 1, 10),
    ("min over in-sync followers", 10, [7, 9], 0, 1, 7),
    ("followers caught up: HW = leader LEO", 10, [10, 10], 4, 1, 10),
    ("never backwards", 10, [3], 5, 1, 5),
    ("empty log", 0, [0], 0, 1, 0),
    ("leader alone below min in sync: frozen", 10, [], 4, 2, 4),
    ("one follower short of min in sync: frozen", 10, [10], 4, 3, 4),
    ("exactly min in sync: advances", 10, [8], 4, 2, 8),
]


@pytest.mark.parametrize(
    ("leader_leo", "leos", "previous", "min_isr", "expected"),
    [row[1:] for row in HW_ROWS],
    ids=[row[0] for row in HW_ROWS],
)
def test_high_watermark(
    leader_leo: int, leos: list[int], previous: int, min_isr: int, expected: int
) -> None:
    assert high_watermark(leader_leo, leos, previous, min_isr) == expected


def test_high_watermark_past_leo_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="past the LEO"):
        high_watermark(5, [5], 6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.lists(st.integers(0, 50), max_size=4))))
def test_high_watermark_is_monotonic(steps: list[tuple[int, list[int]]]) -> None:
    hw, leo = 0, 0
    for grow, follower_leos in steps:
        leo += grow
        new = high_watermark(leo, [min(f, leo) for f in follower_leos], hw)
        assert hw <= new <= leo
        hw = new


# --- catch-up tracking ------------------------------------------------------------------

REPORT_ROWS = [
    # (case, progress before, follower LEO, leader LEO, now, expected last_caught_up_ms)
    ("first report, caught up", None, 10, 10, 100, 100),
    ("first report, behind", None, 4, 10, 100, None),
    ("reached leader LEO of the previous report: caught up as of then",
     _fp(8, 50, report=90, leader_at=10), 10, 14, 100, 90),
    ("behind the previous leader LEO: keeps the old catch-up time",
     _fp(3, 50, report=90, leader_at=10), 6, 14, 100, 50),
    ("equal to leader LEO now", _fp(3, 50, report=90, leader_at=10), 14, 14, 100, 100),
    ("never caught up stays never", _fp(1, None, report=90, leader_at=10), 2, 14, 100, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "follower_leo", "leader_leo", "now", "expected"),
    [row[1:] for row in REPORT_ROWS],
    ids=[row[0] for row in REPORT_ROWS],
)
def test_record_follower_report(
    before: FollowerProgress | None,
    follower_leo: int,
    leader_leo: int,
    now: int,
    expected: int | None,
) -> None:
    got = record_follower_report(before, follower_leo, leader_leo, now)
    assert got == FollowerProgress(follower_leo, expected, now, leader_leo)


def test_follower_past_leader_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="past the leader"):
        record_follower_report(None, 11, 10, 0)


def test_steady_follower_stays_in_sync_under_continuous_produce() -> None:
    # Each report the follower reaches where the leader was at the previous report,
    # while the leader has moved on again: it never equals the live LEO, yet it is in sync.
    progress = new_follower(0, 0, 0, in_sync=True)
    leader_leo = 0
    for now in range(500, 10_000, 500):
        follower_leo, leader_leo = leader_leo, leader_leo + 100
        progress = record_follower_report(progress, follower_leo, leader_leo, now)
        assert not is_lagging(progress, leader_leo, now, POLICY)


@pytest.mark.parametrize(
    ("leo", "leader_leo", "in_sync", "expected_caught"),
    [(5, 10, True, 7), (5, 10, False, None), (10, 10, False, 7)],
)
def test_new_follower(
    leo: int, leader_leo: int, in_sync: bool, expected_caught: int | None
) -> None:
    got = new_follower(leo, leader_leo, 7, in_sync=in_sync)
    assert got == FollowerProgress(leo, expected_caught, 7, leader_leo)


# --- lag and the in-sync set ------------------------------------------------------------

LAG_ROWS = [
    # (case, progress, leader_leo, now, policy, lagging)
    ("never reported", None, 10, 0, POLICY, True),
    ("never caught up", _fp(5, None), 10, 0, POLICY, True),
    ("caught up within max_lag_ms", _fp(5, 500), 10, 1_500, POLICY, False),
    ("not caught up for longer than max_lag_ms", _fp(5, 500), 10, 1_501, POLICY, True),
    ("too many records behind", _fp(5, 1_000), 100, 1_000,
     LagPolicy(max_lag_ms=1_000, max_lag_records=50), True),
    ("within the record bound", _fp(60, 1_000), 100, 1_000,
     LagPolicy(max_lag_ms=1_000, max_lag_records=50), False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("progress", "leader_leo", "now", "policy", "lagging"),
    [row[1:] for row in LAG_ROWS],
    ids=[row[0] for row in LAG_ROWS],
)
def test_is_lagging(
    progress: FollowerProgress | None, leader_leo: int, now: int, policy: LagPolicy, lagging: bool
) -> None:
    assert is_lagging(progress, leader_leo, now, policy) is lagging


ISR_ROWS = [
    # (case, current ISR, followers' progress, hw, now, expected ISR); leader 1, LEO 100
    ("all followers fresh stay in", {1, 2, 3}, {2: _fp(100, 900), 3: _fp(90, 900)}, 90, 1_000,
     {1, 2, 3}),
    ("a lagging member is evicted", {1, 2, 3}, {2: _fp(100, 900), 3: _fp(40, 10)}, 90, 1_100,
     {1, 2}),
    ("a follower that caught up and reached HW is re-admitted", {1, 2},
     {2: _fp(100, 900), 3: _fp(95, 950)}, 90, 1_000, {1, 2, 3}),
    ("a fresh follower below HW is not re-admitted yet", {1, 2},
     {2: _fp(100, 900), 3: _fp(80, 950)}, 90, 1_000, {1, 2}),
    ("a follower that never reported is out", {1, 2, 3}, {2: _fp(100, 900), 3: None}, 90, 1_000,
     {1, 2}),
    ("members no longer followers are dropped", {1, 2, 9}, {2: _fp(100, 900)}, 90, 1_000, {1, 2}),
    ("the leader is always in, even alone", set(), {}, 100, 1_000, {1}),
    ("a fresh member whose LEO fell below HW (a repair cut its log) is evicted", {1, 2, 3},
     {2: _fp(100, 900), 3: _fp(40, 990)}, 90, 1_000, {1, 2}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("current", "followers", "hw", "now", "expected"),
    [row[1:] for row in ISR_ROWS],
    ids=[row[0] for row in ISR_ROWS],
)
def test_next_in_sync_set(
    current: set[int],
    followers: dict[int, FollowerProgress | None],
    hw: int,
    now: int,
    expected: set[int],
) -> None:
    assert next_in_sync_set(1, current, followers, 100, hw, now, POLICY) == expected


def test_eviction_then_readmission_keeps_hw_monotonic() -> None:
    leader_leo, hw, isr = 100, 100, frozenset({1, 2})
    slow = _fp(100, 0, report=0, leader_at=100)
    # The follower stalls while the leader grows: evicted after max_lag_ms, HW moves on.
    leader_leo = 200
    isr = next_in_sync_set(1, isr, {2: slow}, leader_leo, hw, 1_001, POLICY)
    assert isr == {1}
    hw = high_watermark(leader_leo, [], hw)
    assert hw == 200
    # It catches up to the leader's LEO: re-admitted, and HW does not drop.
    slow = record_follower_report(slow, 200, leader_leo, 1_200)
    isr = next_in_sync_set(1, isr, {2: slow}, leader_leo, hw, 1_200, POLICY)
    assert isr == {1, 2}
    assert high_watermark(leader_leo, [slow.leo], hw) == 200


# --- shrinks go through the SC ---------------------------------------------------------

CHANGE_ROWS = [
    # (case, current, wanted, sc_confirms, in_force, proposed)
    ("no change", {1, 2}, {1, 2}, True, {1, 2}, None),
    ("growth is local and at once", {1}, {1, 2}, True, {1, 2}, None),
    ("a shrink waits for the SC: the member stays, the smaller set is proposed",
     {1, 2, 3}, {1, 2}, True, {1, 2, 3}, {1, 2}),
    ("a leader cut off from everyone proposes itself alone, commits with all",
     {1, 2, 3}, {1}, True, {1, 2, 3}, {1}),
    ("growth and a shrink at once: growth now, shrink proposed",
     {1, 2}, {1, 3}, True, {1, 2, 3}, {1, 3}),
    ("without an SC the shrink is local", {1, 2, 3}, {1, 2}, False, {1, 2}, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("current", "wanted", "sc_confirms", "in_force", "proposed"),
    [row[1:] for row in CHANGE_ROWS],
    ids=[row[0] for row in CHANGE_ROWS],
)
def test_in_sync_change(
    current: set[int],
    wanted: set[int],
    sc_confirms: bool,
    in_force: set[int],
    proposed: set[int] | None,
) -> None:
    change = in_sync_change(current, wanted, sc_confirms=sc_confirms)
    assert change.in_force == in_force
    assert change.proposed == (None if proposed is None else frozenset(proposed))


ACCEPT_ROWS = [
    # (case, current, accepted, wanted, result)
    ("the accepted shrink applies", {1, 2, 3}, {1, 2}, {1, 2}, {1, 2}),
    ("down to the leader alone", {1, 2, 3}, {1}, {1}, {1}),
    ("a member that caught up again since the report stays", {1, 2, 3}, {1, 2}, {1, 2, 3},
     {1, 2, 3}),
    ("a report without a shrink changes nothing", {1, 2}, {1, 2}, {1}, {1, 2}),
    ("the leader always stays", {1, 2}, {2}, set(), {1, 2}),
    ("the SC's answer never adds a member", {1}, {1, 2, 3}, {1}, {1}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("current", "accepted", "wanted", "result"),
    [row[1:] for row in ACCEPT_ROWS],
    ids=[row[0] for row in ACCEPT_ROWS],
)
def test_after_shrink_accepted(
    current: set[int], accepted: set[int], wanted: set[int], result: set[int]
) -> None:
    assert after_shrink_accepted(current, accepted, wanted, 1) == result


# --- acks=all ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("isr", "min_isr", "ok"),
    [({1}, 1, True), ({1}, 2, False), ({1, 2}, 2, True), ({1, 2, 3}, 2, True), (set(), 1, False)],
)
def test_ack_all(isr: set[int], min_isr: int, ok: bool) -> None:
    assert can_ack_all(len(isr), min_isr) is ok
    if ok:
        check_ack_all(isr, min_isr)
    else:
        with pytest.raises(NotEnoughReplicasError) as info:
            check_ack_all(isr, min_isr)
        assert info.value.retriable


@pytest.mark.parametrize(("end", "hw", "committed"), [(5, 5, True), (6, 5, False), (0, 0, True)])
def test_is_committed(end: int, hw: int, committed: bool) -> None:
    assert is_committed(end, hw) is committed


@pytest.mark.parametrize("kwargs", [{"max_lag_ms": -1}, {"max_lag_records": -5}])
def test_lag_policy_rejects_negative_bounds(kwargs: dict[str, int]) -> None:
    with pytest.raises(InvalidRequestError):
        LagPolicy(**kwargs)


# --- when the in-sync set can next change by time alone ----------------------------------

INF = float("inf")
DEADLINE_ROWS = [
    # (case, members, follower progress, expected last quiet ms)
    ("leader alone", {1}, {}, INF),
    ("earliest catch-up of a member + max lag", {1, 2, 3}, {2: _fp(5, 100), 3: _fp(5, 40)}, 1040),
    ("followers outside the set do not count", {1, 2}, {2: _fp(5, 100), 3: _fp(0, 10)}, 1100),
    ("a member without progress is held by other rules", {1, 2}, {2: None}, INF),
    ("a member that never caught up: no quiet time", {1, 2}, {2: _fp(0, None)}, -INF),
]


@pytest.mark.parametrize(
    ("members", "followers", "expected"),
    [row[1:] for row in DEADLINE_ROWS],
    ids=[row[0] for row in DEADLINE_ROWS],
)
def test_lag_deadline(
    members: set[int], followers: dict[int, FollowerProgress | None], expected: float
) -> None:
    deadline = lag_deadline(1, members, followers, POLICY)
    assert deadline == expected
    for spu in members - {1}:  # nobody lags at the deadline, somebody just after it
        progress = followers.get(spu)
        if progress is not None and deadline > -INF:
            assert not is_lagging(progress, progress.leo, int(min(deadline, 10**9)), POLICY)
    if -INF < deadline < INF:
        assert any(
            is_lagging(p, p.leo, int(deadline) + 1, POLICY)
            for spu, p in followers.items()
            if spu in members and p is not None
        )
